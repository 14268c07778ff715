package workloadcluster

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// TestWriter: the cluster published at the location writes; else the oldest, then the first by
// namespace, then by name, whatever order the cache lists them in.
func TestWriter(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := func(ns, name string, age time.Duration) *v1alpha1.WorkloadCluster {
		return &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(t0.Add(-age))}}
	}
	at := func(loc string, c *v1alpha1.WorkloadCluster) *v1alpha1.WorkloadCluster {
		c.Status.DeployedPackages = &v1alpha1.DeployedPackagesStatus{Location: loc}
		return c
	}
	tests := []struct {
		name     string
		clusters []*v1alpha1.WorkloadCluster
		want     string
	}{
		{name: "none", want: ""},
		{name: "alone", clusters: []*v1alpha1.WorkloadCluster{c("a", "edge01", 0)}, want: "a/edge01"},
		{name: "oldest", clusters: []*v1alpha1.WorkloadCluster{c("a", "edge01", 0), c("b", "edge02", time.Hour)}, want: "b/edge02"},
		{name: "same age: namespace", clusters: []*v1alpha1.WorkloadCluster{c("b", "a", 0), c("a", "z", 0)}, want: "a/z"},
		{name: "same age and namespace: name", clusters: []*v1alpha1.WorkloadCluster{c("a", "edge02", 0), c("a", "edge01", 0)}, want: "a/edge01"},
		{name: "published here beats older", clusters: []*v1alpha1.WorkloadCluster{c("a", "old", time.Hour), at("here", c("a", "new", 0))}, want: "a/new"},
		{name: "published elsewhere counts for nothing", clusters: []*v1alpha1.WorkloadCluster{at("there", c("a", "old", time.Hour)), at("here", c("a", "new", 0))}, want: "a/new"},
		{name: "two published here: oldest", clusters: []*v1alpha1.WorkloadCluster{at("here", c("a", "new", 0)), at("here", c("a", "old", time.Hour)), c("a", "older", 2*time.Hour)}, want: "a/old"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if w := writer(tt.clusters, "here"); w != nil {
				got = w.Namespace + "/" + w.Name
			}
			if got != tt.want {
				t.Errorf("writer = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSetRepositoryInUse: the message names the writer by namespace/name and this cluster's own
// repository (credentials redacted), never the writer's.
func TestSetRepositoryInUse(t *testing.T) {
	c := &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "edge01", Generation: 3}}
	repo := &v1alpha1.Repository{Spec: v1alpha1.RepositorySpec{Git: &v1alpha1.GitRepository{URL: "https://bob@git.example/edge01.git", Directory: "/sites"}}}
	other := &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "edge01"}}
	setRepositoryInUse(c, repo, other)
	want := "WorkloadCluster a/edge01 writes sites/deployed-packages on branch main of https://git.example/edge01.git " +
		"(of the clusters there, the one that published there writes, else the oldest); give this cluster its own spec.sync.package, or a Repository of its own; nothing was published"
	for _, typ := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionStalled} {
		cond := meta.FindStatusCondition(c.Status.Conditions, typ)
		if cond == nil || cond.Reason != ReasonRepositoryInUse {
			t.Fatalf("%s = %v, want reason %s", typ, cond, ReasonRepositoryInUse)
		}
		if diff := cmp.Diff(want, cond.Message); diff != "" {
			t.Errorf("%s message (-want +got):\n%s", typ, diff)
		}
	}
	if c.Status.ObservedGeneration != 3 {
		t.Errorf("observedGeneration = %d, want 3", c.Status.ObservedGeneration)
	}
}
