package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flotilla-dev/flotilla/internal/metrics"
	"github.com/flotilla-dev/flotilla/internal/testenv"
)

// TestBenchTinyFleet runs the whole bench on 3 clusters × 2 packages over smart HTTP: the real
// controller converges the fleet, then the bump, the git server counts its requests, the git
// floor runs, and the table has every row. It asserts what was reached, never how fast (STYLE.md:
// benchmarks are not timed assertions).
func TestBenchTinyFleet(t *testing.T) {
	report, progress := runBench(t, Options{
		Clusters:         3,
		Packages:         2,
		RolloutSteps:     3,
		CPUProfile:       filepath.Join(t.TempDir(), "cpu.pprof"),
		ProgressInterval: time.Second,
	})
	commits := 0
	for _, p := range []Phase{report.Cold, report.Bump, report.RolloutPhase, report.ForwardPhase} {
		if !p.Done || p.Converged != 3 {
			t.Errorf("%s: converged %d/3 (done %v), want every cluster", p.Name, p.Converged, p.Done)
		}
		commits += p.Git.Commits
	}
	for _, p := range []Phase{report.Bump, report.RolloutPhase, report.ForwardPhase} {
		if got := p.Git.Commits; got != 3 {
			t.Errorf("%s wrote %d deployed-packages commits, want one per cluster (3)", p.Name, got)
		}
	}
	for _, ro := range []Rollout{report.Rollout, report.Forward} {
		if len(ro.Steps) != 3 {
			t.Fatalf("rollout %s→%s: %d steps, want 3: %+v", ro.From, ro.To, len(ro.Steps), ro.Steps)
		}
		for i, s := range ro.Steps {
			if s.Clusters != 1 || s.Publish <= 0 || (i < 2 && s.Gap <= 0) {
				t.Errorf("rollout %s→%s step %d: %+v, want one cluster, its publish and the gap to the next step measured", ro.From, ro.To, i+1, s)
			}
		}
	}
	if f := report.FastImport; f.Identical != 3 || f.Commits != commits {
		t.Errorf("fast-import wrote %d commits (%d repositories identical), want flotilla's %d commits in 3 identical repositories",
			f.Commits, f.Identical, commits)
	}
	if l := report.Local; l.Failed != 0 || l.Identical != 3 {
		t.Errorf("local mode: %d clusters failed, %d/3 trees identical to the controller's", l.Failed, l.Identical)
	}
	if report.Transport != TransportHTTP {
		t.Errorf("transport %q, want the default %q", report.Transport, TransportHTTP)
	}
	for _, p := range []Phase{report.Cold, report.Bump} {
		// Cold, every cluster's repository was fetched (a ref advertisement, and no upload-pack
		// when it is empty) and pushed to (an advertisement and a receive-pack); in the bump the
		// publish builds on the mirror the cold push left and only pushes. The catalog was
		// fetched at least once.
		want := map[string]int{"cold": 2 * 3, "bump": 3}[p.Name]
		if r := p.Requests; r.InfoRefs < want || r.ReceivePack < 3 {
			t.Errorf("%s: the git server counted %+v for the cluster repositories, want at least %d advertisements and a push per cluster", p.Name, r, want)
		}
		if p.Name == "cold" && p.CatalogRequests.UploadPack == 0 {
			t.Errorf("cold: the catalog was never fetched over HTTP: %+v", p.CatalogRequests)
		}
		if p.BenchCPU.Children <= 0 {
			t.Errorf("%s: no CPU measured for the git server's http-backend processes", p.Name)
		}
	}
	if f := report.Floor; f.Clusters != 3 || f.Workers != 4 || f.Time <= 0 || f.Requests.ReceivePack != 3 || f.Requests.UploadPack < 3 {
		t.Errorf("git floor %+v, want 3 clusters, 4 at once, timed, one fetch and one push each over HTTP", f)
	}
	if report.PeakRSS <= 0 || report.Cold.ControllerCPU.total() <= 0 {
		t.Errorf("controller peak RSS %d, CPU %v: want both measured", report.PeakRSS, report.Cold.ControllerCPU)
	}

	var out bytes.Buffer
	if err := report.Print(&out); err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{
		"converged clusters", "convergence time (all published)", "deployed-packages commits",
		"bytes written to cluster repos", "deployed-packages revisions per cluster",
		"git requests per cluster (refs, upload, receive)", "catalog git requests (refs, upload, receive)",
		"git server CPU s (http-backend)", "git server time per request avg", "git floor (git CLI)", "cold / git floor",
		"status writes per WorkloadCluster avg (max)",
		"status writes per PackageDeployment avg (max)", "status writes per PackageSet avg (max)",
		"controller CPU s (self + git)", "objects created", "controller peak RSS", "git fast-import",
		"publish / fast-import", "local mode (flotilla render)", "rollout s-00 v2→v1", "rollout s-00 v1→v2",
	} {
		if !strings.Contains(out.String(), "\n"+row) {
			t.Errorf("table has no row %q:\n%s", row, out.String())
		}
	}
	if !strings.Contains(out.String(), "git over smart HTTP") {
		t.Errorf("table does not say which transport:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "3/3") {
		t.Errorf("table does not report 3/3 clusters converged:\n%s", out.String())
	}
	if !strings.Contains(progress, "converged 3/3 clusters") {
		t.Errorf("progress never reported convergence:\n%s", progress)
	}
	t.Logf("report:\n%s", out.String())
}

// TestBenchFileTransport runs the smallest fleet over file:// (the controller then needs
// --allow-local-repositories): it converges, the floor runs over file:// too, and the table says
// which transport and that no requests were counted.
func TestBenchFileTransport(t *testing.T) {
	report, _ := runBench(t, Options{
		Clusters:  2,
		Packages:  1,
		Transport: TransportFile,
	})
	for _, p := range []Phase{report.Cold, report.Bump} {
		if !p.Done || p.Converged != 2 || p.Git.Commits != 2 {
			t.Errorf("%s: converged %d/2 (done %v), %d commits, want every cluster and one commit each", p.Name, p.Converged, p.Done, p.Git.Commits)
		}
		if p.Requests.Total() != 0 {
			t.Errorf("%s: requests %+v counted over file://", p.Name, p.Requests)
		}
		// A cluster renders for the publish, and the reconciles after it (its deployments'
		// status writes) reuse that render.
		if p.Rendered != p.Published {
			t.Errorf("%s: %v renders (%v reused) for %v publishes, want one render per publish", p.Name, p.Rendered, p.Reused, p.Published)
		}
	}
	if f := report.Floor; f.Clusters != 2 || f.Time <= 0 {
		t.Errorf("git floor %+v, want 2 clusters timed", f)
	}
	var out bytes.Buffer
	if err := report.Print(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"git over file://", "\ncold / git floor", "- (file://)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table has no %q:\n%s", want, out.String())
		}
	}
}

// TestBenchIdle measures an idle window with health read back from a workload API server: the
// controller watches each cluster's Flux objects there, and writes nothing to flotilla's objects or
// to git while nothing changes.
func TestBenchIdle(t *testing.T) {
	dir := t.TempDir()
	profile, heap := filepath.Join(dir, "idle.pprof"), filepath.Join(dir, "heap")
	report, _ := runBench(t, Options{
		Clusters:       2,
		Packages:       1,
		Idle:           20 * time.Second,
		IdleCPUProfile: profile,
		HeapProfile:    heap,
	})
	idle := report.Idle
	// A profile is gzipped protobuf.
	for _, p := range []string{profile, heapProfilePath(heap, "cold"), heapProfilePath(heap, "bump"), heapProfilePath(heap, "idle")} {
		if data, err := os.ReadFile(p); err != nil || len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
			t.Errorf("profile %s: %v, %d bytes; want a gzipped profile", p, err, len(data))
		}
	}
	// Health follows each of the two clusters with goroutines of its own (its feed's, client-go's
	// for the watch, its connection's).
	if idle.Goroutines < 4 || idle.StackBytes < 64<<10 {
		t.Errorf("idle: controller goroutines %v, stacks %v bytes; want the controller's /metrics read (go_goroutines, go_memstats_stack_inuse_bytes)", idle.Goroutines, idle.StackBytes)
	}
	// The heap profiles count the controller's live heap: its informers' caches at least.
	for name, live := range map[string]int64{"cold": report.Cold.LiveHeap, "bump": report.Bump.LiveHeap, "idle": idle.LiveHeap} {
		if live < 1<<20 {
			t.Errorf("controller live heap when %s converged: %d bytes, want at least 1 MiB", name, live)
		}
	}
	if len(idle.ServerWrites) == 0 {
		t.Error("no writes served by the management API server in the idle window (its own lease renewals at least)")
	}
	// Health is read through a watch per cluster (and a heartbeat a minute): nothing need be
	// asked in 20 s, but both clusters' watches are open.
	if idle.Duration < 20*time.Second || idle.WorkloadWatches < 2 || idle.ControllerCPU.total() <= 0 {
		t.Errorf("idle %+v: want 20 s measured, health watched in both clusters and the controller's CPU", idle)
	}
	// The profile's tail (and its encoding) is outside the window.
	if idle.Duration >= 20*time.Second+IdleProfileTail {
		t.Errorf("idle window measured %s: want it to end before the profile's %s tail", idle.Duration, IdleProfileTail)
	}
	// client-go's request counter keeps the management API server's address and folds the
	// workload clusters' under one label value (it had a series per cluster address).
	if len(idle.RequestHosts) != 2 || !slices.Contains(idle.RequestHosts, metrics.WorkloadClustersHost) {
		t.Errorf("idle: rest_client_requests_total hosts %q, want the management API server's and %q", idle.RequestHosts, metrics.WorkloadClustersHost)
	}
	if got := total(idle.WorkloadRequests); got > 2*2 {
		t.Errorf("idle: %v requests to the workload API server in 20 s (two 10 s intervals, two clusters), want at most one per cluster per interval", got)
	}
	for kind, w := range idle.Writes {
		if w.Status+w.Meta+w.Spec != 0 {
			t.Errorf("idle: %s written %+v with nothing changing", kind, w)
		}
	}
	if idle.Published != 0 {
		t.Errorf("idle: %v deployed-packages revisions published with nothing changing", idle.Published)
	}
	// Nothing to apply while nothing changes (TestRootSyncObjectsAreAppliedOnce forces the
	// reconciles that used to re-apply; this window need not contain one).
	if n := idle.WorkloadRequests["PATCH"]; n != 0 {
		t.Errorf("idle: %v applies to the workload API server with nothing changing", n)
	}
	var out bytes.Buffer
	if err := report.Print(&out); err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"controller CPU, % of one core", "requests/s to the management API server",
		"requests per workload cluster per health interval", "health watches open on the workload API server", "git requests per Repository per spec.interval", "writes the management API server served", "writes to flotilla's objects",
		"controller live heap when converged", "controller live heap at the end of the window"} {
		if !strings.Contains(out.String(), "\n"+row) {
			t.Errorf("table has no row %q:\n%s", row, out.String())
		}
	}
	if _, err := Run(context.Background(), Options{Clusters: 1, Packages: 1, Idle: time.Second, RolloutSteps: 1, Controller: []string{"x"}}); err == nil || !strings.Contains(err.Error(), "--rollout-steps") {
		t.Errorf("--idle with --rollout-steps: %v, want a refusal that says why", err)
	}
}

// TestBenchShards runs 4 clusters as 2 shards over file://: each shard's controller publishes its
// own 2 clusters once in the cold phase; killed, the last shard's clusters get no commit and keep
// their pins while the other shard's follow s-00 back to v1; restarted, it catches up; and the
// trees still equal the local mode's (one process, no shards) at the same revisions.
func TestBenchShards(t *testing.T) {
	report, _ := runBench(t, Options{Clusters: 4, Packages: 1, Shards: 2, Transport: TransportFile})
	s := report.Shards
	if fmt.Sprint(s.Names, s.Clusters, s.ColdPublished) != "[shard-0 shard-1] [2 2] [2 2]" {
		t.Errorf("shards %v with clusters %v published %v in the cold phase, want 2 each, once per cluster", s.Names, s.Clusters, s.ColdPublished)
	}
	if s.Killed != "shard-1" || s.KilledCommits != 0 || s.KilledMoved != 0 {
		t.Errorf("killed %s: its clusters got %d commits and %d moved, want 0 and 0", s.Killed, s.KilledCommits, s.KilledMoved)
	}
	if k := report.KillPhase; !k.Done || k.Converged != 2 || k.Git.Commits != 2 {
		t.Errorf("kill phase: %d live clusters converged (done %v), %d commits; want shard-0's 2, one commit each", k.Converged, k.Done, k.Git.Commits)
	}
	if r := report.RecoverPhase; !r.Done || r.Converged != 4 || r.Git.Commits != 2 {
		t.Errorf("recover phase: %d/4 converged (done %v), %d commits; want all, one commit per shard-1 cluster", r.Converged, r.Done, r.Git.Commits)
	}
	if l := report.Local; l.Failed != 0 || l.Identical != 4 {
		t.Errorf("local mode: %d failed, %d/4 trees identical to the sharded controllers'", l.Failed, l.Identical)
	}
	var out bytes.Buffer
	if err := report.Print(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"KILL (shard-1 SIGKILL", "RECOVER (shard-1 restarted)", "\nshard-1  2", "(shards summed)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table has no %q:\n%s", want, out.String())
		}
	}
	if _, err := Run(context.Background(), Options{Clusters: 2, Packages: 1, Shards: 2, Idle: time.Second, Controller: []string{"x"}}); err == nil || !strings.Contains(err.Error(), "--idle") {
		t.Errorf("--shards with --idle: %v, want a refusal that says why", err)
	}
}

// runBench runs the bench on a small fleet with the controller built from this checkout, each
// phase bounded to 2 minutes, and fails the test when it fails; it returns the report and the
// progress lines.
func runBench(t *testing.T, o Options) (*Report, string) {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run the tests with `make test`, which builds kube-apiserver and etcd into bin/k8s")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	o.Timeout, o.Dir, o.Progress = 2*time.Minute, t.TempDir(), &progress
	o.Controller = []string{buildFlotilla(t), "bench", "controller"}
	report, err := Run(ctx, o)
	if err != nil {
		t.Fatalf("bench: %v\nprogress:\n%s", err, progress.String())
	}
	return report, progress.String()
}

// buildFlotilla builds cmd/flotilla, whose hidden `bench controller` is the controller the bench
// runs as a child process.
func buildFlotilla(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "flotilla")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/flotilla")
	cmd.Dir = testenv.Root()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/flotilla: %v\n%s", err, out)
	}
	return bin
}
