package workloadcluster

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/controller/enqueue"
	"github.com/flotilla-dev/flotilla/internal/controller/index"
)

// deploymentDelay coalesces a burst of deployment events into one reconcile of their cluster.
const deploymentDelay = time.Second

// SetupWithManager registers the reconciler: a cluster is reconciled when it changes, when one of
// its deployments changes (at most once per deploymentDelay), and when its repository changes.
// Workers publish to different clusters in parallel; one cluster is never reconciled twice at once.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.WorkloadCluster{}, builder.WithPredicates(enqueue.NotStatusOnly())).
		Watches(&v1alpha1.PackageDeployment{}, enqueue.Coalesced(forDeployment, deploymentDelay)).
		Watches(&v1alpha1.Repository{}, handler.EnqueueRequestsFromMapFunc(r.forRepository)).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Workers, 1)}).
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
