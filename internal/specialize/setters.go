package specialize

import (
	"fmt"
	"regexp"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// setterRef matches one ${name} reference in a setter comment.
var setterRef = regexp.MustCompile(`\$\{([^}]*)\}`)

// applySetters implements kpt's apply-setters: a field whose line comment is
// "# kpt-set: <pattern>" gets <pattern> with each ${name} replaced by its
// value. Setters carry the parameters in comments, so the blueprint stays
// valid KRM that every tool can read. Behaviour follows the catalog
// function:
//   - a field is touched only when at least one setter it names has a value;
//   - in a partial pattern such as nginx:${tag}, setters without a value keep
//     what the current field value says for them, else it is an error;
//   - a sequence field (comment on the key, or on a flow-style value) takes a
//     value that is itself a YAML sequence, e.g. "[prod, dev]"; "" empties it.
func applySetters(items []*yaml.RNode, values map[string]string) error {
	for _, item := range items {
		if err := walkSetters(item.YNode(), values); err != nil {
			return fmt.Errorf("%s: %s: %w", filePath(item), resourceID(item), err)
		}
	}
	return nil
}

// walkSetters visits value nodes only: keys carry array setter comments but
// are never rewritten themselves.
func walkSetters(n *yaml.Node, values map[string]string) error {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			if err := walkSetters(c, values); err != nil {
				return err
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i], n.Content[i+1]
			if val.Kind == yaml.SequenceNode {
				if err := setSequence(key, val, values); err != nil {
					return fmt.Errorf("field %s: %w", key.Value, err)
				}
			}
			if err := walkSetters(val, values); err != nil {
				return err
			}
		}
	case yaml.ScalarNode:
		return setScalar(n, values)
	}
	return nil
}

func setScalar(n *yaml.Node, values map[string]string) error {
	pattern := setterPattern(n.LineComment)
	if pattern == "" || !anyProvided(pattern, values) {
		return nil
	}
	current := currentSetterValues(pattern, n.Value)
	var missing []string
	result := setterRef.ReplaceAllStringFunc(pattern, func(ref string) string {
		name := setterRef.FindStringSubmatch(ref)[1]
		if v, ok := values[name]; ok {
			return v
		}
		if v, ok := current[name]; ok {
			return v
		}
		missing = append(missing, ref)
		return ref
	})
	if len(missing) > 0 {
		return fmt.Errorf("values for setters %v must be provided", missing)
	}
	n.Value = result
	// The value decides the type again (a replica count becomes an int, an
	// image a string); an empty result must be quoted to stay a string.
	n.Tag = ""
	if result == "" {
		n.Style = yaml.DoubleQuotedStyle
	}
	return nil
}

func setSequence(key, seq *yaml.Node, values map[string]string) error {
	comment := key.LineComment
	if seq.Style&yaml.FlowStyle != 0 {
		comment = seq.LineComment
	}
	pattern := setterPattern(comment)
	if pattern == "" || !anyProvided(pattern, values) {
		return nil
	}
	m := setterRef.FindStringSubmatch(pattern)
	if m == nil || m[0] != pattern {
		return fmt.Errorf("setter pattern %q on a sequence must be a single ${name}", pattern)
	}
	v := values[m[1]]
	if v == "" {
		// An empty sequence can only be written in flow style, and then the
		// comment belongs to the value.
		seq.Content, seq.Style = nil, yaml.FlowStyle
		seq.LineComment, key.LineComment = comment, ""
		return nil
	}
	parsed, err := yaml.Parse(v)
	if err != nil || parsed.YNode().Kind != yaml.SequenceNode {
		return fmt.Errorf("setter %s must be a YAML sequence such as [a, b], got %q", m[1], v)
	}
	seq.Content, seq.Style = parsed.YNode().Content, 0
	key.LineComment, seq.LineComment = comment, ""
	return nil
}

// setterPattern returns the pattern of a "# kpt-set: <pattern>" comment.
func setterPattern(comment string) string {
	c := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(comment), "#"))
	if !strings.HasPrefix(c, "kpt-set:") {
		return ""
	}
	return strings.TrimSpace(strings.TrimPrefix(c, "kpt-set:"))
}

func anyProvided(pattern string, values map[string]string) bool {
	for _, m := range setterRef.FindAllStringSubmatch(pattern, -1) {
		if _, ok := values[m[1]]; ok {
			return true
		}
	}
	return false
}

// currentSetterValues reads the setters of pattern back out of the current
// field value: pattern "${image}:${tag}" and value "nginx:1.16" give
// image=nginx, tag=1.16. It gives nothing when the value does not match.
func currentSetterValues(pattern, value string) map[string]string {
	refs := setterRef.FindAllStringSubmatchIndex(pattern, -1)
	var re strings.Builder
	re.WriteString("^")
	last := 0
	var names []string
	for _, r := range refs {
		re.WriteString(regexp.QuoteMeta(pattern[last:r[0]]))
		re.WriteString("(.*)")
		names = append(names, pattern[r[2]:r[3]])
		last = r[1]
	}
	re.WriteString(regexp.QuoteMeta(pattern[last:]) + "$")
	compiled, err := regexp.Compile(re.String())
	if err != nil {
		return nil
	}
	m := compiled.FindStringSubmatch(value)
	if m == nil {
		return nil
	}
	out := map[string]string{}
	for i, name := range names {
		if m[i+1] == "" {
			return nil
		}
		out[name] = m[i+1]
	}
	return out
}
