package packageset

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestParseKinds(t *testing.T) {
	got, err := ParseKinds([]string{"WorkloadCluster.infra.nephio.org", " ConfigMap", "WorkloadCluster.infra.nephio.org"})
	if err != nil {
		t.Fatal(err)
	}
	want := []schema.GroupKind{{Group: "infra.nephio.org", Kind: "WorkloadCluster"}, {Kind: "ConfigMap"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseKinds (-want +got):\n%s", diff)
	}
	for entry, wantErr := range map[string]string{
		"":                                  "want Kind.group",
		".infra.nephio.org":                 "want Kind.group",
		"workloadclusters.infra.nephio.org": "write the kind as objects do",
		"WorkloadCluster.v1alpha1.infra.nephio.org": "leave the version out",
		"Deployment.v1.apps":                        "leave the version out",
	} {
		if _, err := ParseKinds([]string{entry}); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("ParseKinds(%q) = %v, want an error containing %q", entry, err, wantErr)
		}
	}
}

func TestCheckKinds(t *testing.T) {
	wc := schema.GroupVersionKind{Group: "infra.nephio.org", Version: "v1alpha1", Kind: "WorkloadCluster"}
	machine := schema.GroupVersionKind{Group: "infra.example.com", Version: "v1", Kind: "Machine"}
	r := &Reconciler{ObjectKinds: []schema.GroupKind{wc.GroupKind()}}
	if err := r.checkKinds([]schema.GroupVersionKind{wc, {Group: wc.Group, Version: "v1beta1", Kind: wc.Kind}}); err != nil {
		t.Errorf("allowed kind at two versions: %v", err)
	}
	err := r.checkKinds([]schema.GroupVersionKind{wc, machine})
	if !isKindNotAllowed(err) || !strings.Contains(err.Error(), "reads Machine.infra.example.com") ||
		!strings.Contains(err.Error(), "--objects-generator-kinds") || !strings.Contains(err.Error(), "allowed now: WorkloadCluster.infra.nephio.org") {
		t.Errorf("checkKinds = %v, want KindNotAllowed naming Machine.infra.example.com, the flag and the allowed kinds", err)
	}
	// A kind of another group with the same name is another kind.
	if err := r.checkKinds([]schema.GroupVersionKind{{Group: "cluster.x-k8s.io", Version: "v1beta1", Kind: "WorkloadCluster"}}); !isKindNotAllowed(err) {
		t.Errorf("same Kind, other group: %v, want refused", err)
	}
	if err := (&Reconciler{}).checkKinds([]schema.GroupVersionKind{wc}); err == nil || !strings.Contains(err.Error(), "allowed now: none") {
		t.Errorf("empty allowlist: %v, want refused with none allowed", err)
	}
}
