package workloadcluster

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/controller/index"
)

// SetupWithManager registers the reconciler: a cluster is reconciled when it changes, when one of
// its deployments changes, and when its repository changes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.WorkloadCluster{}).
		Watches(&v1alpha1.PackageDeployment{}, handler.EnqueueRequestsFromMapFunc(forDeployment)).
		Watches(&v1alpha1.Repository{}, handler.EnqueueRequestsFromMapFunc(r.forRepository)).
		Named("workloadcluster").
		Complete(r)
}

func forDeployment(_ context.Context, o client.Object) []reconcile.Request {
	pd := o.(*v1alpha1.PackageDeployment)
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: pd.Namespace, Name: pd.Spec.Cluster.Name}}}
}

func (r *Reconciler) forRepository(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.WorkloadClusterList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{index.ClusterRepository: o.GetName()}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, c := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&c)})
	}
	return reqs
}
