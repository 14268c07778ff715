package workloadcluster

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/controller/index"
	"github.com/flotilla-dev/flotilla/internal/render"
)

// One deployed-packages has one writer: clusters whose repositories are one git branch (the same
// normalized URL and branch, in any namespace) and whose deployed-packages is the same directory
// would overwrite each other's pins. Of those, the one that published there
// (status.deployedPackages.location) keeps writing, so a cluster moved onto another's directory
// never overwrites (and undeploys) what that one runs; when none has, the oldest (creationTimestamp,
// then namespace/name) writes. The others publish nothing and report ReasonRepositoryInUse. The
// rule reads specs and persisted status, so every replica and every restart picks the same writer,
// and when the writer goes away or moves the next one takes over (see forSharers).

// ReasonRepositoryInUse: another cluster writes the deployed-packages this cluster would write.
const ReasonRepositoryInUse = "RepositoryInUse"

// sharers lists the clusters, this one included if it is not being deleted, that write to the
// same branch and directory as a cluster of repo writing to path.
func (r *Reconciler) sharers(ctx context.Context, repo *v1alpha1.Repository, path string) ([]*v1alpha1.WorkloadCluster, error) {
	var repos v1alpha1.RepositoryList
	if err := r.Client.List(ctx, &repos, client.MatchingFields{index.RepositoryLocation: index.Location(repo)}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list repositories: %w", err)
	}
	var out []*v1alpha1.WorkloadCluster
	for i := range repos.Items {
		other := &repos.Items[i]
		var clusters v1alpha1.WorkloadClusterList
		if err := r.Client.List(ctx, &clusters, client.InNamespace(other.Namespace), client.MatchingFields{index.ClusterRepository: other.Name},
			client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("list clusters: %w", err)
		}
		for j := range clusters.Items {
			c := &clusters.Items[j]
			if c.DeletionTimestamp.IsZero() && render.ClusterPackagePath(c, other) == path {
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// writer is the cluster of clusters that may write their shared deployed-packages at loc: of those
// whose published revision is at loc, else of all, the oldest, then the first by namespace/name.
// nil when there is none.
func writer(clusters []*v1alpha1.WorkloadCluster, loc string) *v1alpha1.WorkloadCluster {
	var there []*v1alpha1.WorkloadCluster
	for _, c := range clusters {
		if dp := c.Status.DeployedPackages; dp != nil && dp.Location == loc {
			there = append(there, c)
		}
	}
	if len(there) > 0 {
		clusters = there
	}
	if len(clusters) == 0 {
		return nil
	}
	return slices.MinFunc(clusters, func(a, b *v1alpha1.WorkloadCluster) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
}

// otherWriter returns the cluster that writes cluster's deployed-packages when that is not
// cluster itself.
func (r *Reconciler) otherWriter(ctx context.Context, cluster *v1alpha1.WorkloadCluster, repo *v1alpha1.Repository) (*v1alpha1.WorkloadCluster, error) {
	clusters, err := r.sharers(ctx, repo, render.ClusterPackagePath(cluster, repo))
	if err != nil {
		return nil, err
	}
	w := writer(append(clusters, cluster), index.ClusterLocation(cluster, repo))
	if w == nil || client.ObjectKeyFromObject(w) == client.ObjectKeyFromObject(cluster) {
		return nil, nil
	}
	return w, nil
}

// forSharers maps a cluster's event to the other clusters at its deployed-packages: when the
// writer is deleted, moves (the old object is mapped too) or a cluster arrives, the others find
// out whether they write now.
func (r *Reconciler) forSharers(ctx context.Context, o client.Object) []reconcile.Request {
	cluster := o.(*v1alpha1.WorkloadCluster)
	repo := &v1alpha1.Repository{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: cluster.Spec.Repository.Name}, repo); err != nil || repo.Spec.Git == nil {
		return nil // no repository, or not one a cluster can write (RepositoryNotGit)
	}
	clusters, err := r.sharers(ctx, repo, render.ClusterPackagePath(cluster, repo))
	if err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, c := range clusters {
		if key := client.ObjectKeyFromObject(c); key != client.ObjectKeyFromObject(cluster) {
			reqs = append(reqs, reconcile.Request{NamespacedName: key})
		}
	}
	return reqs
}
