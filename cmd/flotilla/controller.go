package main

import (
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/flotilla-dev/flotilla/internal/buildinfo"
	"github.com/flotilla-dev/flotilla/internal/controller"
	"github.com/flotilla-dev/flotilla/internal/controller/namespaced"
	"github.com/flotilla-dev/flotilla/internal/controller/packagedeployment"
	"github.com/flotilla-dev/flotilla/internal/controller/packageset"
	"github.com/flotilla-dev/flotilla/internal/dashboard"
	"github.com/flotilla-dev/flotilla/internal/metrics"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
	"github.com/flotilla-dev/flotilla/internal/scheme"
	"github.com/flotilla-dev/flotilla/internal/specialize"
	"github.com/flotilla-dev/flotilla/internal/webhook"
)

type controllerOptions struct {
	kubeconfig       string
	metricsAddr      string
	probeAddr        string
	pprofAddr        string
	leaderElection   bool
	leaderNS         string
	cacheDir         string
	allowLocal       bool
	healthInterval   time.Duration
	factsInterval    time.Duration
	watchSelector    string
	watchNamespaces  []string
	execFunctions    []string
	objectKinds      []string
	kubeconfigExec   bool
	workers          int
	kubeAPIQPS       float64
	webhookAddr      string
	kubeAPIBurst     int
	reconcileTimeout time.Duration
	gitMaxPackSize   string
	starlarkMemory   string
	dashboardAddr    string
	zap              zap.Options
}

func controllerCmd() *cobra.Command {
	o := controllerOptions{}
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the flotilla controller manager",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runController(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "path to a kubeconfig (default: $KUBECONFIG, then ~/.kube/config, then the pod's service account, as kubectl)")
	f.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint (0 disables it)")
	f.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "address of the /healthz and /readyz probes")
	f.BoolVar(&o.leaderElection, "leader-elect", false, "elect a leader, so only one replica reconciles at a time")
	f.StringVar(&o.leaderNS, "leader-election-namespace", "", "namespace of the leader election lease (default: the pod's namespace)")
	f.StringVar(&o.cacheDir, "cache-dir", filepath.Join(os.TempDir(), "flotilla-git"), "directory for the local git mirrors")
	f.BoolVar(&o.allowLocal, "allow-local-repositories", false, "let Repositories name file:// URLs and paths on the controller's machine (demos, benchmarks, tests); off, anyone who may create a Repository could read the controller's disk")
	f.DurationVar(&o.healthInterval, "health-interval", packagedeployment.DefaultHealthInterval, "health reads of workload clusters that have kubeConfigSecretRef: the longest wait between two lists of one that does not answer, and a ninth of how long a health watch may bring nothing (no change, no bookmark) before a metadata list checks the cluster (changes arrive through the watches at once)")
	f.DurationVar(&o.factsInterval, "facts-interval", 5*time.Minute, "how often the facts of workload clusters that have kubeConfigSecretRef are read (status.facts)")
	f.StringVar(&o.watchSelector, "watch-label-selector", "", "reconcile only objects with these labels (e.g. shard=a): run one replica per shard, each with its own selector")
	f.StringSliceVar(&o.watchNamespaces, "watch-namespaces", nil, "reconcile and read only in these namespaces (comma-separated; default all): the ServiceAccount then needs a Role in each, and no cluster-wide access")
	f.IntVar(&o.workers, "workers", controller.DefaultWorkers, "how many WorkloadClusters (publishes), PackageDeployments and Repositories (polls) are reconciled at once, each")
	f.StringSliceVar(&o.execFunctions, "allow-exec-functions", nil, "executables variant pipelines may run as exec: KRM functions on the controller's machine, each a command name (as found on PATH) or an absolute path; comma-separated or repeated (default none: blueprint repositories name them, trust each first)")
	f.StringSliceVar(&o.objectKinds, "objects-generator-kinds", nil, "kinds, as Kind.group (e.g. WorkloadCluster.infra.nephio.org), that PackageSets' objects generators may read and the controller watches for them; comma-separated or repeated (default none)")
	f.BoolVar(&o.kubeconfigExec, "insecure-kubeconfig-exec", false, "let kubeconfig Secrets of WorkloadClusters run exec and auth-provider plugins on the controller's machine (tenants write them: off by default; file paths stay refused)")
	f.StringVar(&o.webhookAddr, "webhook-bind-address", "", "address of the git push webhook receiver (POST /hook/NAMESPACE/REPOSITORY, verified with the Repository's spec.webhook token); empty (default): off")
	f.Float64Var(&o.kubeAPIQPS, "kube-api-qps", -1, "client-side limit of requests per second to the API server; -1 (default): none, the API server's Priority and Fairness queues flotilla's requests (a client-side limit of 20/s slows a 300-cluster cold start 5×)")
	f.IntVar(&o.kubeAPIBurst, "kube-api-burst", 1000, "requests over --kube-api-qps allowed in a burst (with a positive --kube-api-qps)")
	f.StringVar(&o.dashboardAddr, "dashboard-bind-address", "", "address of the read-only web dashboard (as flotilla dashboard's, of every namespace the controller watches; no authentication: bind 127.0.0.1:PORT and use kubectl port-forward); default off")
	f.StringVar(&o.pprofAddr, "pprof-bind-address", "", "address of Go's /debug/pprof endpoints (CPU and heap profiles; no authentication: bind 127.0.0.1:PORT); default off")
	f.DurationVar(&o.reconcileTimeout, "reconcile-timeout", 2*time.Minute, "bound on one reconcile, git round trips included: a hanging git server becomes a retried error")
	f.StringVar(&o.starlarkMemory, "starlark-max-memory", "128Mi", "the memory a pipeline's starlark script may use: scripts run one at a time, each in a child process of this binary, stopped past it (the function fails, saying so); the controller keeps this much of its GOMEMLIMIT free for it, and refuses to start when that is half of it or more. 0: scripts run in the controller's own process, unbounded (only where every tenant is trusted)")
	f.StringVar(&o.gitMaxPackSize, "git-max-pack-size", "1Gi", "the most read of one answer of a git server other than a ref advertisement (those stop at 32Mi): a pack, a push's report. Tenants name the servers: past it the exchange is cut and the Repository says so (RepositoryTooLarge). A mirror whose packs grow past twice this is fetched anew")
	goflags := flag.NewFlagSet("zap", flag.ContinueOnError)
	o.zap.BindFlags(goflags)
	f.AddGoFlagSet(goflags)
	return cmd
}

func runController(ctx context.Context, o controllerOptions) error {
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&o.zap), lazyFields()))
	// Flags first: a typo must not wait for an API server.
	if err := specialize.CheckExecAllowlist(o.execFunctions); err != nil {
		return cannotRun(fmt.Errorf("--allow-exec-functions: %w", err))
	}
	objectKinds, err := packageset.ParseKinds(o.objectKinds)
	if err != nil {
		return cannotRun(fmt.Errorf("--objects-generator-kinds: %w", err))
	}
	namespaces, err := namespaced.Parse(o.watchNamespaces)
	if err != nil {
		return cannotRun(fmt.Errorf("--watch-namespaces: %w", err))
	}
	sel, err := labels.Parse(o.watchSelector)
	if err != nil {
		return cannotRun(fmt.Errorf("--watch-label-selector: %w", err))
	}
	maxPack, err := parseSize(o.gitMaxPackSize)
	if err != nil {
		return cannotRun(fmt.Errorf("--git-max-pack-size: %w", err))
	}
	var starlarkMemory int64
	var self string // the starlark sandbox: empty runs scripts in this process
	if o.starlarkMemory != "0" {
		if starlarkMemory, err = parseSize(o.starlarkMemory); err != nil {
			return cannotRun(fmt.Errorf("--starlark-max-memory: %w", err))
		}
		if self, err = os.Executable(); err != nil {
			return cannotRun(fmt.Errorf("find this binary, which runs starlark scripts: %w", err))
		}
		if err := reserveMemory(starlarkMemory); err != nil {
			return cannotRun(err)
		}
	}
	api, err := apiServer(ctx, "--kubeconfig", o.kubeconfig)
	if err != nil {
		return err
	}
	build := buildinfo.Get()
	ctrl.Log.Info("starting flotilla", "version", build.Version, "commit", build.Commit, "date", build.Date,
		"goVersion", build.GoVersion, "platform", build.Platform, "apiServer", api.REST.Host, "kubeconfig", api.Source)
	metrics.SetBuildInfo(build)
	cfg := api.REST
	// One rule however the kubeconfig was found (flag, $KUBECONFIG, in-cluster): the flags'.
	cfg.QPS, cfg.Burst = float32(o.kubeAPIQPS), o.kubeAPIBurst
	// client-go's request counter keeps this API server's host and counts the workload clusters'
	// requests under one label value, so /metrics does not grow with the fleet.
	server, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return err
	}
	metrics.FoldWorkloadHosts(server.Host)
	leaderID := "flotilla.flotilla.dev"
	if o.watchSelector != "" || len(namespaces) > 0 {
		// One leader per shard: replicas of different shards must not wait for each other.
		shard := sel.String()
		if len(namespaces) > 0 {
			shard += " namespaces=" + strings.Join(namespaces, ",")
		}
		sum := sha256.Sum256([]byte(shard))
		leaderID = fmt.Sprintf("flotilla-%x.flotilla.dev", sum[:4])
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Cache: namespaced.Cache(controller.CacheOptions(sel), namespaces),
		// A git server that hangs must not hold a worker forever.
		Controller:              config.Controller{ReconciliationTimeout: o.reconcileTimeout},
		Scheme:                  scheme.New(),
		Metrics:                 metricsserver.Options{BindAddress: o.metricsAddr},
		HealthProbeBindAddress:  o.probeAddr,
		PprofBindAddress:        o.pprofAddr,
		LeaderElection:          o.leaderElection,
		LeaderElectionID:        leaderID,
		LeaderElectionNamespace: o.leaderNS,
	})
	if err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	if o.webhookAddr != "" {
		if err := mgr.Add(webhook.Server(o.webhookAddr, &webhook.Handler{Client: mgr.GetClient(), Secrets: mgr.GetAPIReader()})); err != nil {
			return err
		}
	}
	store := pkgrepo.NewStore(o.cacheDir)
	store.AllowLocal = o.allowLocal
	store.MaxPackBytes = maxPack
	ctx = ctrl.SetupSignalHandler()
	if err := controller.Setup(ctx, mgr, store, controller.Options{WatchNamespaces: namespaces, HealthInterval: o.healthInterval, FactsInterval: o.factsInterval, ExecFunctions: o.execFunctions, StarlarkSandbox: self, StarlarkMaxMemory: starlarkMemory, ObjectsGeneratorKinds: objectKinds, Shard: sel, Workers: o.workers, InsecureKubeconfigExec: o.kubeconfigExec}); err != nil {
		return err
	}
	if o.dashboardAddr != "" {
		h := dashboard.New(mgr.GetCache(), dashboard.Options{Hosts: dashboard.HostsFor(o.dashboardAddr)})
		if err := mgr.Add(&dashboard.Server{Addr: o.dashboardAddr, Handler: h}); err != nil {
			return err
		}
	}
	return mgr.Start(ctx)
}

// reserveMemory lowers the controller's GOMEMLIMIT, when it has one (the manifests set it to the
// container's memory limit), by the memory of one sandboxed starlark script, whose child process
// counts in the same container: the collector then keeps the controller's heap below the limit by
// that much. A reservation of half the limit or more is refused.
func reserveMemory(script int64) error {
	limit := debug.SetMemoryLimit(-1)
	if limit == math.MaxInt64 {
		return nil
	}
	if script >= limit/2 {
		return fmt.Errorf("--starlark-max-memory: %d bytes is half the controller's GOMEMLIMIT (%d bytes) or more: raise the container's memory limit, or lower --starlark-max-memory", script, limit)
	}
	debug.SetMemoryLimit(limit - script)
	return nil
}

// parseSize reads a positive byte count as a Kubernetes quantity: 1Gi, 512Mi, 1000000.
func parseSize(s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a quantity (such as 512Mi or 2Gi): %w", s, err)
	}
	n, ok := q.AsInt64()
	if !ok || n <= 0 {
		return 0, fmt.Errorf("%q is not a positive whole number of bytes", s)
	}
	return n, nil
}
