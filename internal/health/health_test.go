package health

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

const (
	newCommit = "c442fca83b41cb445c46d8022ecf8868147cf8b2"
	oldCommit = "4e7aad8b54b90ca0d6c22287c267349562616e48"
)

var pin = Pin{Tag: "free5gc-upf/v7", Commit: newCommit}

// parse reads YAML the way the API server's JSON reaches a client: integers as int64.
func parse(t *testing.T, y string) any {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(j, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// edit changes one field of a base object: path is dotted, value is YAML ("" removes the field).
type edit struct{ path, value string }

type evalCase struct {
	edits []edit
	pin   Pin
	want  Result
}

// check evaluates every case against its base object with the case's edits applied.
func check(t *testing.T, eval func(*unstructured.Unstructured, Pin) Result, base string, cases map[string]evalCase) {
	t.Helper()
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			obj := &unstructured.Unstructured{Object: parse(t, base).(map[string]any)}
			for _, e := range c.edits {
				path := strings.Split(e.path, ".")
				if e.value == "" {
					unstructured.RemoveNestedField(obj.Object, path...)
					continue
				}
				if err := unstructured.SetNestedField(obj.Object, parse(t, e.value), path...); err != nil {
					t.Fatal(err)
				}
			}
			p := pin
			if c.pin != (Pin{}) {
				p = c.pin
			}
			if diff := cmp.Diff(c.want, eval(obj, p)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestFor(t *testing.T) {
	for kind, want := range map[string]string{"RootSync": ReasonSyncing, "RepoSync": ReasonSyncing, "Kustomization": ReasonSyncing, "Application": ReasonSyncing, "HelmRelease": ReasonUnsupportedKind} {
		obj := &unstructured.Unstructured{Object: map[string]any{"kind": kind, "metadata": map[string]any{"name": "x"}}}
		if got := For(kind)(obj, pin); got.Reason != want {
			t.Errorf("For(%q) on an object without status: reason %q, want %q (%s)", kind, got.Reason, want, got.Message)
		}
	}
}

func TestMissing(t *testing.T) {
	want := Result{Reason: ReasonNotFound, Message: "RootSync upf-edge01 not found in the workload cluster: its agent has not applied the deployed-packages revision that declares it yet (see the cluster's Bootstrapped and Published conditions)"}
	if diff := cmp.Diff(want, Missing("RootSync", "upf-edge01")); diff != "" {
		t.Error(diff)
	}
	if got := ConfigSync(nil, pin); got.Reason != ReasonNotFound {
		t.Errorf("nil object: %+v", got)
	}
}

func TestClipKeepsUTF8(t *testing.T) {
	got := clip(strings.Repeat("a", maxMessage-1) + "ééé")
	if want := strings.Repeat("a", maxMessage-1) + "…"; got != want {
		t.Errorf("clip cut inside a character: %q", got[maxMessage-4:])
	}
}
