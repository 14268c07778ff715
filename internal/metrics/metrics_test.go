package metrics

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	clientmetrics "k8s.io/client-go/tools/metrics"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/flotilla-dev/flotilla/internal/buildinfo"
)

func TestBuildInfo(t *testing.T) {
	SetBuildInfo(buildinfo.Info{Version: "v0.9.0", Commit: "abc", Date: "2026-01-02T03:04:05Z", GoVersion: "go1.26.0"})
	SetBuildInfo(buildinfo.Info{Version: "v1.0.0", Commit: "def", Date: "2026-02-03T04:05:06Z", GoVersion: "go1.26.1"})
	type series struct {
		Labels map[string]string
		Value  float64
	}
	// The registry the controller serves holds one series, the last one set.
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []series
	for _, f := range families {
		if f.GetName() != "flotilla_build_info" {
			continue
		}
		for _, m := range f.GetMetric() {
			s := series{Labels: map[string]string{}, Value: m.GetGauge().GetValue()}
			for _, l := range m.GetLabel() {
				s.Labels[l.GetName()] = l.GetValue()
			}
			got = append(got, s)
		}
	}
	want := []series{{Labels: map[string]string{"version": "v1.0.0", "commit": "def", "date": "2026-02-03T04:05:06Z", "goversion": "go1.26.1"}, Value: 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("flotilla_build_info (-want +got):\n%s", diff)
	}
}

type recordedResult struct{ hosts []string }

func (r *recordedResult) Increment(_ context.Context, _, _, host string) {
	r.hosts = append(r.hosts, host)
}

// Requests to the management API server keep their host; every other host is one label value.
func TestFoldWorkloadHosts(t *testing.T) {
	saved := clientmetrics.RequestResult
	t.Cleanup(func() { clientmetrics.RequestResult = saved })
	rec := &recordedResult{}
	clientmetrics.RequestResult = rec
	FoldWorkloadHosts("10.96.0.1:443")
	for _, host := range []string{"10.96.0.1:443", "edge01.example.com:6443", "10.96.0.1:6443", "10.96.0.1"} {
		clientmetrics.RequestResult.Increment(context.Background(), "200", "GET", host)
	}
	want := []string{"10.96.0.1:443", WorkloadClustersHost, WorkloadClustersHost, WorkloadClustersHost}
	if diff := cmp.Diff(want, rec.hosts); diff != "" {
		t.Errorf("hosts (-want +got):\n%s", diff)
	}
}
