package render

import (
	"bytes"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// Change is one difference between two deployed-packages revisions.
type Change struct {
	Deployment string `json:"deployment"`
	// Op is "+" (deployed), "-" (undeployed) or "~" (revision changed).
	Op   string `json:"op"`
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

func (c Change) String() string {
	switch c.Op {
	case "+":
		return "+" + c.Deployment + " " + c.To
	case "-":
		return "-" + c.Deployment
	default:
		return "~" + c.Deployment + " " + c.From + "→" + c.To
	}
}

// Diff lists what changes from the pins old to new, sorted by deployment.
func Diff(old, new []v1alpha1.PublishedPin) []Change {
	before := map[string]string{}
	for _, p := range old {
		before[p.Deployment] = p.Tag
	}
	var out []Change
	for _, p := range new {
		from, ok := before[p.Deployment]
		switch {
		case !ok:
			out = append(out, Change{Deployment: p.Deployment, Op: "+", To: p.Tag})
		case from != p.Tag:
			out = append(out, Change{Deployment: p.Deployment, Op: "~", From: from, To: p.Tag})
		}
		delete(before, p.Deployment)
	}
	for name, tag := range before {
		out = append(out, Change{Deployment: name, Op: "-", From: tag})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Deployment < out[j].Deployment })
	return out
}

// Summary is a one-line description of changes, e.g. "+upf free5gc-upf/v6, -smf".
func Summary(changes []Change) string {
	if len(changes) == 0 {
		return "no change"
	}
	parts := make([]string, len(changes))
	for i, c := range changes {
		parts[i] = c.String()
	}
	return strings.Join(parts, ", ")
}

// ParsePins reads back the pins of a rendered deployed-packages package from the deployment label
// (annotation, for a long name) and the pinned-tag annotation of its objects, whatever the
// engine. Other files are skipped.
func ParsePins(files map[string][]byte) []v1alpha1.PublishedPin {
	seen := map[string]string{}
	for _, b := range files {
		for _, doc := range bytes.Split(b, []byte("\n---\n")) {
			var obj struct {
				Metadata struct {
					Labels      map[string]string `json:"labels"`
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal(doc, &obj); err != nil {
				continue
			}
			name, tag := obj.Metadata.Labels[v1alpha1.LabelDeployment], obj.Metadata.Annotations[AnnotationPinnedTag]
			if long := obj.Metadata.Annotations[AnnotationDeployment]; long != "" {
				name = long
			}
			if name != "" && tag != "" {
				seen[name] = tag
			}
		}
	}
	pins := make([]v1alpha1.PublishedPin, 0, len(seen))
	for name, tag := range seen {
		pins = append(pins, v1alpha1.PublishedPin{Deployment: name, Tag: tag})
	}
	sort.Slice(pins, func(i, j int) bool { return pins[i].Deployment < pins[j].Deployment })
	return pins
}
