// Package packagedeployment reconciles PackageDeployment: it resolves the package revision the
// deployment asks for into an exact pin (status.resolved), reports whether the cluster's
// published deployed-packages carries that pin, and holds a deleted deployment until a
// deployed-packages revision without it is published. Publishing itself is the WorkloadCluster
// reconciler's job.
package packagedeployment

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/conditions"
	"github.com/flotilla-dev/flotilla/internal/controller/index"
	"github.com/flotilla-dev/flotilla/internal/fleet"
	"github.com/flotilla-dev/flotilla/internal/gitremote"
	"github.com/flotilla-dev/flotilla/internal/health"
	"github.com/flotilla-dev/flotilla/internal/patch"
	"github.com/flotilla-dev/flotilla/internal/remotecluster"
	"github.com/flotilla-dev/flotilla/internal/render"
)

// Reconciler reconciles PackageDeployment objects.
type Reconciler struct {
	Client client.Client
	// APIReader reads Secrets without caching them.
	APIReader client.Reader
	Git       fleet.Git
	// Clients reach workload clusters with spec.kubeConfigSecretRef, for health feedback.
	Clients *remotecluster.Clients
	// HealthInterval is how often a workload cluster's health watches are checked, and the
	// longest wait between two lists of one that does not answer (default 10s): one watch per
	// cluster, kind and namespace, and a reconcile only for what changed.
	HealthInterval time.Duration
	// Workers is how many deployments are reconciled at once (at least 1).
	Workers int

	deferredMu sync.Mutex
	deferred   map[client.ObjectKey]deferral

	// poller follows each published deployment's sync object in its workload cluster and brings
	// the deployment back when it changes: health is read without a reconcile per interval.
	poller *remotecluster.Poller
	// again brings a deployment back (the poller's notices, Requeue).
	again chan event.GenericEvent
}

// Requeue brings the deployment key back to its reconciler, as an event would: for a change this
// reconciler does not watch (its cluster corrected the pin it reported). It waits until the
// reconciler takes it, or ctx ends.
func (r *Reconciler) Requeue(ctx context.Context, key client.ObjectKey) {
	pd := &v1alpha1.PackageDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	select {
	case r.again <- event.GenericEvent{Object: pd}:
	case <-ctx.Done():
	}
}

// +kubebuilder:rbac:groups=flotilla.dev,resources=packagedeployments,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=flotilla.dev,resources=packagedeployments/status,verbs=patch
// +kubebuilder:rbac:groups=flotilla.dev,resources=workloadclusters;repositories,verbs=get;list;watch

// Reconcile resolves the deployment's pin and reports where it is published.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	// Only a deployment whose health was just read is followed in its workload cluster.
	followed := false
	defer func() {
		if !followed {
			r.poller.Unwatch(req.NamespacedName)
		}
	}()
	pd := &v1alpha1.PackageDeployment{}
	if err := r.Client.Get(ctx, req.NamespacedName, pd); err != nil {
		if apierrors.IsNotFound(err) {
			r.deferredMu.Lock()
			delete(r.deferred, req.NamespacedName)
			r.deferredMu.Unlock()
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	p := patch.New(r.Client, pd)
	before := pd.Status.DeepCopy()
	defer func() {
		conditions.ObserveGeneration(pd.Status.Conditions, pd.Generation, &pd.Status.ObservedGeneration)
		if perr := p.Patch(ctx, pd); perr != nil && err == nil {
			err = perr
		}
	}()

	cluster, err := r.cluster(ctx, pd)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !pd.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, pd, cluster)
	}
	controllerutil.AddFinalizer(pd, v1alpha1.FinalizerPackageDeployment)
	if cluster == nil {
		setClusterMissing(pd)
		return ctrl.Result{}, nil
	}
	if err := render.Accepts(cluster, pd); err != nil {
		// The cluster's publish leaves it out by the same check: nothing to resolve.
		setNotAccepted(pd, err)
		return ctrl.Result{}, nil
	}
	if !pd.Spec.Suspend {
		if err := r.resolve(ctx, pd, cluster); err != nil {
			// A pin resolved earlier for this generation, whose report waited for the publish,
			// may already be published: keep it, as any pin is kept on error.
			if resolved := r.deferredPin(pd); resolved != nil {
				pd.Status.Resolved = resolved
			}
			// "retrying" means it: the work queue retries with backoff, whatever else happens.
			return ctrl.Result{}, setResolveFailed(pd, err)
		}
	}
	pd.Status.SyncObject = ptr(render.SyncObjectRef(cluster, pd))
	setPublication(pd, before, cluster)
	get := r.deployment(ctx, pd.Namespace)
	if err := fleet.CheckDependencies(pd, get); err != nil {
		if !errors.Is(err, fleet.ErrDependencyNotFound) && !errors.Is(err, fleet.ErrDependencyOtherCluster) {
			return ctrl.Result{}, err
		}
		setDependencyInvalid(pd, err)
	} else if dep, err := waitingFor(pd, cluster, get); err != nil {
		return ctrl.Result{}, err
	} else if dep != "" {
		setWaitingForDependency(pd, dep, cluster)
	} else if wait, ok := r.deferStatus(pd, before, cluster); ok {
		// The cluster is about to publish this pin: report once, when it has.
		pd.Status = *before
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	if cluster.Spec.KubeConfigSecretRef == nil || pd.Status.DeployedPackagesRevision == 0 {
		return ctrl.Result{}, nil
	}
	ref := pd.Status.SyncObject
	target := remotecluster.Target{GVK: schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind), Namespace: ref.Namespace, Name: ref.Name}
	h, seen := r.health(ctx, pd, cluster, target)
	setSynced(pd, h)
	// No requeue: the poller watches the cluster's sync objects and brings this deployment back
	// when its sync object is not what was just read, or the cluster stops (or resumes)
	// answering. Health is a function of that object alone.
	target.Seen = seen
	r.poller.Watch(req.NamespacedName, cluster, target)
	followed = true
	return ctrl.Result{}, nil
}

// statusDeferral is how long a new (or changed) deployment waits for its cluster to publish its
// pin before reporting that it waits: one status write per change instead of two, as long as
// publishing is quick.
const statusDeferral = 30 * time.Second

// deferStatus reports whether the status write of a deployment whose pin the cluster has not
// published yet can wait for the publish (its event brings the deployment back), and for how long
// at most. Only the first report of a generation waits, only for a cluster that publishes by
// itself (Automatic, not suspended, not stalled), and at most statusDeferral. A deployment held
// back for a dependency reports at once: the cluster will not publish it yet.
func (r *Reconciler) deferStatus(pd *v1alpha1.PackageDeployment, before *v1alpha1.PackageDeploymentStatus, cluster *v1alpha1.WorkloadCluster) (time.Duration, bool) {
	key := client.ObjectKeyFromObject(pd)
	r.deferredMu.Lock()
	defer r.deferredMu.Unlock()
	published := meta.IsStatusConditionTrue(pd.Status.Conditions, v1alpha1.ConditionPublished)
	c := meta.FindStatusCondition(pd.Status.Conditions, v1alpha1.ConditionPublished)
	held := c != nil && c.Reason == reasonWaitingForDependency
	if published || held || pd.Status.Resolved == nil || conditions.Observed(before.Conditions, pd.Generation) ||
		cluster.Spec.Approval == v1alpha1.ApprovalManual || cluster.Spec.Suspend ||
		meta.IsStatusConditionTrue(cluster.Status.Conditions, v1alpha1.ConditionStalled) {
		delete(r.deferred, key)
		return 0, false
	}
	d, ok := r.deferred[key]
	if !ok || d.generation != pd.Generation {
		d = deferral{generation: pd.Generation, since: time.Now(), resolved: pd.Status.Resolved.DeepCopy()}
		if r.deferred == nil {
			r.deferred = map[client.ObjectKey]deferral{}
		}
		r.deferred[key] = d
	}
	left := statusDeferral - time.Since(d.since)
	if left <= 0 {
		delete(r.deferred, key)
		return 0, false
	}
	return left, true
}

type deferral struct {
	generation int64
	since      time.Time
	resolved   *v1alpha1.ResolvedRevision // the pin whose report waits
}

// deferredPin returns the pin resolved for pd's current generation whose report is waiting, nil
// when there is none.
func (r *Reconciler) deferredPin(pd *v1alpha1.PackageDeployment) *v1alpha1.ResolvedRevision {
	r.deferredMu.Lock()
	defer r.deferredMu.Unlock()
	if d, ok := r.deferred[client.ObjectKeyFromObject(pd)]; ok && d.generation == pd.Generation {
		return d.resolved.DeepCopy()
	}
	return nil
}

// health reads the deployment's sync object (target) back from the workload cluster and
// evaluates it against the pin; seen is what the read said, for the poller. An unreachable
// cluster is a result, not an error: it becomes the condition.
func (r *Reconciler) health(ctx context.Context, pd *v1alpha1.PackageDeployment, cluster *v1alpha1.WorkloadCluster, target remotecluster.Target) (_ health.Result, seen string) {
	// The poller's watch keeps the list current; without one, a list younger than two intervals
	// is used.
	obj, err := r.Clients.Get(ctx, r.APIReader, cluster, target.GVK, target.Namespace, target.Name, 2*r.healthInterval())
	seen = remotecluster.Seen(obj, err)
	switch {
	case err != nil:
		return health.Result{Reason: remotecluster.Reason(err, "ClusterUnreachable"), Message: err.Error()}, seen
	case obj == nil:
		return health.Missing(target.GVK.Kind, target.Name), seen
	}
	return health.For(target.GVK.Kind)(obj, health.Pin{Tag: pd.Status.Resolved.Tag, Commit: pd.Status.Resolved.Commit}), seen
}

func (r *Reconciler) healthInterval() time.Duration {
	if r.HealthInterval > 0 {
		return r.HealthInterval
	}
	return DefaultHealthInterval
}

// DefaultHealthInterval is HealthInterval when it is not set (the controller's --health-interval
// default).
const DefaultHealthInterval = 10 * time.Second

// waitingFor returns the dependency the cluster holds pd back for (fleet.Hold), "" when none: pd
// is not published, and a deployment it depends on is not published either and has no pin the
// cluster can publish (not resolved, not accepted by the engine, or held back itself).
func waitingFor(pd *v1alpha1.PackageDeployment, cluster *v1alpha1.WorkloadCluster, get func(string) (*v1alpha1.PackageDeployment, error)) (string, error) {
	if pd.Status.Resolved == nil || meta.IsStatusConditionTrue(pd.Status.Conditions, v1alpha1.ConditionPublished) {
		return "", nil
	}
	for _, d := range pd.Spec.DependsOn {
		if publishedTag(cluster, d.Name) != "" {
			continue
		}
		dep, err := get(d.Name)
		if err != nil || dep == nil {
			return "", err
		}
		c := meta.FindStatusCondition(dep.Status.Conditions, v1alpha1.ConditionPublished)
		if dep.Status.Resolved == nil || render.Accepts(cluster, dep) != nil || (c != nil && c.Reason == reasonWaitingForDependency) ||
			meta.IsStatusConditionTrue(dep.Status.Conditions, v1alpha1.ConditionStalled) {
			return d.Name, nil
		}
	}
	return "", nil
}

// deployment reads the namespace's deployments for CheckDependencies.
func (r *Reconciler) deployment(ctx context.Context, namespace string) func(string) (*v1alpha1.PackageDeployment, error) {
	return func(name string) (*v1alpha1.PackageDeployment, error) {
		dep := &v1alpha1.PackageDeployment{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, dep)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return dep, err
	}
}

// cluster returns the deployment's cluster, nil if it does not exist.
func (r *Reconciler) cluster(ctx context.Context, pd *v1alpha1.PackageDeployment) (*v1alpha1.WorkloadCluster, error) {
	cluster := &v1alpha1.WorkloadCluster{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: pd.Namespace, Name: pd.Spec.Cluster.Name}, cluster)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return cluster, err
}

// resolve pins the revision pd asks for. On error the previous pin stays, so a repository outage
// or a typo in the revision never undeploys anything.
func (r *Reconciler) resolve(ctx context.Context, pd *v1alpha1.PackageDeployment, cluster *v1alpha1.WorkloadCluster) error {
	name := cluster.Spec.Repository.Name
	if ref := pd.Spec.Package.Repository; ref != nil {
		name = ref.Name
	}
	repo := &v1alpha1.Repository{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pd.Namespace, Name: name}, repo); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("%w: Repository %s/%s does not exist", errRepositoryNotFound, pd.Namespace, name)
		}
		return err
	}
	remote, err := gitremote.Remote(ctx, r.APIReader, repo)
	if err != nil {
		return err
	}
	if pd.Status.Resolved == nil {
		// A pin resolved for this generation whose report waits is the pin to check against.
		pd.Status.Resolved = r.deferredPin(pd)
	}
	published, err := r.published(ctx, cluster, repo)
	if err != nil {
		return err
	}
	resolved, err := fleet.Resolve(ctx, r.Git, remote, repo, pd, published)
	if err != nil {
		return err
	}
	pd.Status.Resolved = &resolved
	return nil
}

// published is the cluster's published revision where it publishes now (index.Published), as
// its own reconciler takes it: a revision it published before it moved is no base here. repo is
// the deployment's package repository, often the cluster's too. nil when the cluster's Repository
// does not exist (the cluster publishes nothing then).
func (r *Reconciler) published(ctx context.Context, cluster *v1alpha1.WorkloadCluster, repo *v1alpha1.Repository) (*v1alpha1.DeployedPackagesStatus, error) {
	if cluster.Status.DeployedPackages == nil {
		return nil, nil
	}
	if repo.Name != cluster.Spec.Repository.Name {
		repo = &v1alpha1.Repository{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: cluster.Spec.Repository.Name}, repo); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
	}
	return index.Published(cluster, repo), nil
}

var errRepositoryNotFound = errors.New("repository not found")

// reconcileDelete releases the finalizer once no published deployed-packages revision carries
// the deployment (or it never was, or its cluster is gone). A deployment that drains first
// (EmptyFirst) is held until its agent has pruned, and then until the revision without it is out.
func (r *Reconciler) reconcileDelete(ctx context.Context, pd *v1alpha1.PackageDeployment, cluster *v1alpha1.WorkloadCluster) (ctrl.Result, error) {
	if cluster == nil || publishedTag(cluster, pd.Name) == "" {
		controllerutil.RemoveFinalizer(pd, v1alpha1.FinalizerPackageDeployment)
		return ctrl.Result{}, nil
	}
	if !fleet.MustDrain(cluster, pd, cluster.Status.DeployedPackages) {
		setUndeploying(pd, cluster)
		return ctrl.Result{}, nil
	}
	return r.drain(ctx, pd, cluster)
}

func publishedTag(cluster *v1alpha1.WorkloadCluster, deployment string) string {
	return fleet.PublishedTag(cluster.Status.DeployedPackages, deployment)
}

func ptr[T any](v T) *T { return &v }
