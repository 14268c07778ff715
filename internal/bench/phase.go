package bench

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/flotilla-dev/flotilla/internal/githttp"
)

// Phase is what one phase of the run measured.
type Phase struct {
	Name string
	// Done is true when every cluster published the wanted pins within the timeout.
	Done      bool
	Converged int
	// Time is from the phase's start (controller start, or the set's patch) until every cluster's
	// status names a published deployed-packages revision with the wanted pins.
	Time time.Duration
	// Settled is until the last write to a tracked object (the deployments' and sets' status).
	Settled time.Duration
	Git     repoStats
	// Writes are per kind (WorkloadCluster, PackageDeployment, PackageSet).
	Writes map[string]writeStats
	// ControllerCPU is the controller's CPU, its git child processes apart; ServerCPU that of
	// kube-apiserver and etcd; BenchCPU the bench's own (watches, git statistics), its children
	// apart: the git http-backend processes of its git server.
	ControllerCPU, ServerCPU, BenchCPU cpuTimes
	// Requests and CatalogRequests are what the git server counted for the cluster repositories
	// and for the catalog (zero over file://).
	Requests, CatalogRequests githttp.Requests
	// Reconciles are by controller (controller_runtime_reconcile_total).
	Reconciles map[string]float64
	// Publishes are deployed-packages publish attempts by result (flotilla_publish_total), and
	// PublishTime their summed duration (flotilla_publish_duration_seconds: render, fetch, push).
	Published, Unchanged, Failed float64
	PublishTime                  time.Duration
	// Rendered and Reused are the deployed-packages renders the cluster reconciles ran, and those
	// they skipped because the inputs were the last publish's (flotilla_render_total).
	Rendered, Reused float64
	// LiveHeap is the controller's live heap when the phase converged (Options.HeapProfile; 0
	// when not measured).
	LiveHeap int64
}

// snapshot is the state of the counters at a phase boundary.
type snapshot struct {
	git    repoStats
	cpu    cpuTimes
	server cpuTimes
	// workload is the workload API server's (--idle), apart from server
	workload cpuTimes
	bench    cpuTimes
	metrics  samples
	// requests to the cluster repositories and the catalog
	requests, catalog githttp.Requests
}

func (b *run) snapshot(ctx context.Context) (snapshot, error) {
	var s snapshot
	var err error
	if s.git, err = statRepos(b.repos, b.f.clusterNames()); err != nil {
		return s, err
	}
	s.server, s.workload = pidsCPU(b.serverPIDs), pidsCPU(b.workloadPIDs)
	if _, _, self, err := procStat(os.Getpid()); err == nil {
		s.bench = self
		if b.ctrl != nil {
			// A killed controller, once reaped, counts among the bench's children: not the git
			// server's CPU.
			s.bench.Children -= b.ctrl.reapedCPU()
		}
	}
	s.requests, s.catalog = b.requests(b.repos), b.requests(b.catalogDir)
	if b.ctrl == nil {
		return s, nil
	}
	if s.cpu, err = b.ctrl.cpu(); err != nil {
		return s, err
	}
	s.metrics, err = b.ctrl.scrape(ctx)
	return s, err
}

// phase starts a phase with start, waits until every cluster converged and the writes settled
// (or the timeout), and measures it.
func (b *run) phase(ctx context.Context, name string, p phase, start func() error) (Phase, error) {
	res := Phase{Name: name}
	b.t.setPhase(p)
	t0 := time.Now()
	if err := start(); err != nil {
		return res, err
	}
	deadline := t0.Add(b.o.Timeout)
	waitErr := b.converge(ctx, &res, t0, deadline)
	if waitErr == nil {
		if res.LiveHeap, waitErr = b.heapProfile(ctx, name); waitErr != nil {
			return res, waitErr
		}
		res.Settled = b.settle(deadline).Sub(t0)
	}
	after, err := b.snapshot(ctx)
	if err != nil {
		if waitErr != nil {
			return res, waitErr // why the phase failed (e.g. the controller exited), not the snapshot's symptom
		}
		return res, err
	}
	res.Git = after.git.sub(b.last.git)
	res.ControllerCPU, res.ServerCPU, res.BenchCPU = after.cpu.sub(b.last.cpu), after.server.sub(b.last.server), after.bench.sub(b.last.bench)
	res.Requests, res.CatalogRequests = after.requests.Sub(b.last.requests), after.catalog.Sub(b.last.catalog)
	m := after.metrics.delta(b.last.metrics)
	res.Reconciles = reconcileCounts(m)
	res.Published = m.sum("flotilla_publish_total", `result="published"`)
	res.Unchanged = m.sum("flotilla_publish_total", `result="unchanged"`)
	res.Failed = m.sum("flotilla_publish_total", `result="failed"`)
	res.PublishTime = time.Duration(m.sum("flotilla_publish_duration_seconds_sum") * float64(time.Second))
	res.Rendered, res.Reused = m.sum("flotilla_render_total", `result="rendered"`), m.sum("flotilla_render_total", `result="reused"`)
	res.Writes = map[string]writeStats{}
	for _, k := range []string{kindCluster, kindDeployment, kindSet} {
		res.Writes[k] = b.t.writeStats(k, p)
	}
	b.last = after
	return res, waitErr
}

// reconcileCounts are the reconciles of each of flotilla's controllers in m.
func reconcileCounts(m samples) map[string]float64 {
	out := map[string]float64{}
	for _, c := range []string{"packageset", "packagedeployment", "workloadcluster", "repository"} {
		out[c] = m.sum("controller_runtime_reconcile_total", `controller="`+c+`"`)
	}
	return out
}

// converge waits until every cluster converged, printing progress.
func (b *run) converge(ctx context.Context, res *Phase, t0, deadline time.Time) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	nextProgress := t0.Add(b.o.ProgressInterval)
	for {
		p := b.t.progress()
		res.Converged = p.converged
		done, last := p.converged == b.f.clusters, p.lastGain
		if b.waitFor != nil { // the kill phase: the live shards' clusters
			res.Converged = b.t.convergedAmong(b.waitFor)
			last = b.t.lastConverged(b.waitFor)
			done = !last.IsZero()
		}
		if done {
			res.Done, res.Time = true, max(last.Sub(t0), 0)
			b.progressLine(res.Name, t0, p)
			return nil
		}
		if err := b.ctrl.exited(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			res.Time = time.Since(t0)
			total := b.f.clusters
			if b.waitFor != nil {
				total = len(b.waitFor)
			}
			return fmt.Errorf("%s: %d of %d clusters converged within %s (controller log: %s)", res.Name, res.Converged, total, b.o.Timeout, b.ctrl.logs())
		}
		if time.Now().After(nextProgress) {
			b.progressLine(res.Name, t0, p)
			nextProgress = nextProgress.Add(b.o.ProgressInterval)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// settle waits until no tracked object changed for the quiet period, and returns when the last
// change was.
func (b *run) settle(deadline time.Time) time.Time {
	for {
		p := b.t.progress()
		if p.quiet >= quiet || time.Now().After(deadline) {
			return time.Now().Add(-p.quiet)
		}
		time.Sleep(quiet - p.quiet)
	}
}

func (b *run) progressLine(name string, t0 time.Time, p progress) {
	line := fmt.Sprintf("%-4s %6.1fs  converged %d/%d clusters  deployments %d/%d", name, time.Since(t0).Seconds(),
		p.converged, b.f.clusters, p.deployments, b.f.clusters*b.f.sets)
	if cpu, err := b.ctrl.cpu(); err == nil {
		line += fmt.Sprintf("  controller CPU %.1fs", cpu.total())
	}
	if rss, err := b.ctrl.peakRSS(); err == nil {
		line += fmt.Sprintf("  peak RSS %s", mib(rss))
	}
	b.progressf("%s", line)
}

func mib(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }
