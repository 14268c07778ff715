package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/githttp"
	"github.com/flotilla-dev/flotilla/internal/localaddr"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
	"github.com/flotilla-dev/flotilla/internal/scheme"
	"github.com/flotilla-dev/flotilla/internal/testenv"
)

// quiet is how long no tracked object may change before a phase counts as settled.
const quiet = 5 * time.Second

// run is one benchmark run.
type run struct {
	o      Options
	dir    string
	f      fleet
	report *Report

	git        *githttp.Server // nil over file://
	catalogDir string
	catalogURL string
	repos      string // the cluster repositories the controller writes
	env        *testenv.Env
	workload   *testenv.Env // the workload API server (--idle), nil without
	// serverPIDs are the management kube-apiserver and etcd, workloadPIDs the workload one's.
	serverPIDs, workloadPIDs map[int]bool
	kubeconfig               string
	c                        client.WithWatch
	t                        *tracker
	ctrl                     *controllers
	pprofAddr                string   // the controller's --pprof-bind-address (Options.IdleCPUProfile, HeapProfile)
	waitFor                  []string // the clusters a phase waits for; nil: all (the kill phase: the live shards')
	last                     snapshot // at the end of the previous phase
	start                    time.Time
}

func (b *run) run(ctx context.Context) error {
	b.start = time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer func() {
		if b.git != nil {
			_ = b.git.Close() // last: the controller, floor and local mode are done with it
		}
	}()
	if err := b.setup(ctx); err != nil {
		return err
	}
	defer func() {
		cancel() // the watches first, so they do not retry against a stopped server
		_ = b.env.Stop()
		if b.workload != nil {
			_ = b.workload.Stop()
		}
	}()
	r := b.report
	var err error
	profiled := b.profileAPIServer(ctx)
	r.Cold, err = b.phase(ctx, "cold", phaseCold, b.startController)
	if perr := <-profiled; perr != nil && err == nil {
		err = perr
	}
	if b.ctrl != nil {
		defer func() { _ = b.ctrl.stop() }() // on failure; a success stops it below
	}
	if err != nil {
		return err
	}
	if b.f.shards > 1 {
		if err := b.shardsAfterCold(ctx); err != nil {
			return err
		}
	}
	if r.Bump, err = b.phase(ctx, "bump", phaseBump, b.bump); err != nil {
		return err
	}
	if b.f.waves > 0 {
		if err := b.rolloutPhases(ctx); err != nil {
			return err
		}
	}
	var final func(set int) string // nil: the run ends at the bump's revisions
	if b.f.shards > 1 {
		if err := b.shardPhases(ctx); err != nil {
			return err
		}
		final = func(int) string { return "v1" } // the kill phase moved s-00 back
	}
	if b.o.Idle > 0 {
		if r.Idle, err = b.idle(ctx); err != nil {
			return err
		}
	}
	if r.PeakRSS, err = b.ctrl.peakRSS(); err != nil {
		return err
	}
	if err := b.ctrl.stop(); err != nil {
		return err
	}
	if r.CacheBytes, err = dirSize(b.cacheDir()); err != nil {
		return err
	}
	b.progressf("git fast-import of the same %d commits...", r.Cold.Git.Commits+r.Bump.Git.Commits)
	if r.FastImport, err = fastImport(ctx, b.repos, filepath.Join(b.dir, "fast-import"), b.f.clusterNames()); err != nil {
		return err
	}
	b.progressf("git floor: clone, commit and push one commit per cluster with the git CLI, %d at once...", b.o.Workers)
	r.Floor, err = b.gitFloor(ctx, filepath.Join(b.dir, "fast-import"), b.f.clusterNames(), b.o.Workers)
	if err != nil {
		return err
	}
	b.progressf("local mode (flotilla render) on the same fleet...")
	local := b.f
	local.shards = 0 // `flotilla render` is one process: no shard labels, one set each
	r.Local, err = runLocal(ctx, local, filepath.Join(b.dir, "local"), b.catalogURL, b.repos, b.url, final)
	return err
}

// setup creates the repositories and the catalog, starts the API server and the watches, and
// creates the fleet's objects.
func (b *run) setup(ctx context.Context) error {
	gitDir := filepath.Join(b.dir, "git")
	b.catalogDir, b.repos = repoDir(gitDir, "catalog"), filepath.Join(gitDir, "clusters")
	if err := b.serve(b.o.Progress); err != nil {
		return err
	}
	b.catalogURL = b.url(b.catalogDir)
	b.progressf("creating the catalog (%d packages × 2 revisions) and %d cluster repositories...", b.f.packages, b.f.clusters)
	if err := initRepos(gitDir, []string{"catalog"}); err != nil {
		return err
	}
	store := pkgrepo.NewStore(filepath.Join(b.dir, "bench-cache"))
	store.AllowLocal = true // the bench's repositories are local directories
	// Seeded through the directory: setup is not measured.
	if err := b.f.publishCatalog(ctx, store, "file://"+b.catalogDir); err != nil {
		return err
	}
	if err := initRepos(b.repos, b.f.clusterNames()); err != nil {
		return err
	}
	b.progressf("starting kube-apiserver and etcd...")
	env, err := testenv.Start()
	if err != nil {
		return fmt.Errorf("start the API server: %w", err)
	}
	b.env = env
	b.serverPIDs = childPIDs("kube-apiserver", "etcd")
	stop := func() {
		_ = env.Stop()
		if b.workload != nil {
			_ = b.workload.Stop()
		}
	}
	if err := b.connect(ctx); err != nil {
		stop()
		return err
	}
	objs := b.f.objects(b.catalogURL, func(c string) string { return b.url(repoDir(b.repos, c)) }, func(int) string { return "v1" })
	if b.f.health {
		secrets, err := b.startWorkload(ctx)
		if err != nil {
			stop()
			return err
		}
		objs = append(objs, secrets...)
	}
	b.progressf("creating %d objects...", len(objs))
	start := time.Now()
	if err := b.create(ctx, objs); err != nil {
		stop()
		return err
	}
	b.report.Create, b.report.Repositories = time.Since(start), b.f.clusters+1
	b.last, err = b.snapshot(ctx)
	return err
}

// connect writes the controller's kubeconfig and starts the bench's own client and watches.
func (b *run) connect(ctx context.Context) error {
	kc, err := b.env.AdminKubeconfig("flotilla-bench")
	if err != nil {
		return err
	}
	b.kubeconfig = filepath.Join(b.dir, "kubeconfig")
	if err := os.WriteFile(b.kubeconfig, kc, 0o600); err != nil {
		return err
	}
	cfg := rest.CopyConfig(b.env.Config)
	cfg.QPS = -1 // the bench must not be the bottleneck
	if b.c, err = client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()}); err != nil {
		return err
	}
	b.t = newTracker(b.f)
	return startWatches(ctx, b.c, b.t, b.o.Progress)
}

func (b *run) create(ctx context.Context, objs []client.Object) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := b.c.Create(ctx, ns); err != nil {
		return err
	}
	return parallelN(len(objs), 16, func(i int) error {
		if err := b.c.Create(ctx, objs[i]); err != nil {
			return fmt.Errorf("create %s %s: %w", objs[i].GetObjectKind().GroupVersionKind().Kind, objs[i].GetName(), err)
		}
		return nil
	})
}

func (b *run) startController() error {
	b.progressf("starting the controller: %v", b.o.Controller)
	if (b.o.IdleCPUProfile != "" || b.o.HeapProfile != "") && b.pprofAddr == "" {
		if err := b.choosePprofAddr(); err != nil {
			return err
		}
	}
	b.ctrl = &controllers{}
	for k := range max(b.f.shards, 1) {
		if err := b.startShard(k); err != nil {
			return err
		}
	}
	return nil
}

// startShard starts the controller of shard k (the only one without --shards), its log in
// controller.log, or controller-shard-K.log and a new file each restart.
func (b *run) startShard(k int) error {
	log := filepath.Join(b.dir, "controller.log")
	if b.f.shards > 1 {
		log = filepath.Join(b.dir, fmt.Sprintf("controller-%s-%d.log", b.f.shardName(k), len(b.ctrl.procs)))
	}
	var env []string
	if b.o.MemoryLimit != "" {
		env = append(env, "GOMEMLIMIT="+b.o.MemoryLimit)
	}
	// The controller's ports are free when chosen and bound a moment later; another process can
	// take one in between (an outgoing connection's ephemeral port is enough), and the controller
	// exits. Then it starts again on new ports.
	for attempt := 1; ; attempt++ {
		p, err := startController(b.o.Controller, b.controllerArgs(k), env, log)
		if err != nil {
			return err
		}
		err = p.serving(time.Minute)
		if err == nil {
			b.ctrl.procs = append(b.ctrl.procs, p)
			return nil
		}
		if !errors.Is(err, localaddr.ErrTaken) || attempt == localaddr.Attempts {
			return err
		}
		b.progressf("the controller could not bind its address, starting it again: %v", err)
		if b.pprofAddr != "" {
			if err := b.choosePprofAddr(); err != nil {
				return err
			}
		}
	}
}

// choosePprofAddr gives the controller a free --pprof-bind-address.
func (b *run) choosePprofAddr() error {
	addrs, err := localaddr.Free(1)
	if err != nil {
		return err
	}
	b.pprofAddr = addrs[0]
	return nil
}

// bump moves the first set's blueprint from v1 to v2.
func (b *run) bump() error { return b.move(0, "v1", "v2") }

// move changes set's blueprint revision from one revision to another, in every shard's copy.
func (b *run) move(set int, from, to string) error {
	b.t.want(b.f.set(set), b.f.pkg(set)+"/"+to)
	ctx := context.Background()
	for _, name := range b.f.setCopies(set) {
		ps := &v1alpha1.PackageSet{}
		if err := b.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, ps); err != nil {
			return err
		}
		before := ps.DeepCopy()
		ps.Spec.Package.Revision = to
		b.progressf("PackageSet %s %s %s→%s", ps.Name, ps.Spec.Package.Name, from, to)
		if err := b.c.Patch(ctx, ps, client.MergeFrom(before)); err != nil {
			return err
		}
	}
	return nil
}

func (b *run) cacheDir() string { return filepath.Join(b.dir, "controller-cache") }

func (b *run) progressf(format string, args ...any) {
	fmt.Fprintf(b.o.Progress, "[%6.1fs] "+format+"\n", append([]any{time.Since(b.start).Seconds()}, args...)...)
}

// scrapeAPIServer reads the management API server's metrics.
func (b *run) scrapeAPIServer(ctx context.Context) (samples, error) {
	return scrape(ctx, b.env)
}

// scrape reads the metrics of env's kube-apiserver.
func scrape(ctx context.Context, env *testenv.Env) (samples, error) {
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		return nil, err
	}
	data, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").Timeout(30 * time.Second).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("scrape kube-apiserver metrics: %w", err)
	}
	return parseSamples(bytes.NewReader(data))
}

// profileController writes a CPU profile of the controller over the next d to path (its
// --pprof-bind-address, which the bench sets only then), when path is set; the channel yields
// the outcome once written.
func (b *run) profileController(ctx context.Context, path string, d time.Duration) <-chan error {
	done := make(chan error, 1)
	if path == "" {
		done <- nil
		return done
	}
	go func() {
		seconds := max(int(d.Seconds()), 1)
		ctx, cancel := context.WithTimeout(ctx, d+time.Minute)
		defer cancel()
		data, err := b.pprofGet(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", seconds))
		if err != nil {
			done <- fmt.Errorf("profile the controller: %w", err)
			return
		}
		done <- os.WriteFile(path, data, 0o644)
	}()
	return done
}

// pprofGet reads path (and query) from the controller's --pprof-bind-address.
func (b *run) pprofGet(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+b.pprofAddr+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: %s", resp.Status, data)
	}
	return data, err
}

// profileAPIServer writes a CPU profile of kube-apiserver (its /debug/pprof/profile endpoint) over
// the start of the cold phase, when asked to; the channel yields the outcome once written.
func (b *run) profileAPIServer(ctx context.Context) <-chan error {
	done := make(chan error, 1)
	if b.o.APIServerCPUProfile == "" {
		done <- nil
		return done
	}
	seconds := b.o.APIServerProfileSeconds
	if seconds <= 0 {
		seconds = 60
	}
	go func() {
		cs, err := kubernetes.NewForConfig(b.env.Config)
		if err != nil {
			done <- err
			return
		}
		data, err := cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(seconds)).Timeout(time.Duration(seconds+30) * time.Second).DoRaw(ctx)
		if err != nil {
			done <- fmt.Errorf("profile kube-apiserver: %w", err)
			return
		}
		done <- os.WriteFile(b.o.APIServerCPUProfile, data, 0o644)
	}()
	return done
}
