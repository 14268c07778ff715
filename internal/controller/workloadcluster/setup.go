package workloadcluster

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/controller/enqueue"
	"github.com/flotilla-dev/flotilla/internal/controller/index"
	"github.com/flotilla-dev/flotilla/internal/generate"
)

// deploymentDelay coalesces a burst of deployment (and PackageSet) events into one reconcile of
// their cluster.
const deploymentDelay = time.Second

// SetupWithManager registers the reconciler: a cluster is reconciled when it changes, when one of
// its deployments changes (at most once per deploymentDelay), when its repository changes, and
// when a PackageSet that may target it has written its deployments for a new generation, and when
// another cluster at its deployed-packages arrives, moves or goes (one of them writes; see writer).
// Workers publish to different clusters in parallel; one cluster is never reconciled twice at once.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.WorkloadCluster{}, builder.WithPredicates(enqueue.NotStatusOnly())).
		Watches(&v1alpha1.PackageDeployment{}, enqueue.Coalesced(forDeployment, deploymentDelay)).
		Watches(&v1alpha1.Repository{}, handler.EnqueueRequestsFromMapFunc(r.forRepository)).
		Watches(&v1alpha1.WorkloadCluster{}, handler.EnqueueRequestsFromMapFunc(r.forSharers), builder.WithPredicates(enqueue.NotStatusOnly())).
		Watches(&v1alpha1.PackageSet{}, enqueue.Coalesced(r.forSet, deploymentDelay), builder.WithPredicates(setDone)).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Workers, 1)}).
		Named("workloadcluster").
		Complete(r)
}

func forDeployment(_ context.Context, o client.Object) []reconcile.Request {
	pd := o.(*v1alpha1.PackageDeployment)
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: pd.Namespace, Name: pd.Spec.Cluster.Name}}}
}

// forRepository finds the clusters of the repository and of every repository at the same
// location (any namespace): a repository that moves (the old object is mapped too), arrives or
// goes may change which cluster writes a shared deployed-packages.
func (r *Reconciler) forRepository(ctx context.Context, o client.Object) []reconcile.Request {
	repos := []client.ObjectKey{client.ObjectKeyFromObject(o)}
	var same v1alpha1.RepositoryList
	if err := r.Client.List(ctx, &same, client.MatchingFields{index.RepositoryLocation: index.Location(o.(*v1alpha1.Repository))},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	for i := range same.Items {
		if key := client.ObjectKeyFromObject(&same.Items[i]); key != repos[0] {
			repos = append(repos, key)
		}
	}
	var reqs []reconcile.Request
	for _, repo := range repos {
		var list v1alpha1.WorkloadClusterList
		if err := r.Client.List(ctx, &list, client.InNamespace(repo.Namespace), client.MatchingFields{index.ClusterRepository: repo.Name},
			client.UnsafeDisableDeepCopy); err != nil {
			return nil
		}
		for i := range list.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

// setDone passes the events after which clusters waiting for a PackageSet may go on: it finished
// processing a generation, or it is gone.
var setDone = predicate.Funcs{
	CreateFunc: func(event.CreateEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return !processed(e.ObjectOld.(*v1alpha1.PackageSet)) && processed(e.ObjectNew.(*v1alpha1.PackageSet))
	},
}

// forSet finds the clusters the set may target.
func (r *Reconciler) forSet(ctx context.Context, o client.Object) []reconcile.Request {
	set := o.(*v1alpha1.PackageSet)
	var list v1alpha1.WorkloadClusterList
	if err := r.Client.List(ctx, &list, client.InNamespace(set.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if c := &list.Items[i]; generate.MayTarget(set, c.Name, c.Labels) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(c)})
		}
	}
	return reqs
}
