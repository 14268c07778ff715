package fleetstatus

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/render"
)

func TestBuildCluster(t *testing.T) {
	wc := v1alpha1.WorkloadCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "core01", Namespace: "fleet", Labels: map[string]string{"region": "eu"}},
		Spec:       v1alpha1.WorkloadClusterSpec{Approval: v1alpha1.ApprovalManual},
		Status: v1alpha1.WorkloadClusterStatus{
			Conditions:       []metav1.Condition{cond("Ready", "False", "WaitingForApproval")},
			DeployedPackages: &v1alpha1.DeployedPackagesStatus{Revision: 3, Packages: []v1alpha1.PublishedPin{{Deployment: "smf", Tag: "smf/v1"}, {Deployment: "upf", Tag: "upf/v6"}}},
			Proposal: &v1alpha1.ProposalStatus{Revision: 4, Commit: "abc", Summary: "~upf upf/v6→upf/v7, -smf",
				Packages: []v1alpha1.PublishedPin{{Deployment: "upf", Tag: "upf/v7"}, {Deployment: "amf", Tag: "amf/v2"}}},
		},
	}
	dep := func(name string, conds ...metav1.Condition) v1alpha1.PackageDeployment {
		return v1alpha1.PackageDeployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "fleet"},
			Spec:   v1alpha1.PackageDeploymentSpec{Cluster: v1alpha1.LocalObjectReference{Name: "core01"}, Package: v1alpha1.PackageReference{Name: name, Revision: "v1"}},
			Status: v1alpha1.PackageDeploymentStatus{Conditions: conds}}
	}
	f := Build(Snapshot{
		Clusters: []v1alpha1.WorkloadCluster{wc},
		Deployments: []v1alpha1.PackageDeployment{
			dep("upf", cond("Ready", "True", "Published"), cond("Synced", "False", "SyncError")),
			dep("amf", cond("Ready", "False", "WaitingForApproval")),
			dep("gone", cond("Ready", "False", "ClusterNotFound"), cond("Stalled", "True", "ClusterNotFound")),
		},
	})
	f.Orphans = nil // "gone" names core01 too; keep the test about one cluster
	if len(f.Clusters) != 1 {
		t.Fatalf("%d clusters", len(f.Clusters))
	}
	c := f.Clusters[0]
	if c.Own.Health != Waiting || c.Status.Health != Degraded || c.Status.Reason != "ClusterNotFound" {
		t.Errorf("cluster own %v, overall %v: want Waiting, and Degraded from its worst deployment", c.Own, c.Status)
	}
	var names []string
	for _, d := range c.Deployments {
		names = append(names, d.Name+" "+string(d.Status.Health))
	}
	if diff := cmp.Diff([]string{"amf Waiting", "gone Degraded", "upf Degraded"}, names); diff != "" {
		t.Errorf("deployments (-want +got):\n%s", diff)
	}
	want := &Proposal{Revision: 4, Commit: "abc", Summary: "~upf upf/v6→upf/v7, -smf", Command: "flotilla approve core01 -n fleet",
		Changes: []render.Change{{Deployment: "amf", Op: "+", To: "amf/v2"}, {Deployment: "smf", Op: "-", From: "smf/v1"}, {Deployment: "upf", Op: "~", From: "upf/v6", To: "upf/v7"}}}
	if diff := cmp.Diff(want, c.Proposal); diff != "" {
		t.Errorf("proposal (-want +got):\n%s", diff)
	}
}

func TestBuildRollout(t *testing.T) {
	f := Build(pausedFleet())
	if len(f.Sets) != 1 || f.Sets[0].Rollout == nil {
		t.Fatalf("sets %+v", f.Sets)
	}
	r := f.Sets[0].Rollout
	type step struct {
		Selects, State string
		Counts         map[string]int
		Targets        []string
	}
	var got []step
	for _, s := range r.Steps {
		st := step{Selects: s.Selects, State: s.State, Counts: s.Counts}
		for _, tg := range s.Targets {
			st.Targets = append(st.Targets, tg.Cluster+" "+tg.State+" "+string(tg.Health))
		}
		got = append(got, st)
	}
	want := []step{
		{Selects: "wave=canary", State: "Done", Counts: map[string]int{"Done": 1}, Targets: []string{"edge00 Done Healthy"}},
		{Selects: "wave=early", State: "Paused", Counts: map[string]int{"Done": 1}, Targets: []string{"edge01 Done Healthy"}},
		{Selects: "the rest", State: "Pending", Counts: map[string]int{"Waiting": 1}, Targets: []string{"edge02 Waiting Healthy"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if r.Step != 1 || !r.Paused || r.Undeployed != 1 {
		t.Errorf("rollout at step %d paused %v undeployed %d; want step 1 (0-based), paused, one target not deployed", r.Step, r.Paused, r.Undeployed)
	}
	if diff := cmp.Diff([]string{"flotilla rollout resume upf -n fleet"}, r.Commands); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
}

// pausedFleet is three clusters and a set rolling free5gc-upf/v7 out in three steps, paused after
// the second; a fourth target has no deployment yet.
func pausedFleet() Snapshot {
	var s Snapshot
	waves := []string{"canary", "early", "late"}
	for i, wave := range waves {
		name := fmt.Sprintf("edge%02d", i)
		s.Clusters = append(s.Clusters, v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "fleet", Labels: map[string]string{"wave": wave}}})
		rev, n := "v7", 7
		if wave == "late" {
			rev, n = "v6", 6
		}
		s.Deployments = append(s.Deployments, v1alpha1.PackageDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: "upf-" + name, Namespace: "fleet", Labels: map[string]string{v1alpha1.LabelPackageSet: "upf"}},
			Spec:       v1alpha1.PackageDeploymentSpec{Cluster: v1alpha1.LocalObjectReference{Name: name}, Package: v1alpha1.PackageReference{Name: "free5gc-upf", Revision: rev}},
			Status: v1alpha1.PackageDeploymentStatus{Resolved: &v1alpha1.ResolvedRevision{Revision: n, Tag: "free5gc-upf/" + rev},
				Conditions: []metav1.Condition{cond("Ready", "True", "Published"), cond("Synced", "True", "Synced")}},
		})
	}
	sel := func(wave string) *v1alpha1.LabelSelector {
		return &v1alpha1.LabelSelector{MatchLabels: map[string]string{"wave": wave}}
	}
	s.Sets = []v1alpha1.PackageSet{{
		ObjectMeta: metav1.ObjectMeta{Name: "upf", Namespace: "fleet"},
		Spec: v1alpha1.PackageSetSpec{Package: v1alpha1.PackageReference{Name: "free5gc-upf", Revision: "v7"},
			Strategy: v1alpha1.RolloutStrategy{Type: v1alpha1.StrategyRollingUpdate, RollingUpdate: &v1alpha1.RollingUpdate{
				Steps: []v1alpha1.RolloutStep{{Selector: sel("canary")}, {Selector: sel("early"), Pause: true}, {}}}}},
		Status: v1alpha1.PackageSetStatus{Targets: 4, Rollout: &v1alpha1.RolloutStatus{Revision: "free5gc-upf/v7", Step: 1, Paused: true},
			Conditions: []metav1.Condition{cond("Ready", "False", "RolloutPaused")}},
	}}
	return s
}

// BenchmarkBuild builds the model of a fleet of 1,000 clusters × 10 packages, what the dashboard
// does for each request.
func BenchmarkBuild(b *testing.B) {
	s := syntheticFleet(1000, 10)
	b.ResetTimer()
	for b.Loop() {
		Build(s)
	}
}

func syntheticFleet(clusters, packages int) Snapshot {
	var s Snapshot
	for c := range clusters {
		name := fmt.Sprintf("edge%04d", c)
		s.Clusters = append(s.Clusters, v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "fleet", Labels: map[string]string{"region": fmt.Sprint("r", c%7)}},
			Status: v1alpha1.WorkloadClusterStatus{Conditions: []metav1.Condition{cond("Ready", "True", "Published")}}})
		for p := range packages {
			pkg := fmt.Sprintf("pkg%02d", p)
			s.Deployments = append(s.Deployments, v1alpha1.PackageDeployment{
				ObjectMeta: metav1.ObjectMeta{Name: pkg + "-" + name, Namespace: "fleet", Labels: map[string]string{v1alpha1.LabelPackageSet: pkg}},
				Spec:       v1alpha1.PackageDeploymentSpec{Cluster: v1alpha1.LocalObjectReference{Name: name}, Package: v1alpha1.PackageReference{Name: pkg, Revision: "v2"}},
				Status: v1alpha1.PackageDeploymentStatus{Resolved: &v1alpha1.ResolvedRevision{Revision: 2, Tag: pkg + "/v2"}, DeployedPackagesRevision: 3,
					Conditions: []metav1.Condition{cond("Ready", "True", "Published"), cond("Synced", "True", "Synced")}},
			})
		}
	}
	for p := range packages {
		pkg := fmt.Sprintf("pkg%02d", p)
		s.Sets = append(s.Sets, v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pkg, Namespace: "fleet"},
			Spec: v1alpha1.PackageSetSpec{Package: v1alpha1.PackageReference{Name: pkg, Revision: "v2"},
				Strategy: v1alpha1.RolloutStrategy{Type: v1alpha1.StrategyRollingUpdate, RollingUpdate: &v1alpha1.RollingUpdate{PartitionBy: "region", Steps: []v1alpha1.RolloutStep{{}}}}},
			Status: v1alpha1.PackageSetStatus{Targets: clusters, Rollout: &v1alpha1.RolloutStatus{Revision: pkg + "/v2", Step: 2, Partition: "r2"}}})
	}
	return s
}
