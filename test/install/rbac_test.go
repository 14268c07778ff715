package install

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestRBACIsDocumented: the tables under "## RBAC" in docs/install.md list exactly the rules of
// config/default's ClusterRole and leader election Role, verb for verb, so the documentation of
// why each rule exists cannot fall behind the markers.
func TestRBACIsDocumented(t *testing.T) {
	objs := kustomize(t, "config/default")
	want := map[string][]string{
		"ClusterRole flotilla-manager":  grants(t, find(t, objs, "ClusterRole", "flotilla-manager")),
		"Role flotilla-leader-election": grants(t, find(t, objs, "Role", "flotilla-leader-election")),
	}
	doc, err := os.ReadFile(filepath.Join(root(), "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, documentedGrants(t, string(doc))); diff != "" {
		t.Errorf("docs/install.md#rbac and config/rbac disagree (-config/rbac +docs):\n%s", diff)
	}
}

// grants lists a role's rules as sorted "group resource verb" lines.
func grants(t *testing.T, role *unstructured.Unstructured) []string {
	t.Helper()
	rules, _, err := unstructured.NestedSlice(role.Object, "rules")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rules {
		r := r.(map[string]any)
		for _, g := range r["apiGroups"].([]any) {
			for _, res := range r["resources"].([]any) {
				for _, v := range r["verbs"].([]any) {
					out = append(out, g.(string)+" "+res.(string)+" "+v.(string))
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

var (
	// A table's role: the paragraph before it starts with "ClusterRole `name`" or "Role `name`".
	roleLine = regexp.MustCompile("^((?:Cluster)?Role) `([a-z-]+)`")
	quoted   = regexp.MustCompile("`([^`]*)`")
)

// documentedGrants reads the "| API group | resources | verbs | why |" tables of the RBAC section
// of install.md, each under the role its paragraph names, as grants does.
func documentedGrants(t *testing.T, doc string) map[string][]string {
	t.Helper()
	_, section, ok := strings.Cut(doc, "\n## RBAC\n")
	if !ok {
		t.Fatal("docs/install.md has no ## RBAC section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	out := map[string][]string{}
	role := ""
	for _, line := range strings.Split(section, "\n") {
		if m := roleLine.FindStringSubmatch(line); m != nil {
			role = m[1] + " " + m[2]
			continue
		}
		cells := strings.Split(line, "|")
		if !strings.HasPrefix(line, "| ") || len(cells) != 6 || strings.HasPrefix(line, "| API group") {
			continue
		}
		if role == "" {
			t.Fatalf("an RBAC table row before any paragraph naming its role: %s", line)
		}
		group := quoted.FindStringSubmatch(cells[1])
		if group == nil {
			t.Fatalf("no `group` in the row %s", line)
		}
		g := strings.Trim(group[1], `"`)
		for _, res := range quoted.FindAllStringSubmatch(cells[2], -1) {
			for _, v := range quoted.FindAllStringSubmatch(cells[3], -1) {
				out[role] = append(out[role], g+" "+res[1]+" "+v[1])
			}
		}
	}
	for r := range out {
		slices.Sort(out[r])
		out[r] = slices.Compact(out[r])
	}
	return out
}
