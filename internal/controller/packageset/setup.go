package packageset

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/controller/enqueue"
	"github.com/flotilla-dev/flotilla/internal/controller/index"
	"github.com/flotilla-dev/flotilla/internal/generate"
	"github.com/flotilla-dev/flotilla/internal/setplan"
)

type cacheSource = cache.Cache

// deploymentDelay coalesces the events of a set's deployments (thousands in a rollout, one per
// status write) into at most one reconcile of the set per delay: each reconcile reads all of them.
const deploymentDelay = 2 * time.Second

// SetupWithManager registers the reconciler. A set is reconciled when it changes, when a
// deployment it owns changes (at most once per deploymentDelay), when a cluster it selects (or
// selected) changes its labels or spec, when its blueprint repository changes, and when an object
// its objects generator reads changes: never for events that cannot affect it.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.cache, r.mapper = mgr.GetCache(), mgr.GetRESTMapper()
	clusterChange := predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{})
	c, err := ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.PackageSet{}, builder.WithPredicates(enqueue.NotStatusOnly())).
		Watches(&v1alpha1.PackageDeployment{}, enqueue.Coalesced(ownerSet, deploymentDelay)).
		Watches(&v1alpha1.WorkloadCluster{}, handler.EnqueueRequestsFromMapFunc(r.forCluster), builder.WithPredicates(clusterChange)).
		Watches(&v1alpha1.WorkloadCluster{}, handler.EnqueueRequestsFromMapFunc(r.forFacts), builder.WithPredicates(factsChanged)).
		Watches(&v1alpha1.Repository{}, handler.EnqueueRequestsFromMapFunc(r.forRepository)).
		Watches(&v1alpha1.PackageSet{}, handler.EnqueueRequestsFromMapFunc(r.forDependents)).
		Named("packageset").
		Build(r)
	r.controller = c
	return err
}

// ownerSet maps a deployment to the set that controls it.
func ownerSet(_ context.Context, o client.Object) []reconcile.Request {
	ref := metav1.GetControllerOf(o)
	if ref == nil || ref.Kind != "PackageSet" || ref.APIVersion != v1alpha1.GroupVersion.String() {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: ref.Name}}}
}

// watchKind starts, once per kind (whatever versions sets name), a watch on the objects an
// objects generator reads. Kinds reach it only from the operator's allowlist (checkKinds), so the
// allowlist bounds the watches however many sets and kinds tenants write. The watch keeps only
// metadata: it tells which namespace changed, and the generator reads the objects themselves.
func (r *Reconciler) watchKind(gk schema.GroupKind) error {
	r.watchedMu.Lock()
	defer r.watchedMu.Unlock()
	if r.watched[gk] || r.controller == nil {
		return nil
	}
	mapping, err := r.mapper.RESTMapping(gk)
	if err != nil {
		return err
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(mapping.GroupVersionKind)
	if err := r.controller.Watch(source.Kind[client.Object](r.cache, obj, handler.EnqueueRequestsFromMapFunc(r.forObject(gk)))); err != nil {
		return err
	}
	if r.watched == nil {
		r.watched = map[schema.GroupKind]bool{}
	}
	r.watched[gk] = true
	return nil
}

// forCluster finds the sets a cluster change may affect: those whose generator selects or names
// it now, and those that own a deployment for it (it may have left their selector).
func (r *Reconciler) forCluster(ctx context.Context, o client.Object) []reconcile.Request {
	cluster := o.(*v1alpha1.WorkloadCluster)
	sets := map[string]bool{}
	var deployments v1alpha1.PackageDeploymentList
	if err := r.Client.List(ctx, &deployments, client.InNamespace(cluster.Namespace), client.MatchingFields{index.DeploymentCluster: cluster.Name},
		client.UnsafeDisableDeepCopy); err == nil {
		for _, pd := range deployments.Items {
			if s := pd.Labels[v1alpha1.LabelPackageSet]; s != "" {
				sets[s] = true
			}
		}
	}
	var list v1alpha1.PackageSetList
	if err := r.Client.List(ctx, &list, client.InNamespace(cluster.Namespace)); err == nil {
		for i := range list.Items {
			if generate.MayTarget(&list.Items[i], cluster.Name, cluster.Labels) {
				sets[list.Items[i].Name] = true
			}
		}
	}
	return requests(cluster.Namespace, sets)
}

// forDependents finds the sets whose spec.dependsOn (or spec.package.revisionFrom) names o: its
// status (readiness, rollout, revision) is what they wait for.
func (r *Reconciler) forDependents(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.PackageSetList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	sets := map[string]bool{}
	for i := range list.Items {
		for _, d := range list.Items[i].Spec.DependsOn {
			if d.Name == o.GetName() {
				sets[list.Items[i].Name] = true
			}
		}
		if rf := list.Items[i].Spec.Package.RevisionFrom; rf != nil && rf.PackageSet == o.GetName() {
			sets[list.Items[i].Name] = true
		}
	}
	return requests(o.GetNamespace(), sets)
}

// factsChanged passes the cluster updates that change its facts (status.facts).
var factsChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return !equality.Semantic.DeepEqual(e.ObjectOld.(*v1alpha1.WorkloadCluster).Status.Facts, e.ObjectNew.(*v1alpha1.WorkloadCluster).Status.Facts)
	},
}

// forFacts finds the sets that may target the cluster and use facts (target.facts in an
// expression, or a facts values layer): a changed fact re-renders only what uses facts.
func (r *Reconciler) forFacts(ctx context.Context, o client.Object) []reconcile.Request {
	cluster := o.(*v1alpha1.WorkloadCluster)
	var list v1alpha1.PackageSetList
	if err := r.Client.List(ctx, &list, client.InNamespace(cluster.Namespace)); err != nil {
		return nil
	}
	sets := map[string]bool{}
	for i := range list.Items {
		if set := &list.Items[i]; generate.UsesFacts(set) && generate.MayTarget(set, cluster.Name, cluster.Labels) {
			sets[set.Name] = true
		}
	}
	return requests(cluster.Namespace, sets)
}

// forRepository finds the sets whose blueprint lives in the repository (new tags).
func (r *Reconciler) forRepository(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.PackageSetList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{index.SetRepository: o.GetName()}); err != nil {
		return nil
	}
	sets := map[string]bool{}
	for _, s := range list.Items {
		sets[s.Name] = true
	}
	return requests(o.GetNamespace(), sets)
}

// forObject finds the sets whose objects generator reads objects of the kind in the object's
// namespace.
func (r *Reconciler) forObject(gk schema.GroupKind) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var list v1alpha1.PackageSetList
		if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
			return nil
		}
		sets := map[string]bool{}
		for i := range list.Items {
			for _, k := range setplan.ObjectKinds(&list.Items[i]) {
				if k.GroupKind() == gk {
					sets[list.Items[i].Name] = true
				}
			}
		}
		return requests(o.GetNamespace(), sets)
	}
}

func requests(namespace string, names map[string]bool) []reconcile.Request {
	out := make([]reconcile.Request, 0, len(names))
	for n := range names {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: namespace, Name: n}})
	}
	return out
}
