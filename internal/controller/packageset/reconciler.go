// Package packageset reconciles PackageSet: it evaluates the set's generator over clusters (and
// other objects), and creates, updates and deletes the PackageDeployments it owns to match. It
// never deletes on an error: a failing generator, or a sudden result of zero targets, keeps every
// deployment and says why.
package packageset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/conditions"
	"github.com/flotilla-dev/flotilla/internal/controller/index"
	"github.com/flotilla-dev/flotilla/internal/generate"
	"github.com/flotilla-dev/flotilla/internal/metrics"
	"github.com/flotilla-dev/flotilla/internal/patch"
	"github.com/flotilla-dev/flotilla/internal/rollout"
	"github.com/flotilla-dev/flotilla/internal/setplan"
	"github.com/flotilla-dev/flotilla/internal/specialize"
)

// Git is the part of pkgrepo.Store the set reconciler uses: resolving blueprints, and publishing
// variants.
type Git = setplan.Git

// Reconciler reconciles PackageSet objects.
type Reconciler struct {
	Client client.Client
	// APIReader reads Secrets and generator objects without caching them.
	APIReader client.Reader
	Git       Git

	// Exec says which exec functions variant pipelines may run on the controller.
	Exec specialize.ExecPolicy
	// ObjectKinds are the kinds objects generators may read (--objects-generator-kinds): a set
	// naming another kind is refused, and each allowed kind is watched at most once.
	ObjectKinds []schema.GroupKind
	// Events records rollout decisions (nil: none are recorded).
	Events events.EventRecorder
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	controller controller.Controller
	cache      cacheSource
	mapper     meta.RESTMapper
	watchedMu  sync.Mutex
	watched    map[schema.GroupKind]bool
}

// +kubebuilder:rbac:groups=flotilla.dev,resources=packagesets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=flotilla.dev,resources=packagesets/status,verbs=patch
// +kubebuilder:rbac:groups=flotilla.dev,resources=packagesets/finalizers,verbs=update
// +kubebuilder:rbac:groups=flotilla.dev,resources=packagedeployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get
// +kubebuilder:rbac:groups=infra.nephio.org,resources=workloadclusters,verbs=get;list;watch

// recordRollout records an event for each decision the rollout has just made (started, next
// step, paused, resumed, halted, rolled back, complete).
func (r *Reconciler) recordRollout(set *v1alpha1.PackageSet, before, after *v1alpha1.RolloutStatus) {
	if r.Events == nil {
		return
	}
	for _, e := range rollout.Events(before, after) {
		r.Events.Eventf(set, nil, e.Type, e.Reason, "Rollout", "%s", e.Message)
	}
}

// Reconcile makes the set's deployments match its generator.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	set := &v1alpha1.PackageSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, set); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	p := patch.New(r.Client, set)
	defer func() {
		conditions.ObserveGeneration(set.Status.Conditions, set.Generation, &set.Status.ObservedGeneration)
		if perr := p.Patch(ctx, set); perr != nil && err == nil {
			err = perr
		}
	}()

	if !set.DeletionTimestamp.IsZero() {
		// Read past the cache: a deployment created a moment ago must not be missed, or it would
		// be left to the garbage collector.
		owned, err := r.owned(ctx, r.APIReader, set, client.MatchingLabels{v1alpha1.LabelPackageSet: set.Name})
		if err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, r.reconcileDelete(ctx, set, owned)
	}
	// The cache's deployments are only read (updates are planned on copies): no deep copy of
	// every deployment of the set on each reconcile.
	owned, err := r.owned(ctx, r.Client, set, client.MatchingFields{index.DeploymentSet: set.Name}, client.UnsafeDisableDeepCopy)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !controllerutil.ContainsFinalizer(set, v1alpha1.FinalizerPackageSet) {
		// Written before any deployment exists: a set deleted right after it was created must
		// still apply its deletion policy (with Orphan, the garbage collector would otherwise
		// delete the deployments it owns).
		before := set.DeepCopy()
		controllerutil.AddFinalizer(set, v1alpha1.FinalizerPackageSet)
		if err := r.Client.Patch(ctx, set, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		p = patch.New(r.Client, set)
	}

	planner := setplan.Planner{Git: r.Git, Exec: r.Exec}
	out, err := planner.Plan(ctx, reader{r}, set, owned, r.now())
	before := set.Status.Rollout
	if out.Decided {
		set.Status.Rollout = out.Rollout
		set.Status.Revision, set.Status.Promotion = out.Inputs.Upstream.Tag, out.Promotion
	}
	switch {
	case errors.Is(err, setplan.ErrNoTargets):
		setEmptyGuard(set, len(owned))
		return ctrl.Result{}, nil
	case err != nil:
		retry := setGeneratorFailed(set, err, len(owned))
		if isKindNotServed(err) {
			// Nothing watches a kind that is not served; its CRD may come later.
			return ctrl.Result{RequeueAfter: kindRetry}, nil
		}
		return ctrl.Result{}, retry
	}
	result, changes := out.Result, out.Changes
	conflicts, err := r.apply(ctx, changes)
	if err != nil {
		// The rollout's decision stands only with its pins written: a rollback is decided once
		// (the rollout is halted after it), so a status recording it without them would leave
		// the targets on the revision that failed. With the previous status the retry decides
		// again.
		set.Status.Rollout = before
		// Reported for this generation, so clusters waiting for the set publish what exists.
		conditions.Progressing(&set.Status.Conditions, set.Generation, "ApplyFailed", fmt.Sprintf("writing deployments: %v; retrying", err))
		return ctrl.Result{}, err
	}
	if out.Decided {
		r.recordRollout(set, before, out.Rollout)
	}
	result.Problems = append(result.Problems, conflicts...)
	setProgress(set, result, owned, !changes.Empty(), out.Waiting)
	return ctrl.Result{RequeueAfter: out.Recheck}, nil
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// owned lists the deployments the set generated; selection picks them by the set's label (an
// index in the cache, a label selector in the API).
func (r *Reconciler) owned(ctx context.Context, reader client.Reader, set *v1alpha1.PackageSet, selection ...client.ListOption) ([]v1alpha1.PackageDeployment, error) {
	var list v1alpha1.PackageDeploymentList
	if err := reader.List(ctx, &list, append(selection, client.InNamespace(set.Namespace))...); err != nil {
		return nil, fmt.Errorf("list deployments of %s: %w", set.Name, err)
	}
	out := list.Items[:0]
	for _, pd := range list.Items {
		if metav1.IsControlledBy(&pd, set) {
			out = append(out, pd)
		}
	}
	return out, nil
}

// kindRetry is how often a set whose objects generator names a kind the API server does not serve
// looks again.
const kindRetry = time.Minute

// applyWorkers bounds the writes a set makes at once: a new set over thousands of clusters
// creates thousands of deployments, and one at a time that is thousands of API round trips.
const applyWorkers = 8

// apply writes the planned changes: creations and updates first, deletions last, each group
// applyWorkers at a time. A name taken by a deployment the set does not own is a conflict, never
// overwritten. The first error stops the writes not started yet.
func (r *Reconciler) apply(ctx context.Context, c setplan.Changes) ([]generate.Problem, error) {
	var mu sync.Mutex
	var conflicts []generate.Problem
	create := func(ctx context.Context, pd *v1alpha1.PackageDeployment) error {
		err := r.Client.Create(ctx, pd)
		if apierrors.IsAlreadyExists(err) {
			mu.Lock()
			defer mu.Unlock()
			conflicts = append(conflicts, generate.Problem{Target: pd.Annotations[setplan.AnnotationTarget],
				Message: fmt.Sprintf("PackageDeployment %s already exists and is not owned by this set: rename one of them (template.nameExpr)", pd.Name)})
			return nil
		}
		if err != nil {
			return fmt.Errorf("create deployment %s: %w", pd.Name, err)
		}
		return nil
	}
	update := func(ctx context.Context, pd *v1alpha1.PackageDeployment) error {
		if err := r.Client.Update(ctx, pd); err != nil {
			return fmt.Errorf("update deployment %s: %w", pd.Name, err)
		}
		return nil
	}
	remove := func(ctx context.Context, pd *v1alpha1.PackageDeployment) error {
		if err := r.Client.Delete(ctx, pd); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete deployment %s: %w", pd.Name, err)
		}
		return nil
	}
	err := each(ctx, c.Create, create)
	slices.SortFunc(conflicts, func(a, b generate.Problem) int { return strings.Compare(a.Target, b.Target) })
	if err != nil {
		return conflicts, err
	}
	if err := each(ctx, c.Update, update); err != nil {
		return conflicts, err
	}
	return conflicts, each(ctx, c.Delete, remove)
}

// each runs fn on every deployment, applyWorkers at a time, and returns the first error.
func each(ctx context.Context, pds []*v1alpha1.PackageDeployment, fn func(context.Context, *v1alpha1.PackageDeployment) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(applyWorkers)
	for _, pd := range pds {
		g.Go(func() error { return fn(ctx, pd) })
	}
	return g.Wait()
}

// reconcileDelete applies the set's deletion policy to its deployments, then releases the set:
// Delete deletes them (each undeploys through its own finalizer) and waits until they are gone;
// Orphan removes the set's owner reference and label so they live on as standalone deployments.
func (r *Reconciler) reconcileDelete(ctx context.Context, set *v1alpha1.PackageSet, owned []v1alpha1.PackageDeployment) error {
	if !controllerutil.ContainsFinalizer(set, v1alpha1.FinalizerPackageSet) {
		return nil
	}
	for i := range owned {
		pd := &owned[i]
		if set.Spec.DeletionPolicy == v1alpha1.DeletionPolicyOrphan {
			if err := r.orphan(ctx, pd); err != nil {
				return err
			}
			continue
		}
		if pd.DeletionTimestamp.IsZero() {
			if err := r.Client.Delete(ctx, pd); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("delete deployment %s: %w", pd.Name, err)
			}
		}
	}
	if set.Spec.DeletionPolicy != v1alpha1.DeletionPolicyOrphan && len(owned) > 0 {
		setDeleting(set, len(owned))
		return nil // the deployments' deletion events bring the set back
	}
	controllerutil.RemoveFinalizer(set, v1alpha1.FinalizerPackageSet)
	metrics.Targets.DeletePartialMatch(prometheus.Labels{"namespace": set.Namespace, "packageset": set.Name})
	return nil
}

func (r *Reconciler) orphan(ctx context.Context, pd *v1alpha1.PackageDeployment) error {
	before := pd.DeepCopy()
	var refs []metav1.OwnerReference
	for _, ref := range pd.OwnerReferences {
		if ref.Kind != "PackageSet" || ref.APIVersion != v1alpha1.GroupVersion.String() {
			refs = append(refs, ref)
		}
	}
	pd.OwnerReferences = refs
	delete(pd.Labels, v1alpha1.LabelPackageSet)
	if err := r.Client.Patch(ctx, pd, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("orphan deployment %s: %w", pd.Name, err)
	}
	return nil
}
