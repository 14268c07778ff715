package fleetstatus

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite testdata/status.txt")

func cond(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason}
}

func TestPrint(t *testing.T) {
	dep := func(name, cluster, rev string, resolved, published int, conds ...metav1.Condition) v1alpha1.PackageDeployment {
		pd := v1alpha1.PackageDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "fleet"},
			Spec:       v1alpha1.PackageDeploymentSpec{Cluster: v1alpha1.LocalObjectReference{Name: cluster}, Package: v1alpha1.PackageReference{Name: "free5gc-upf", Revision: rev}},
			Status:     v1alpha1.PackageDeploymentStatus{Conditions: conds, DeployedPackagesRevision: published},
		}
		if resolved > 0 {
			pd.Status.Resolved = &v1alpha1.ResolvedRevision{Revision: resolved}
		}
		return pd
	}
	s := Snapshot{
		Clusters: []v1alpha1.WorkloadCluster{
			{ObjectMeta: metav1.ObjectMeta{Name: "edge01", Namespace: "fleet"}},
			{ObjectMeta: metav1.ObjectMeta{Name: "edge02", Namespace: "fleet"}},
			{ObjectMeta: metav1.ObjectMeta{Name: "core01", Namespace: "fleet"}, Status: v1alpha1.WorkloadClusterStatus{Proposal: &v1alpha1.ProposalStatus{Revision: 4}}},
		},
		Deployments: []v1alpha1.PackageDeployment{
			dep("upf-edge02", "edge02", "v6", 6, 3, cond("Synced", "False", "Syncing"), cond("Ready", "True", "Published"), cond("Published", "True", "Published")),
			dep("upf-edge01", "edge01", "v6", 6, 7, cond("Synced", "True", "Synced"), cond("Ready", "True", "Published"), cond("Published", "True", "Published")),
			dep("upf-core01", "core01", "v7", 7, 3, cond("Ready", "False", "WaitingForApproval"), cond("Published", "False", "WaitingForApproval")),
		},
		Sets: []v1alpha1.PackageSet{{
			ObjectMeta: metav1.ObjectMeta{Name: "upf", Namespace: "fleet"},
			Spec: v1alpha1.PackageSetSpec{Package: v1alpha1.PackageReference{Name: "free5gc-upf", Revision: "v6"},
				Strategy: v1alpha1.RolloutStrategy{Type: v1alpha1.StrategyRollingUpdate, RollingUpdate: &v1alpha1.RollingUpdate{Steps: make([]v1alpha1.RolloutStep, 2)}}},
			Status: v1alpha1.PackageSetStatus{Targets: 3, Updated: 2, Ready: 1,
				Rollout:    &v1alpha1.RolloutStatus{Revision: "free5gc-upf/v6", Step: 0, Paused: true},
				Conditions: []metav1.Condition{cond("Ready", "False", "RolloutPaused")}},
		}},
	}
	// A chain upf-telco → upf-telco-prod, whose output edge01's deployment runs.
	s.Variants = []v1alpha1.PackageVariant{
		{ObjectMeta: metav1.ObjectMeta{Name: "upf-telco-prod", Namespace: "fleet"}, Status: v1alpha1.PackageVariantStatus{
			Downstream: &v1alpha1.ResolvedRevision{Repository: "blueprints", Tag: "upf-telco-prod/v2"},
			Lineage:    []v1alpha1.LineageEntry{{Tag: "free5gc-upf/v7"}, {Variant: "upf-telco", Tag: "upf-telco/v4"}},
			Conditions: []metav1.Condition{cond("Ready", "True", "Published")}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "upf-telco", Namespace: "fleet"}, Status: v1alpha1.PackageVariantStatus{
			Downstream: &v1alpha1.ResolvedRevision{Repository: "blueprints", Tag: "upf-telco/v4"},
			Lineage:    []v1alpha1.LineageEntry{{Tag: "free5gc-upf/v7"}},
			Conditions: []metav1.Condition{cond("Ready", "False", "MergeConflict"), cond("Stalled", "True", "MergeConflict")}}},
	}
	s.Deployments[1].Status.Resolved = &v1alpha1.ResolvedRevision{Repository: "blueprints", Revision: 2, Tag: "upf-telco-prod/v2"}
	var b bytes.Buffer
	if err := Print(&b, Build(s)); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("testdata/status.txt", b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("testdata/status.txt")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("status table (-want +got):\n%s", diff)
	}
}

// -o yaml|json prints the fleet as a v1 List of typed objects, as kubectl get does.
func TestList(t *testing.T) {
	s := Snapshot{
		Clusters:    []v1alpha1.WorkloadCluster{{ObjectMeta: metav1.ObjectMeta{Name: "edge01", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}}}}},
		Deployments: []v1alpha1.PackageDeployment{{ObjectMeta: metav1.ObjectMeta{Name: "edge01-upf"}}},
		Sets:        []v1alpha1.PackageSet{{ObjectMeta: metav1.ObjectMeta{Name: "upf"}}},
	}
	list, err := List(s)
	if err != nil {
		t.Fatal(err)
	}
	items := list["items"].([]any)
	var got []string
	for _, it := range items {
		u := it.(map[string]any)
		md := u["metadata"].(map[string]any)
		if _, ok := md["managedFields"]; ok {
			t.Errorf("%v keeps managedFields", md["name"])
		}
		got = append(got, u["apiVersion"].(string)+" "+u["kind"].(string)+" "+md["name"].(string))
	}
	want := []string{"flotilla.dev/v1alpha1 WorkloadCluster edge01", "flotilla.dev/v1alpha1 PackageDeployment edge01-upf", "flotilla.dev/v1alpha1 PackageSet upf"}
	if diff := cmp.Diff(want, got); diff != "" || list["kind"] != "List" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
}
