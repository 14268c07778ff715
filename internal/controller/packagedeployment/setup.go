package packagedeployment

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/controller/index"
)

// SetupWithManager registers the reconciler: a deployment is reconciled when it changes, when its
// cluster changes (status: what is published) and when a repository it reads changes (new tags).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.PackageDeployment{}).
		Watches(&v1alpha1.WorkloadCluster{}, handler.EnqueueRequestsFromMapFunc(r.forCluster)).
		Watches(&v1alpha1.Repository{}, handler.EnqueueRequestsFromMapFunc(r.forRepository)).
		Named("packagedeployment").
		Complete(r)
}

func (r *Reconciler) forCluster(ctx context.Context, o client.Object) []reconcile.Request {
	return r.lookup(ctx, o.GetNamespace(), index.DeploymentCluster, o.GetName())
}

// forRepository finds the deployments that read from the repository: named explicitly or
// resolved there, or using it as their cluster's default.
func (r *Reconciler) forRepository(ctx context.Context, o client.Object) []reconcile.Request {
	reqs := r.lookup(ctx, o.GetNamespace(), index.DeploymentRepository, o.GetName())
	var clusters v1alpha1.WorkloadClusterList
	if err := r.Client.List(ctx, &clusters, client.InNamespace(o.GetNamespace()), client.MatchingFields{index.ClusterRepository: o.GetName()}); err != nil {
		return reqs
	}
	for _, c := range clusters.Items {
		reqs = append(reqs, r.lookup(ctx, o.GetNamespace(), index.DeploymentCluster, c.Name)...)
	}
	return reqs
}

func (r *Reconciler) lookup(ctx context.Context, namespace, field, value string) []reconcile.Request {
	var list v1alpha1.PackageDeploymentList
	if err := r.Client.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{field: value}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, pd := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pd)})
	}
	return reqs
}
