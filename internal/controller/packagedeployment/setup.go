package packagedeployment

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/controller/enqueue"
	"github.com/flotilla-dev/flotilla/internal/controller/index"
	"github.com/flotilla-dev/flotilla/internal/remotecluster"
)

// SetupWithManager registers the reconciler: a deployment is reconciled when it changes, when its
// cluster changes (status: what is published), when a repository it reads changes (new tags) and
// when a deployment its dependsOn names appears, moves to another cluster or goes, when the
// poller sees its sync object change in the workload cluster (health), and on Requeue.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.again = make(chan event.GenericEvent)
	r.poller = &remotecluster.Poller{Clients: r.Clients, Reader: r.APIReader, Interval: r.healthInterval(), Notify: r.Requeue}
	if err := mgr.Add(r.poller); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.PackageDeployment{}, builder.WithPredicates(enqueue.NotStatusOnly())).
		Watches(&v1alpha1.WorkloadCluster{}, handler.EnqueueRequestsFromMapFunc(r.forCluster)).
		Watches(&v1alpha1.Repository{}, handler.EnqueueRequestsFromMapFunc(r.forRepository)).
		Watches(&v1alpha1.PackageDeployment{}, handler.EnqueueRequestsFromMapFunc(r.forDependency), builder.WithPredicates(enqueue.NotStatusOnly())).
		WatchesRawSource(source.Channel(r.again, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Workers, 1)}).
		Named("packagedeployment").
		Complete(r)
}

func (r *Reconciler) forCluster(ctx context.Context, o client.Object) []reconcile.Request {
	return r.lookup(ctx, o.GetNamespace(), index.DeploymentCluster, o.GetName(), nil)
}

// forDependency finds the deployments whose dependsOn names o.
func (r *Reconciler) forDependency(ctx context.Context, o client.Object) []reconcile.Request {
	return r.lookup(ctx, o.GetNamespace(), index.DeploymentDependsOn, o.GetName(), nil)
}

// forRepository finds the deployments that read from the repository: named explicitly or
// resolved there, or using it as their cluster's default (only those that name no repository:
// a cluster repository changes with every publish, which concerns none of the others).
func (r *Reconciler) forRepository(ctx context.Context, o client.Object) []reconcile.Request {
	reqs := r.lookup(ctx, o.GetNamespace(), index.DeploymentRepository, o.GetName(), nil)
	var clusters v1alpha1.WorkloadClusterList
	if err := r.Client.List(ctx, &clusters, client.InNamespace(o.GetNamespace()), client.MatchingFields{index.ClusterRepository: o.GetName()},
		client.UnsafeDisableDeepCopy); err != nil {
		return reqs
	}
	defaulted := func(pd *v1alpha1.PackageDeployment) bool { return pd.Spec.Package.Repository == nil }
	for _, c := range clusters.Items {
		reqs = append(reqs, r.lookup(ctx, o.GetNamespace(), index.DeploymentCluster, c.Name, defaulted)...)
	}
	return reqs
}

// lookup lists the deployments whose indexed field has value (and that keep holds for, when set).
func (r *Reconciler) lookup(ctx context.Context, namespace, field, value string, keep func(*v1alpha1.PackageDeployment) bool) []reconcile.Request {
	var list v1alpha1.PackageDeploymentList
	if err := r.Client.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{field: value}, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		if keep == nil || keep(&list.Items[i]) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}
