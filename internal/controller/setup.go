// Package controller wires flotilla's reconcilers into a controller-runtime manager; the
// reconcilers live in one package per kind below it.
package controller

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/controller/index"
	"github.com/flotilla-dev/flotilla/internal/controller/namespaced"
	"github.com/flotilla-dev/flotilla/internal/controller/packagedeployment"
	"github.com/flotilla-dev/flotilla/internal/controller/packageset"
	"github.com/flotilla-dev/flotilla/internal/controller/packagevariant"
	"github.com/flotilla-dev/flotilla/internal/controller/repository"
	"github.com/flotilla-dev/flotilla/internal/controller/workloadcluster"
	"github.com/flotilla-dev/flotilla/internal/fleet"
	"github.com/flotilla-dev/flotilla/internal/intern"
	"github.com/flotilla-dev/flotilla/internal/ocipkg"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
	"github.com/flotilla-dev/flotilla/internal/remotecluster"
	"github.com/flotilla-dev/flotilla/internal/render"
	"github.com/flotilla-dev/flotilla/internal/specialize"
)

// Leader election (--leader-elect) keeps a Lease and records core/v1 Events about it, both in one
// namespace: config/rbac/leader_election_role.yaml grants them there, not in this ClusterRole.

// Options tune the reconcilers.
type Options struct {
	// HealthInterval is how often health watches are checked, and the longest wait between two
	// lists of a workload cluster that does not answer (default 10s).
	HealthInterval time.Duration
	// FactsInterval is how often the facts of workload clusters are read (default 5m).
	FactsInterval time.Duration
	// RootSyncCheck is how often the root sync objects are checked in workload clusters, and
	// applied again when they changed there (default 10m; tests shorten it).
	RootSyncCheck time.Duration
	// ExecFunctions names the executables variant pipelines may run as exec functions on the
	// controller's machine (--allow-exec-functions, see specialize.CheckExecAllowlist); none when
	// empty.
	ExecFunctions []string
	// StarlarkSandbox is the executable that serves "fn starlark" (the controller's own binary):
	// the built-in starlark function runs in a child process of it, within StarlarkMaxMemory
	// (see specialize.ExecPolicy.Sandbox). Empty: in the controller's process.
	StarlarkSandbox   string
	StarlarkMaxMemory int64
	// ObjectsGeneratorKinds are the kinds PackageSets' objects generators may read and watch
	// (--objects-generator-kinds, see packageset.ParseKinds); none when empty.
	ObjectsGeneratorKinds []schema.GroupKind
	// InsecureKubeconfigExec lets kubeconfig Secrets run exec and auth-provider plugins on the
	// controller's machine (--insecure-kubeconfig-exec); file references stay refused.
	InsecureKubeconfigExec bool
	// Workers is how many WorkloadClusters (publishes), PackageDeployments and Repositories
	// (polls) are reconciled at once, each (default DefaultWorkers). PackageSets have one worker.
	Workers int
	// WatchNamespaces, when not empty, confines the reads that go past the cache to these
	// namespaces (--watch-namespaces; the manager's cache is restricted with namespaced.Cache).
	WatchNamespaces []string
	// Shard, when not nil, is this replica's --watch-label-selector: it reconciles only the
	// objects whose labels match (the manager's cache holds only those, CacheOptions). Every
	// Repository is read, for a shard's sets may deploy from a catalog another shard polls.
	Shard labels.Selector
}

// DefaultWorkers is the default of Options.Workers: publishing waits on git round trips, so a
// few publishes in flight keep the CPU busy even on a small machine.
const DefaultWorkers = 4

// CacheOptions are the cache settings every manager running the reconcilers should use, with
// shard its Options.Shard (nil: every object). Before objects are stored, their managed fields are
// dropped (no reconciler reads them, and they are a large share of each cached deployment at fleet
// size) and the strings they repeat (namespace, set and cluster names, tags, commits, condition
// messages) are shared through one intern.Table per cache (docs/benchmarks.md, "Memory: cached
// objects share their strings"). A shard caches only the objects its selector matches, except
// Repositories: those are all read, so that a shard's sets and deployments can resolve a catalog
// that carries another shard's label (or none); the Repository reconciler polls only its shard's.
func CacheOptions(shard labels.Selector) cache.Options {
	strip, shared := cache.TransformStripManagedFields(), intern.NewTable(0)
	opts := cache.Options{DefaultTransform: func(obj any) (any, error) {
		obj, err := strip(obj)
		if err == nil {
			shared.Object(obj)
		}
		return obj, err
	}}
	if shard != nil && !shard.Empty() {
		opts.DefaultLabelSelector = shard
		opts.ByObject = map[client.Object]cache.ByObject{&v1alpha1.Repository{}: {Label: labels.Everything()}}
	}
	return opts
}

// Setup registers the indexes and every reconciler with mgr; all git I/O goes through store.
func Setup(ctx context.Context, mgr ctrl.Manager, store *pkgrepo.Store, opts Options) error {
	if err := index.Setup(ctx, mgr); err != nil {
		return fmt.Errorf("set up indexes: %w", err)
	}
	c := mgr.GetClient()
	reader := namespaced.Reader(mgr.GetAPIReader(), c, opts.WatchNamespaces)
	clients := &remotecluster.Clients{Policy: remotecluster.Policy{AllowExec: opts.InsecureKubeconfigExec}, Known: remotecluster.KnownKinds(render.WorkloadKinds()...)}
	workers := opts.Workers
	if workers <= 0 {
		workers = DefaultWorkers
	}
	// OCI repositories resolve through the registry, asked as often as a git mirror is refreshed.
	ttl := store.RefreshInterval
	if ttl <= 0 {
		ttl = pkgrepo.DefaultRefreshInterval
	}
	sources := fleet.Sources{Store: store, Registry: &ocipkg.Cache{TTL: ttl}}
	deployments := &packagedeployment.Reconciler{Client: c, APIReader: reader, Git: sources, Clients: clients, HealthInterval: opts.HealthInterval, Workers: workers}
	reconcilers := []interface{ SetupWithManager(ctrl.Manager) error }{
		&repository.Reconciler{Client: c, APIReader: reader, Git: store, Registry: sources.Registry, Shard: opts.Shard, Workers: workers},
		deployments,
		&packageset.Reconciler{Client: c, APIReader: reader, Git: sources, Events: mgr.GetEventRecorder("flotilla"), Exec: opts.execPolicy(), ObjectKinds: opts.ObjectsGeneratorKinds},
		&packagevariant.Reconciler{Client: c, APIReader: reader, Git: sources, Exec: opts.execPolicy()},
		&workloadcluster.Reconciler{Client: c, APIReader: reader, Git: sources, Events: mgr.GetEventRecorder("flotilla"), Clients: clients, Workers: workers, FactsInterval: opts.FactsInterval, RootSyncCheck: opts.RootSyncCheck,
			PinCorrected: deployments.Requeue},
	}
	for _, r := range reconcilers {
		if err := r.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	return nil
}

// execPolicy is how pipelines run functions: the exec allowlist, and starlark's sandbox.
func (o Options) execPolicy() specialize.ExecPolicy {
	return specialize.ExecPolicy{Allowed: o.ExecFunctions, Sandbox: o.StarlarkSandbox, SandboxMemory: o.StarlarkMaxMemory}
}
