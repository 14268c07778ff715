package bench

import (
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

func TestTrackerClassifiesWrites(t *testing.T) {
	tr := newTracker(fleet{clusters: 1, packages: 1, sets: 1})
	pd := func(gen int64, finalizers ...string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "s-00-c-00000", Generation: gen, Finalizers: finalizers,
			OwnerReferences: []metav1.OwnerReference{{Name: "s-00", Controller: new(bool)}}}}
	}
	tr.setPhase(phaseCold)
	tr.observe(kindDeployment, watch.Added, pd(1))
	tr.observe(kindDeployment, watch.Modified, pd(1, "flotilla.dev/undeploy")) // finalizer
	tr.observe(kindDeployment, watch.Modified, pd(1, "flotilla.dev/undeploy")) // status: same generation and metadata
	tr.observe(kindDeployment, watch.Modified, pd(1, "flotilla.dev/undeploy"))
	tr.setPhase(phaseBump)
	tr.observe(kindDeployment, watch.Modified, pd(2, "flotilla.dev/undeploy")) // spec
	tr.observe(kindDeployment, watch.Modified, pd(2, "flotilla.dev/undeploy"))

	got := []writeStats{tr.writeStats(kindDeployment, phaseCold), tr.writeStats(kindDeployment, phaseBump)}
	want := []writeStats{
		{Objects: 1, Status: 2, Meta: 1, MaxStatus: 2, MaxMeta: 1, StatusPerObject: 2, WritesPerObject: 3},
		{Objects: 1, Status: 1, Spec: 1, MaxStatus: 1, MaxSpec: 1, StatusPerObject: 1, WritesPerObject: 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
}

func TestTrackerConvergence(t *testing.T) {
	f := fleet{clusters: 1, packages: 2, sets: 2}
	tr := newTracker(f)
	cluster := func(pins ...v1alpha1.PublishedPin) *v1alpha1.WorkloadCluster {
		return &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Name: "c-00000"},
			Status: v1alpha1.WorkloadClusterStatus{DeployedPackages: &v1alpha1.DeployedPackagesStatus{Packages: pins}}}
	}
	s0 := v1alpha1.PublishedPin{Deployment: "s-00-c-00000", Tag: "pkg-00/v1"}
	s1 := v1alpha1.PublishedPin{Deployment: "s-01-c-00000", Tag: "pkg-01/v1"}
	steps := []struct {
		name string
		do   func()
		want int
	}{
		{"no status", func() { tr.observe(kindCluster, watch.Added, cluster()) }, 0},
		{"one set of two", func() { tr.observe(kindCluster, watch.Modified, cluster(s0)) }, 0},
		{"both sets", func() { tr.observe(kindCluster, watch.Modified, cluster(s0, s1)) }, 1},
		{"bump wanted", func() { tr.want("s-00", "pkg-00/v2") }, 0},
		{"bump published", func() {
			tr.observe(kindCluster, watch.Modified, cluster(v1alpha1.PublishedPin{Deployment: "s-00-c-00000", Tag: "pkg-00/v2"}, s1))
		}, 1},
	}
	for _, s := range steps {
		s.do()
		if got := tr.progress().converged; got != s.want {
			t.Errorf("%s: %d clusters converged, want %d", s.name, got, s.want)
		}
	}
}

func TestSamples(t *testing.T) {
	m, err := parseSamples(strings.NewReader(`# HELP controller_runtime_reconcile_total Total number of reconciliations per controller
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="packageset",result="success"} 12
controller_runtime_reconcile_total{controller="packageset",result="error"} 3
controller_runtime_reconcile_total{controller="workloadcluster",result="success"} 7
flotilla_publish_duration_seconds_sum 1.5
flotilla_publish_duration_seconds_count 4
apiserver_request_total{code="200",component="apiserver",group="flotilla.dev",resource="workloadclusters",subresource="status",verb="PATCH",version="v1alpha1"} 5
apiserver_request_total{code="200",component="apiserver",group="flotilla.dev",resource="workloadclusters",subresource="",verb="PATCH",version="v1alpha1"} 2
apiserver_request_total{code="409",component="apiserver",group="flotilla.dev",resource="workloadclusters",subresource="status",verb="PATCH",version="v1alpha1"} 1
apiserver_request_total{code="200",component="apiserver",group="coordination.k8s.io",resource="leases",subresource="",verb="PUT",version="v1"} 4
`))
	if err != nil {
		t.Fatal(err)
	}
	before := samples{`controller_runtime_reconcile_total{controller="packageset",result="success"}`: 2}
	patches := m.by("apiserver_request_total", []string{"verb", "resource", "subresource"}, `verb="PATCH"`)
	if want := map[string]float64{"PATCH workloadclusters status": 6, "PATCH workloadclusters": 2}; !maps.Equal(patches, want) {
		t.Errorf("PATCHes by resource: %v, want %v", patches, want)
	}
	for _, c := range []struct {
		name   string
		got    float64
		expect float64
	}{
		{"all results of a controller", m.sum("controller_runtime_reconcile_total", `controller="packageset"`), 15},
		{"one label pair", m.sum("controller_runtime_reconcile_total", `result="success"`), 19},
		{"no labels", m.sum("flotilla_publish_duration_seconds_sum"), 1.5},
		{"delta", m.delta(before).sum("controller_runtime_reconcile_total", `controller="packageset"`), 13},
		{"missing", m.sum("flotilla_publish_total"), 0},
	} {
		if c.got != c.expect {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.expect)
		}
	}
}
