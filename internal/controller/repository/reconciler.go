// Package repository reconciles Repository: it polls the git repository at spec.interval and
// records its head and a digest of its refs, so deployments that follow `latest` notice new tags.
package repository

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/conditions"
	"github.com/flotilla-dev/flotilla/internal/controller/enqueue"
	"github.com/flotilla-dev/flotilla/internal/controller/index"
	"github.com/flotilla-dev/flotilla/internal/fleet"
	"github.com/flotilla-dev/flotilla/internal/gitremote"
	"github.com/flotilla-dev/flotilla/internal/patch"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// Git is the part of pkgrepo.Store the reconciler uses.
type Git interface {
	RefreshWithin(ctx context.Context, r pkgrepo.Remote, maxAge time.Duration, after time.Time) (pkgrepo.Snapshot, time.Time, error)
}

// Reconciler reconciles Repository objects.
type Reconciler struct {
	Client client.Client
	// APIReader reads Secrets without caching them.
	APIReader client.Reader
	Git       Git
	// Registry resolves the packages of OCI repositories.
	Registry fleet.Registry
	// Shard, when not nil, is the replica's --watch-label-selector: the cache holds every
	// Repository (other shards' sets may read them), this reconciler polls only the matching ones.
	Shard labels.Selector
	// Workers is how many Repositories are polled at once: a poll waits on a git server (up to
	// the reconcile timeout when one hangs), and one tenant's slow server must not hold every
	// other tenant's polls, nor a fleet's 1,000 polls a minute queue behind one another.
	Workers int
}

// +kubebuilder:rbac:groups=flotilla.dev,resources=repositories,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=flotilla.dev,resources=repositories/status,verbs=patch
// +kubebuilder:rbac:groups=flotilla.dev,resources=workloadclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// Reconcile fetches the repository and records what it saw.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	repo := &v1alpha1.Repository{}
	if err := r.Client.Get(ctx, req.NamespacedName, repo); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !r.inShard(repo) {
		return ctrl.Result{}, nil // another shard's: polled and written by its replica
	}
	p := patch.New(r.Client, repo)
	defer func() {
		conditions.ObserveGeneration(repo.Status.Conditions, repo.Generation, &repo.Status.ObservedGeneration)
		if perr := p.Patch(ctx, repo); perr != nil && err == nil {
			err = perr
		}
	}()

	remote, err := gitremote.Remote(ctx, r.APIReader, repo)
	if err != nil {
		setFetchFailed(repo, err)
		return ctrl.Result{RequeueAfter: interval(repo)}, nil
	}
	if remote.OCI {
		r.reconcileOCI(ctx, repo, remote)
		return ctrl.Result{RequeueAfter: interval(repo)}, nil
	}
	// A publish to this repository fetched it within the interval (and pushed): the mirror
	// answers, and the next poll is one interval after that fetch. A refresh asked for (the
	// webhook receiver's annotation) after it fetches at once.
	every := interval(repo)
	snap, fetched, err := r.Git.RefreshWithin(ctx, remote, every, refreshRequested(repo))
	if err != nil {
		// Not returned (the condition carries it and the poll retries): logged once per poll.
		log.FromContext(ctx).Info("fetch failed", "error", err.Error())
		setFetchFailed(repo, err)
		return ctrl.Result{RequeueAfter: interval(repo)}, nil
	}
	repo.Status.Head, repo.Status.RefsDigest = snap.Head, snap.RefsDigest
	setFetched(repo, snap)
	repo.Status.ObservedGeneration = repo.Generation
	return ctrl.Result{RequeueAfter: max(time.Until(fetched.Add(every)), time.Second)}, nil
}

// refreshRequested is when the webhook receiver asked for a fetch (its annotation); an
// annotation that is not a time asks for one now.
func refreshRequested(repo *v1alpha1.Repository) time.Time {
	v, ok := repo.Annotations[v1alpha1.AnnotationRefreshRequested]
	if !ok {
		return time.Time{}
	}
	at, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Now()
	}
	return at
}

// reconcileOCI polls an OCI repository: a registry cannot list its packages, so it resolves the
// latest revision of each package the namespace's deployments read from it, and records a digest
// of those tags and digests (status.refsDigest), which brings the deployments that follow latest
// back when a new revision is pushed.
func (r *Reconciler) reconcileOCI(ctx context.Context, repo *v1alpha1.Repository, remote pkgrepo.Remote) {
	var list v1alpha1.PackageDeploymentList
	if err := r.Client.List(ctx, &list, client.InNamespace(repo.Namespace), client.MatchingFields{index.DeploymentRepository: repo.Name},
		client.UnsafeDisableDeepCopy); err != nil {
		setFetchFailed(repo, err)
		return
	}
	pkgs := map[string]bool{}
	for i := range list.Items {
		pkgs[strings.Trim(list.Items[i].Spec.Package.Name, "/")] = true
	}
	h := sha256.New()
	var latest []string
	var failed error
	for _, pkg := range slices.Sorted(maps.Keys(pkgs)) {
		rev, err := r.Registry.Resolve(ctx, remote, pkg, "latest")
		switch {
		case errors.Is(err, pkgrepo.ErrRevisionNotFound):
			continue // the deployment says so; the others still count
		case err != nil:
			// One package failing does not stop the others from moving; it is reported.
			if failed == nil {
				failed = fmt.Errorf("package %s: %w", pkg, err)
			}
			fmt.Fprintf(h, "%s\x00error\x00", pkg)
			continue
		}
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00", pkg, rev.Tag, rev.Commit)
		latest = append(latest, pkg+":"+rev.Tag)
	}
	repo.Status.Head, repo.Status.RefsDigest = "", hex.EncodeToString(h.Sum(nil))
	if failed != nil {
		setFetchFailed(repo, failed)
		return
	}
	setResolvedOCI(repo, latest)
}

func interval(repo *v1alpha1.Repository) time.Duration {
	if d := repo.Spec.Interval; d != nil && d.Duration > 0 {
		return d.Duration
	}
	return DefaultInterval
}

// DefaultInterval is how often a Repository without spec.interval is fetched.
const DefaultInterval = time.Minute

// SetupWithManager registers the reconciler: a Repository is reconciled when it changes, every
// interval, and when a WorkloadCluster published to it (its status then says what the cluster
// pushed, from the mirror, without a request).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	inShard := predicate.NewPredicateFuncs(r.inShard)
	return ctrl.NewControllerManagedBy(mgr).For(&v1alpha1.Repository{}, builder.WithPredicates(enqueue.NotStatusOnly(), inShard)).
		Watches(&v1alpha1.WorkloadCluster{}, handler.EnqueueRequestsFromMapFunc(clusterRepository), builder.WithPredicates(published())).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Workers, 1)}).
		Named("repository").Complete(r)
}

// inShard says whether this replica polls o (always without a shard).
func (r *Reconciler) inShard(o client.Object) bool {
	return r.Shard == nil || r.Shard.Matches(labels.Set(o.GetLabels()))
}

// clusterRepository is the Repository a WorkloadCluster publishes to.
func clusterRepository(_ context.Context, o client.Object) []reconcile.Request {
	c, ok := o.(*v1alpha1.WorkloadCluster)
	if !ok || c.Spec.Repository.Name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: c.Namespace, Name: c.Spec.Repository.Name}}}
}

// published passes a WorkloadCluster update whose published or proposed commit changed.
func published() predicate.Predicate {
	commits := func(o client.Object) [2]string {
		var out [2]string
		if c, ok := o.(*v1alpha1.WorkloadCluster); ok {
			if dp := c.Status.DeployedPackages; dp != nil {
				out[0] = dp.Commit
			}
			if p := c.Status.Proposal; p != nil {
				out[1] = p.Commit
			}
		}
		return out
	}
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return commits(e.ObjectOld) != commits(e.ObjectNew)
		},
	}
}
