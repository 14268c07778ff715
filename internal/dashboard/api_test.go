package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/fleetstatus"
)

func cond(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: reason + " message"}
}

// bigFleet is clusters × packages: cluster i is in region r(i%4), namespace a or b (by parity);
// every 10th cluster's pkg00 fails to sync, and pkg01 runs v1 on a third of the clusters, v2 on
// the rest.
func bigFleet(clusters, packages int) fleetstatus.Snapshot {
	var s fleetstatus.Snapshot
	for i := range clusters {
		ns := []string{"a", "b"}[i%2]
		name := fmt.Sprintf("edge%04d", i)
		s.Clusters = append(s.Clusters, v1alpha1.WorkloadCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"region": fmt.Sprint("r", i%4)}},
			Status: v1alpha1.WorkloadClusterStatus{Conditions: []metav1.Condition{cond("Ready", "True", "Published")},
				DeployedPackages: &v1alpha1.DeployedPackagesStatus{Revision: 3, Tag: "deployed-packages/v3"}},
		})
		for p := range packages {
			pkg := fmt.Sprintf("pkg%02d", p)
			rev := 2
			if p == 1 && i%3 == 0 {
				rev = 1
			}
			synced := cond("Synced", "True", "Synced")
			if p == 0 && i%10 == 0 {
				synced = cond("Synced", "False", "SyncError")
			}
			s.Deployments = append(s.Deployments, v1alpha1.PackageDeployment{
				ObjectMeta: metav1.ObjectMeta{Name: pkg + "-" + name, Namespace: ns},
				Spec:       v1alpha1.PackageDeploymentSpec{Cluster: v1alpha1.LocalObjectReference{Name: name}, Package: v1alpha1.PackageReference{Name: pkg, Revision: fmt.Sprint("v", rev)}},
				Status: v1alpha1.PackageDeploymentStatus{Resolved: &v1alpha1.ResolvedRevision{Revision: rev, Tag: fmt.Sprintf("%s/v%d", pkg, rev)}, DeployedPackagesRevision: 3,
					Conditions: []metav1.Condition{cond("Ready", "True", "Published"), synced}},
			})
		}
	}
	return s
}

func serve(t testing.TB, s fleetstatus.Snapshot, o Options) *httptest.Server {
	t.Helper()
	h := newHandler(func(context.Context) (fleetstatus.Snapshot, error) { return s, nil }, o)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func get[T any](t *testing.T, srv *httptest.Server, path string) T {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v T
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return v
}

func names(rows []Row) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Namespace+"/"+r.Name)
	}
	return out
}

func TestFleetPaging(t *testing.T) {
	srv := serve(t, bigFleet(1000, 10), Options{})
	page := get[FleetPage](t, srv, "/api/fleet?offset=100&limit=25")
	if page.Total != 1000 || page.Offset != 100 || page.Limit != 25 || len(page.Rows) != 25 {
		t.Fatalf("total %d offset %d limit %d rows %d; want 1000, 100, 25, 25", page.Total, page.Offset, page.Limit, len(page.Rows))
	}
	// Clusters by namespace, then name: a holds the even ones, 500 of them.
	if got := page.Rows[0].Namespace + "/" + page.Rows[0].Name; got != "a/edge0200" {
		t.Errorf("first row %s, want a/edge0200", got)
	}
	if len(page.Packages) != 10 || page.Packages[0] != "pkg00" {
		t.Errorf("columns %v", page.Packages)
	}
	cell := page.Rows[0].Cells["pkg00"]
	if len(cell) != 1 || cell[0].Pinned != "v2" || cell[0].Status.Health != fleetstatus.Degraded || cell[0].Status.Reason != "SyncError" {
		t.Errorf("edge0200's pkg00 cell %+v, want v2 Degraded SyncError", cell)
	}
	if diff := cmp.Diff([]string{"a", "b"}, page.Namespaces); diff != "" {
		t.Errorf("namespaces (-want +got):\n%s", diff)
	}
	if page.Counts[fleetstatus.Degraded] != 100 || page.Counts[fleetstatus.Healthy] != 900 {
		t.Errorf("counts %v, want 100 Degraded and 900 Healthy", page.Counts)
	}
	// Past the end: the last page.
	last := get[FleetPage](t, srv, "/api/fleet?offset=5000&limit=300")
	if last.Offset != 900 || len(last.Rows) != 100 {
		t.Errorf("past the end: offset %d, %d rows; want the last page, 900 and 100", last.Offset, len(last.Rows))
	}
	// A limit beyond the bound is cut to it.
	if big := get[FleetPage](t, srv, "/api/fleet?limit=100000"); big.Limit != maxLimit || len(big.Rows) != maxLimit {
		t.Errorf("limit %d, %d rows; want %d", big.Limit, len(big.Rows), maxLimit)
	}
}

func TestFleetFilters(t *testing.T) {
	srv := serve(t, bigFleet(40, 3), Options{})
	tests := []struct {
		query string
		total int
		first string
	}{
		{"namespace=b", 20, "b/edge0001"},
		{"selector=region%3Dr2", 10, "a/edge0002"},
		{"selector=region+in+(r1,r3),region!%3Dr3", 10, "b/edge0001"},
		{"health=Degraded", 4, "a/edge0000"},
		{"health=Degraded&namespace=b", 0, ""},
		{"q=EDGE003", 10, "a/edge0030"},
		{"q=pkg01/v1", 14, "a/edge0000"}, // a third of 40 run pkg01/v1
		{"q=region%3Dr3&health=Healthy", 10, "b/edge0003"},
	}
	for _, tt := range tests {
		page := get[FleetPage](t, srv, "/api/fleet?"+tt.query)
		first := ""
		if len(page.Rows) > 0 {
			first = names(page.Rows)[0]
		}
		if page.Total != tt.total || first != tt.first {
			t.Errorf("%s: %d clusters from %q, want %d from %q", tt.query, page.Total, first, tt.total, tt.first)
		}
	}
	// Counts ignore the health filter, so every health stays one click away.
	page := get[FleetPage](t, srv, "/api/fleet?health=Degraded")
	if page.Counts[fleetstatus.Healthy] != 36 || page.Counts[fleetstatus.Degraded] != 4 {
		t.Errorf("counts %v with a health filter, want 36 Healthy and 4 Degraded", page.Counts)
	}
	for _, bad := range []string{"selector=region%3D%3D%3D", "health=Sick"} {
		resp, err := http.Get(srv.URL + "/api/fleet?" + bad)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %s, want 400", bad, resp.Status)
		}
	}
}

func TestClusterAndPackagePages(t *testing.T) {
	s := bigFleet(6, 2)
	s.Clusters[0].Status.Proposal = &v1alpha1.ProposalStatus{Revision: 4, Branch: "proposed/deployed-packages/v4", Commit: "c0ffee",
		Packages: []v1alpha1.PublishedPin{{Deployment: "pkg00-edge0000", Tag: "pkg00/v3"}}}
	s.Clusters[0].Status.DeployedPackages.Packages = []v1alpha1.PublishedPin{{Deployment: "pkg00-edge0000", Tag: "pkg00/v2"}, {Deployment: "pkg01-edge0000", Tag: "pkg01/v1"}}
	s.Deployments[1].Status.DeployedPackagesRevision = 2
	srv := serve(t, s, Options{})
	c := get[ClusterPage](t, srv, "/api/clusters/a/edge0000")
	if c.Cluster.Proposal == nil || len(c.Cluster.Proposal.Changes) != 2 || c.Cluster.Proposal.Command != "flotilla approve edge0000 -n a" {
		t.Fatalf("proposal %+v", c.Cluster.Proposal)
	}
	var revs []string
	for _, r := range c.Revisions {
		for _, p := range r.Pins {
			revs = append(revs, fmt.Sprintf("%s %v %s", r.Tag, r.Current, p.Tag))
		}
	}
	if diff := cmp.Diff([]string{"deployed-packages/v3 true pkg00/v2", "deployed-packages/v2 false pkg01/v1"}, revs); diff != "" {
		t.Errorf("revisions (-want +got):\n%s", diff)
	}
	if len(c.Problems) != 1 || c.Problems[0].Object != "PackageDeployment/pkg00-edge0000" || c.Problems[0].Reason != "SyncError" {
		t.Errorf("problems %+v, want edge0000's pkg00 SyncError", c.Problems)
	}
	resp, err := http.Get(srv.URL + "/api/clusters/a/nope")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown cluster: %s", resp.Status)
	}

	p := get[PackagePage](t, srv, "/api/packages/pkg01")
	var spread []string
	for _, s := range p.Spread {
		spread = append(spread, fmt.Sprintf("%s×%d", s.Revision, s.Count))
	}
	if diff := cmp.Diff([]string{"v2×4", "v1×2"}, spread); diff != "" {
		t.Errorf("spread (-want +got):\n%s", diff)
	}
	list := get[PackagesPage](t, srv, "/api/packages?namespace=a")
	if len(list.Packages) != 2 || list.Packages[1].Name != "pkg01" || list.Packages[1].Clusters != 3 {
		t.Errorf("packages of namespace a: %+v", list.Packages)
	}
}

func TestReadOnlyAndHeaders(t *testing.T) {
	srv := serve(t, bigFleet(2, 1), Options{Hosts: LoopbackHosts})
	for _, path := range []string{"/", "/app.js", "/app.css", "/api/fleet"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %s", path, resp.Status)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", path)
		}
	}
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		req, _ := http.NewRequest(method, srv.URL+"/api/fleet", strings.NewReader("{}"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s: %s, want 405", method, resp.Status)
		}
	}
	// A name that rebinds to 127.0.0.1 is refused; the loopback names are not.
	for host, want := range map[string]int{"attacker.example": http.StatusMisdirectedRequest, "localhost:8080": http.StatusOK, "127.0.0.1": http.StatusOK} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/fleet", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %s, want %d", host, resp.Status, want)
		}
	}
	// An unchanged view is 304 Not Modified.
	resp, err := http.Get(srv.URL + "/api/fleet")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/fleet", nil)
	req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
	again, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	again.Body.Close()
	if again.StatusCode != http.StatusNotModified {
		t.Errorf("same ETag: %s, want 304", again.Status)
	}
}

func TestHostsFor(t *testing.T) {
	for addr, loopback := range map[string]bool{"127.0.0.1:8080": true, "localhost:0": true, "[::1]:80": true, ":8082": false, "0.0.0.0:8080": false, "10.1.2.3:80": false} {
		if got := HostsFor(addr) != nil; got != loopback {
			t.Errorf("HostsFor(%s) restricts: %v, want %v", addr, got, loopback)
		}
	}
}

// BenchmarkFleetPage serves one page of the matrix of 1,000 clusters × 10 packages, model build
// included (as when the model is older than buildEvery).
func BenchmarkFleetPage(b *testing.B) {
	s := bigFleet(1000, 10)
	h := newHandler(func(context.Context) (fleetstatus.Snapshot, error) { return s, nil }, Options{})
	req := httptest.NewRequest(http.MethodGet, "/api/fleet?limit=50&selector=region%3Dr1", nil)
	for b.Loop() {
		h.built = h.built.AddDate(-1, 0, 0)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
	}
}
