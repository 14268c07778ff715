package packagedeployment

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/fleet"
	"github.com/flotilla-dev/flotilla/internal/gitremote"
	"github.com/flotilla-dev/flotilla/internal/health"
	"github.com/flotilla-dev/flotilla/internal/remotecluster"
	"github.com/flotilla-dev/flotilla/internal/render"
)

// drain follows an EmptyFirst undeploy of pd: the cluster publishes its sync object pointed at
// the empty package, the agent syncs it and prunes, and once the agent reports nothing left,
// status.drain.drained tells the cluster to publish the revision without it. A drain that takes
// longer than the cluster's drainTimeout is reported, never cut short.
func (r *Reconciler) drain(ctx context.Context, pd *v1alpha1.PackageDeployment, cluster *v1alpha1.WorkloadCluster) (ctrl.Result, error) {
	d := pd.Status.Drain
	if d == nil {
		d = &v1alpha1.DrainStatus{StartedAt: metav1.Now()}
		pd.Status.Drain = d
	}
	tag := publishedTag(cluster, pd.Name)
	repo, err := r.clusterRepository(ctx, cluster)
	if err != nil {
		setDraining(pd, cluster, health.Result{Reason: "EmptyPackageUnknown", Message: err.Error()})
		return ctrl.Result{}, err
	}
	path := fleet.EmptyPackagePath(repo)
	number, ok := strings.CutPrefix(tag, path+"/v")
	if !ok {
		setDraining(pd, cluster, health.Result{Reason: "Publishing", Message: fmt.Sprintf(
			"waiting for a deployed-packages revision of cluster %s that points the sync object at the empty package %s (it still pins %s)", cluster.Name, path, tag)})
		return ctrl.Result{RequeueAfter: r.healthInterval()}, nil
	}
	if d.Tag != tag || d.Commit == "" {
		// Once per drain: the commit is kept in status.drain (the tag never moves).
		remote, err := gitremote.Remote(ctx, r.APIReader, repo)
		if err != nil {
			setDraining(pd, cluster, health.Result{Reason: "EmptyPackageUnknown", Message: err.Error()})
			return ctrl.Result{}, err
		}
		rev, err := r.Git.Resolve(ctx, remote, path, "v"+number)
		if err != nil {
			setDraining(pd, cluster, health.Result{Reason: "EmptyPackageUnknown", Message: fmt.Sprintf("resolve %s: %v", tag, err)})
			return ctrl.Result{}, err
		}
		d.Tag, d.Commit, d.Drained = tag, rev.Commit, false
	}
	h := r.drained(ctx, pd, cluster, health.Pin{Tag: d.Tag, Commit: d.Commit})
	if h.Synced {
		d.Drained = true
		setDrained(pd, cluster, h)
		return ctrl.Result{}, nil
	}
	setDraining(pd, cluster, h)
	return ctrl.Result{RequeueAfter: r.healthInterval()}, nil
}

// clusterRepository is the cluster's (git) repository, where its empty package is.
func (r *Reconciler) clusterRepository(ctx context.Context, cluster *v1alpha1.WorkloadCluster) (*v1alpha1.Repository, error) {
	repo := &v1alpha1.Repository{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: cluster.Spec.Repository.Name}, repo); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: Repository %s/%s does not exist", errRepositoryNotFound, cluster.Namespace, cluster.Spec.Repository.Name)
		}
		return nil, err
	}
	if repo.Spec.Git == nil {
		return nil, gitremote.NotGit(repo)
	}
	return repo, nil
}

// drained reads the deployment's sync object (and, for Config Sync, its ResourceGroup) back from
// the workload cluster and says whether it has pruned everything (health.Drained).
func (r *Reconciler) drained(ctx context.Context, pd *v1alpha1.PackageDeployment, cluster *v1alpha1.WorkloadCluster, pin health.Pin) health.Result {
	ref := render.SyncObjectRef(cluster, pd)
	get := func(gvk schema.GroupVersionKind) (*unstructured.Unstructured, error) {
		return r.Clients.Get(ctx, r.APIReader, cluster, gvk, ref.Namespace, ref.Name, r.healthInterval())
	}
	obj, err := get(schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind))
	switch {
	case err != nil:
		return health.Result{Reason: remotecluster.Reason(err, "ClusterUnreachable"), Message: err.Error()}
	case obj == nil:
		return health.Missing(ref.Kind, ref.Name)
	}
	var inventory *unstructured.Unstructured
	if health.NeedsInventory(ref.Kind) {
		if inventory, err = get(health.ResourceGroupGVK); err != nil {
			return health.Result{Reason: remotecluster.Reason(err, "ClusterUnreachable"), Message: "read the ResourceGroup: " + err.Error()}
		}
	}
	return health.Drained(obj, inventory, pin)
}

// drainAge is how long the deployment has been draining.
func drainAge(pd *v1alpha1.PackageDeployment) time.Duration {
	return time.Since(pd.Status.Drain.StartedAt.Time)
}
