package setplan

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/generate"
)

// variantDeployment is a deployment of a variant set at variant revision rev, rendered from
// blueprint tag bp, healthy there.
func variantDeployment(name, cluster, rev, bp string, number int) v1alpha1.PackageDeployment {
	return v1alpha1.PackageDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1, Annotations: map[string]string{
			AnnotationBlueprint: bp, AnnotationValues: `{"x":["1","inline"]}`, AnnotationPinnedAt: "2026-01-01T00:00:00Z"}},
		Spec: v1alpha1.PackageDeploymentSpec{Cluster: v1alpha1.LocalObjectReference{Name: cluster}, Package: v1alpha1.PackageReference{Name: "upf", Revision: rev}},
		Status: v1alpha1.PackageDeploymentStatus{ObservedGeneration: 1, Resolved: &v1alpha1.ResolvedRevision{Tag: "upf/" + rev, Revision: number},
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue}}},
	}
}

func variantInputs(strategy v1alpha1.RolloutStrategy) (generate.Inputs, generate.Result) {
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: "upf", Generation: 1}, Spec: v1alpha1.PackageSetSpec{
		Package:  v1alpha1.PackageReference{Repository: &v1alpha1.LocalObjectReference{Name: "catalog"}, Name: "blueprints/upf", Revision: "v2"},
		Variant:  &v1alpha1.VariantSpec{},
		Strategy: strategy,
	}}
	in := generate.Inputs{Set: set, Upstream: generate.Upstream{Tag: "blueprints/upf/v2", Number: 2},
		Clusters: []generate.Cluster{{Name: "a"}, {Name: "b"}, {Name: "c"}}}
	res := generate.Result{Targets: []generate.Target{{Name: "upf-a", Cluster: "a"}, {Name: "upf-b", Cluster: "b"}, {Name: "upf-c", Cluster: "c"}}}
	return in, res
}

// A set with a variant held by a dependency keeps its variant revision as it is (not rendered
// again from the new blueprint revision), and a held target without a deployment gets none.
func TestDecideKeepsHeldVariants(t *testing.T) {
	in, res := variantInputs(v1alpha1.RolloutStrategy{})
	owned := []v1alpha1.PackageDeployment{
		variantDeployment("upf-a", "a", "v1", "blueprints/upf/v1", 1),
		variantDeployment("upf-b", "b", "v3", "blueprints/upf/v2", 3),
	}
	wait := func(cluster string) string {
		if cluster == "b" {
			return "" // free
		}
		return "smf to be healthy"
	}
	waiting := map[string]string{}
	d := Decide(in, owned, res, time.Now(), wait, waiting)
	want := Revisions{
		"upf-a": {Name: "upf", Revision: "v1"}, // held: its variant revision as it is
		"upf-b": in.Set.Spec.Package,           // free: rendered from the blueprint revision asked for
	}
	if diff := cmp.Diff(want, d.Revisions); diff != "" {
		t.Errorf("revisions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"upf-a": "blueprints/upf/v1"}, d.Kept); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"upf-a": "smf to be healthy", "upf-c": "smf to be healthy"}, waiting); diff != "" {
		t.Errorf("waiting (-want +got):\n%s", diff)
	}
}

// A RollingUpdate of a set with a variant counts targets by the blueprint revision their variant
// was rendered from: the first step moves one target (rendered), a target already there is
// rendered again (its values follow), and the rest keep their variant revision.
func TestDecideRollsVariantsByBlueprint(t *testing.T) {
	one := intstr.FromInt32(1)
	in, res := variantInputs(v1alpha1.RolloutStrategy{Type: v1alpha1.StrategyRollingUpdate,
		RollingUpdate: &v1alpha1.RollingUpdate{Steps: []v1alpha1.RolloutStep{{MaxUnavailable: &one}}}})
	owned := []v1alpha1.PackageDeployment{
		variantDeployment("upf-a", "a", "v4", "blueprints/upf/v2", 4),
		variantDeployment("upf-b", "b", "v1", "blueprints/upf/v1", 1),
		variantDeployment("upf-c", "c", "v1", "blueprints/upf/v1", 1),
	}
	d := Decide(in, owned, res, time.Now(), nil, map[string]string{})
	bp := *in.Set.Spec.Package.DeepCopy()
	bp.Revision = "v2"
	want := Revisions{"upf-a": bp, "upf-b": bp, "upf-c": {Name: "upf", Revision: "v1"}}
	if diff := cmp.Diff(want, d.Revisions); diff != "" {
		t.Errorf("revisions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"upf-c": "blueprints/upf/v1"}, d.Kept); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	if d.Rollout == nil || d.Rollout.Revision != "blueprints/upf/v2" {
		t.Errorf("rollout = %+v, want one of blueprints/upf/v2", d.Rollout)
	}
}

// Moving a variant's deployment records the variant revision it leaves and the blueprint revision
// that one was rendered from, where a rollback returns it.
func TestLeavingRecordsTheBlueprint(t *testing.T) {
	pd := variantDeployment("upf-a", "a", "v3", "blueprints/upf/v1", 3)
	last, bp := leaving(&pd, "v4")
	if last != "v3" || bp != "blueprints/upf/v1" {
		t.Errorf("leaving = %q, %q; want v3, blueprints/upf/v1", last, bp)
	}
	pd.Status.Conditions[0].Status = metav1.ConditionFalse
	pd.Annotations[AnnotationLastHealthy], pd.Annotations[AnnotationLastHealthyBlueprint] = "v2", "blueprints/upf/v0"
	if last, bp := leaving(&pd, "v4"); last != "v2" || bp != "blueprints/upf/v0" {
		t.Errorf("leaving an unhealthy revision = %q, %q; want what was recorded", last, bp)
	}
}
