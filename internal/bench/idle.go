package bench

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/internal/controller/packagedeployment"
	repositoryctrl "github.com/flotilla-dev/flotilla/internal/controller/repository"
	"github.com/flotilla-dev/flotilla/internal/githttp"
	"github.com/flotilla-dev/flotilla/internal/metrics"
	"github.com/flotilla-dev/flotilla/internal/testenv"
)

// The idle figures are measured against the controller's default --health-interval and a
// Repository's default spec.interval: the bench sets neither.
const (
	defaultHealthInterval = packagedeployment.DefaultHealthInterval
	defaultRepoInterval   = repositoryctrl.DefaultInterval
)

// Idle is what the controller did over Options.Idle after the fleet converged, with nothing
// changing and health read back from every cluster.
type Idle struct {
	Duration time.Duration
	// ControllerCPU is the controller's (its git children apart); ServerCPU that of the
	// management kube-apiserver + etcd, WorkloadCPU that of the workload API server.
	ControllerCPU, ServerCPU, WorkloadCPU cpuTimes
	// APIRequests and WorkloadRequests are the controller's requests to the management API
	// server and to the workload API server, by method (rest_client_requests_total).
	APIRequests, WorkloadRequests map[string]float64
	// RequestHosts are the host labels of the controller's rest_client_requests_total at the end
	// of the window: the management API server's address and, for every workload cluster,
	// metrics.WorkloadClustersHost.
	RequestHosts []string
	// WorkloadWatches are the watches open on the workload API server at the end of the window
	// (health: one per cluster, kind and namespace).
	WorkloadWatches float64
	// ServerWrites are the writes the management API server served (every client's: the
	// controller's and the API server's own), by verb and resource (apiserver_request_total).
	ServerWrites map[string]float64
	// Requests and CatalogRequests are the git requests to the cluster repositories and the
	// catalog (zero over file://).
	Requests, CatalogRequests githttp.Requests
	Writes                    map[string]writeStats
	Reconciles                map[string]float64
	Published, Unchanged      float64
	Rendered, Reused          float64
	// LiveHeap is the controller's live heap at the end of the window (Options.HeapProfile; 0
	// when not measured).
	LiveHeap int64
	// Goroutines and StackBytes are the controller's goroutines and the memory of their stacks
	// at the end of the window (go_goroutines, go_memstats_stack_inuse_bytes): memory a heap
	// profile does not show, and which grows with the clusters followed for health.
	Goroutines, StackBytes float64
}

// startWorkload starts the workload API server every cluster's kubeconfig points at, with a
// namespace per cluster for its Flux objects, and returns each cluster's kubeconfig Secret. Each
// kubeconfig reaches the server at an address of its own (loopbackAddress), so that every
// cluster has a connection of its own, as a fleet's clusters do: one address for all would let
// client-go carry every cluster's watch over one HTTP/2 connection.
func (b *run) startWorkload(ctx context.Context) ([]client.Object, error) {
	b.progressf("starting the workload API server (health read back from %d clusters)...", b.f.clusters)
	env, err := testenv.StartOnEveryLoopbackAddress()
	if err != nil {
		return nil, fmt.Errorf("start the workload API server: %w", err)
	}
	b.workload = env
	b.workloadPIDs = map[int]bool{}
	for pid := range childPIDs("kube-apiserver", "etcd") {
		if !b.serverPIDs[pid] {
			b.workloadPIDs[pid] = true
		}
	}
	kc, err := env.AdminKubeconfig("flotilla-workload")
	if err != nil {
		return nil, err
	}
	names := b.f.clusterNames()
	err = parallelN(len(names), 16, func(i int) error {
		return env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: names[i]}})
	})
	if err != nil {
		return nil, fmt.Errorf("create the clusters' namespaces on the workload API server: %w", err)
	}
	secrets := make([]client.Object, len(names))
	for i, name := range names {
		data, err := atAddress(kc, loopbackAddress(i))
		if err != nil {
			return nil, err
		}
		secrets[i] = &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: workloadSecret(name), Namespace: namespace},
			Data:       map[string][]byte{"value": data},
		}
	}
	return secrets, nil
}

// loopbackAddress is the address cluster i reaches the workload API server at: 127.0.0.2 and
// on, 250 to a /24.
func loopbackAddress(i int) string {
	return fmt.Sprintf("127.0.%d.%d", i/250, 2+i%250)
}

// atAddress returns kubeconfig with its server at host instead, the server's certificate checked
// for the name it has (localhost).
func atAddress(kubeconfig []byte, host string) ([]byte, error) {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, err
	}
	for _, c := range cfg.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil {
			return nil, err
		}
		u.Host = net.JoinHostPort(host, u.Port())
		c.Server, c.TLSServerName = u.String(), "localhost"
	}
	return clientcmd.Write(*cfg)
}

// IdleProfileTail is how long the idle profile runs after the window, so that its encoding falls
// outside the window's CPU figure.
const IdleProfileTail = 10 * time.Second

// idle waits until the writes settled, then measures Options.Idle of nothing changing.
func (b *run) idle(ctx context.Context) (Idle, error) {
	res := Idle{Duration: b.o.Idle}
	// Health read after the last phase may still change a condition once (a new revision's sync
	// objects are read for the first time): one health interval and a quiet period first.
	deadline := time.Now().Add(b.o.Timeout)
	b.settle(deadline)
	time.Sleep(defaultHealthInterval)
	b.settle(deadline)
	b.t.setPhase(phaseIdle)
	before, err := b.snapshot(ctx)
	if err != nil {
		return res, err
	}
	serverBefore, err := b.scrapeAPIServer(ctx)
	if err != nil {
		return res, err
	}
	// The profile runs past the window: the controller encodes it when it ends, and that work is
	// the profiler's, not the fleet's, so the window's CPU is read before it.
	profiled := b.profileController(ctx, b.o.IdleCPUProfile, b.o.Idle+IdleProfileTail)
	b.progressf("idle: %s with nothing changing...", b.o.Idle)
	t0 := time.Now()
	tick := time.NewTicker(b.o.ProgressInterval)
	defer tick.Stop()
	for time.Since(t0) < b.o.Idle {
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-tick.C:
		case <-time.After(b.o.Idle - time.Since(t0)):
		}
		if err := b.ctrl.exited(); err != nil {
			return res, err
		}
		if cpu, err := b.ctrl.cpu(); err == nil && time.Since(t0) < b.o.Idle {
			b.progressf("idle %5.0fs/%.0fs  controller CPU %.1fs in the window", time.Since(t0).Seconds(), b.o.Idle.Seconds(), cpu.sub(before.cpu).total())
		}
	}
	after, err := b.snapshot(ctx)
	if err != nil {
		return res, err
	}
	res.Duration = time.Since(t0)
	serverAfter, err := b.scrapeAPIServer(ctx)
	if err != nil {
		return res, err
	}
	workload, err := scrape(ctx, b.workload)
	if err != nil {
		return res, err
	}
	// Only the controller watches the workload API server.
	res.WorkloadWatches = workload.sum("apiserver_longrunning_requests", `verb="WATCH"`)
	res.ServerWrites = map[string]float64{}
	for _, verb := range []string{"POST", "PUT", "PATCH", "DELETE"} {
		for k, v := range serverAfter.delta(serverBefore).by("apiserver_request_total", []string{"verb", "resource", "subresource"}, `verb="`+verb+`"`) {
			if v > 0 {
				res.ServerWrites[k] = v
			}
		}
	}
	if err := <-profiled; err != nil {
		return res, err
	}
	if res.LiveHeap, err = b.heapProfile(ctx, "idle"); err != nil {
		return res, err
	}
	res.ControllerCPU, res.ServerCPU, res.WorkloadCPU = after.cpu.sub(before.cpu), after.server.sub(before.server), after.workload.sub(before.workload)
	res.Requests, res.CatalogRequests = after.requests.Sub(before.requests), after.catalog.Sub(before.catalog)
	res.Goroutines, res.StackBytes = after.metrics.sum("go_goroutines"), after.metrics.sum("go_memstats_stack_inuse_bytes")
	m := after.metrics.delta(before.metrics)
	res.APIRequests = m.byMethod("rest_client_requests_total", `host="`+hostOf(b.env)+`"`)
	res.WorkloadRequests = m.byMethod("rest_client_requests_total", `host="`+metrics.WorkloadClustersHost+`"`)
	res.RequestHosts = slices.Sorted(maps.Keys(after.metrics.by("rest_client_requests_total", []string{"host"})))
	res.Reconciles = reconcileCounts(m)
	res.Published = m.sum("flotilla_publish_total", `result="published"`)
	res.Unchanged = m.sum("flotilla_publish_total", `result="unchanged"`)
	res.Rendered, res.Reused = m.sum("flotilla_render_total", `result="rendered"`), m.sum("flotilla_render_total", `result="reused"`)
	res.Writes = map[string]writeStats{}
	for _, k := range []string{kindCluster, kindDeployment, kindSet} {
		res.Writes[k] = b.t.writeStats(k, phaseIdle)
	}
	b.last = after
	return res, nil
}

// hostOf is host:port of env's API server, as client-go's metrics label it.
func hostOf(env *testenv.Env) string {
	if env == nil {
		return ""
	}
	if u, err := url.Parse(env.Config.Host); err == nil && u.Host != "" {
		return u.Host
	}
	return env.Config.Host
}

// byMethod sums the series of name whose labels include every one of labels, by their method
// label.
func (m samples) byMethod(name string, labels ...string) map[string]float64 {
	return m.by(name, []string{"method"}, labels...)
}

// by sums the series of name whose labels include every one of labels, by the values of the keys
// given (joined by spaces, a missing or empty one left out).
func (m samples) by(name string, keys []string, labels ...string) map[string]float64 {
	out := map[string]float64{}
	for rest, v := range m.matching(name, labels) {
		var parts []string
		for _, k := range keys {
			if val := labelValue(rest, k); val != "" {
				parts = append(parts, val)
			}
		}
		if len(parts) > 0 {
			out[strings.Join(parts, " ")] += v
		}
	}
	return out
}

// labelValue is the value of label key in a series' labels (`a="1",b="2"}`), "" without it.
func labelValue(labels, key string) string {
	for _, sep := range []string{"", ","} {
		prefix := sep + key + `="`
		if sep == "" && !strings.HasPrefix(labels, prefix) {
			continue
		}
		if i := strings.Index(labels, prefix); i >= 0 {
			v, _, _ := strings.Cut(labels[i+len(prefix):], `"`)
			return v
		}
	}
	return ""
}

func total(m map[string]float64) float64 {
	var t float64
	for _, v := range m {
		t += v
	}
	return t
}

// print writes the idle figures against the targets of issue 24.
func (r *Report) printIdle(w io.Writer) error {
	d := r.Idle
	secs := d.Duration.Seconds()
	if secs <= 0 {
		return nil
	}
	health := "health read back from every cluster (one workload API server, reached at an address and over a connection per cluster, a namespace per cluster)"
	if r.Transport != TransportHTTP {
		health = "health not read back (Flux cannot sync file:// repositories: run --transport http for it)"
	}
	fmt.Fprintf(w, "\nidle %s after convergence, %s, controller defaults (--health-interval %s, Repository spec.interval %s)\n",
		d.Duration.Round(time.Second), health, defaultHealthInterval, defaultRepoInterval)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FIGURE\tMEASURED\tTARGET")
	fmt.Fprintf(tw, "controller CPU, %% of one core (self + git)\t%.2f %% (%.1f + %.1f s)\t≤ 5 %%\n",
		100*d.ControllerCPU.total()/secs, d.ControllerCPU.Self, d.ControllerCPU.Children)
	fmt.Fprintf(tw, "requests/s to the management API server\t%.2f (%s)\t≤ 20\n", total(d.APIRequests)/secs, methods(d.APIRequests))
	intervals := secs / defaultHealthInterval.Seconds()
	fmt.Fprintf(tw, "requests per workload cluster per health interval\t%.2f (%s)\t≤ 1\n",
		total(d.WorkloadRequests)/float64(r.Clusters)/intervals, methods(d.WorkloadRequests))
	fmt.Fprintf(tw, "health watches open on the workload API server\t%.0f (%d clusters)\t\n", d.WorkloadWatches, r.Clusters)
	if r.Transport == TransportHTTP {
		all := d.Requests.Add(d.CatalogRequests)
		repoIntervals := secs / defaultRepoInterval.Seconds()
		fmt.Fprintf(tw, "git requests per Repository per spec.interval\t%.2f (%d requests: %s over %d repositories)\t≤ 1\n",
			float64(all.Total())/float64(r.Repositories)/repoIntervals, all.Total(), requestsPer(all, 1), r.Repositories)
	} else {
		fmt.Fprintf(tw, "git requests per Repository per spec.interval\t- (file://)\t≤ 1\n")
	}
	fmt.Fprintf(tw, "writes the management API server served (all clients)\t%s\t\n", methods(d.ServerWrites))
	var writes []string
	for _, k := range []string{kindCluster, kindDeployment, kindSet} {
		s := d.Writes[k]
		writes = append(writes, fmt.Sprintf("%s %d", k, s.Status+s.Meta+s.Spec))
	}
	fmt.Fprintf(tw, "writes to flotilla's objects\t%s\t0\n", strings.Join(writes, ", "))
	fmt.Fprintf(tw, "deployed-packages publishes (published, unchanged)\t%.0f, %.0f\t0 published\n", d.Published, d.Unchanged)
	fmt.Fprintf(tw, "deployed-packages renders (rendered, reused)\t%.0f, %.0f\t\n", d.Rendered, d.Reused)
	c := d.Reconciles
	fmt.Fprintf(tw, "reconciles set/deployment/cluster/repo\t%.0f/%.0f/%.0f/%.0f\t\n", c["packageset"], c["packagedeployment"], c["workloadcluster"], c["repository"])
	fmt.Fprintf(tw, "kube-apiserver + etcd CPU, %% of one core: management, workload\t%.2f %%, %.2f %%\t\n",
		100*d.ServerCPU.total()/secs, 100*d.WorkloadCPU.total()/secs)
	if d.LiveHeap > 0 {
		fmt.Fprintf(tw, "controller live heap at the end of the window\t%s\t\n", mib(d.LiveHeap))
	}
	if d.Goroutines > 0 && r.Clusters > 0 {
		fmt.Fprintf(tw, "controller goroutines and their stacks at the end of the window\t%.0f, %s (%.0f KiB per cluster)\t\n",
			d.Goroutines, mib(int64(d.StackBytes)), d.StackBytes/1024/float64(r.Clusters))
	}
	return tw.Flush()
}

func methods(m map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, m[k]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
