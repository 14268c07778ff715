// Package approval approves a WorkloadCluster's pending deployed-packages proposal, for
// `flotilla approve`.
package approval

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// Approve sets flotilla.dev/approve=v<N> on the cluster for its pending proposal N and returns N.
// The patch carries the resourceVersion read, so a proposal replaced meanwhile is not approved
// by accident.
func Approve(ctx context.Context, c client.Client, key client.ObjectKey) (int, error) {
	var cluster v1alpha1.WorkloadCluster
	if err := c.Get(ctx, key, &cluster); err != nil {
		return 0, err
	}
	p := cluster.Status.Proposal
	if p == nil {
		return 0, fmt.Errorf("workloadcluster %s has no pending proposal: nothing to approve", key)
	}
	before := cluster.DeepCopy()
	if cluster.Annotations == nil {
		cluster.Annotations = map[string]string{}
	}
	cluster.Annotations[v1alpha1.AnnotationApprove] = fmt.Sprintf("v%d", p.Revision)
	if err := c.Patch(ctx, &cluster, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return 0, fmt.Errorf("approve %s: %w", key, err)
	}
	return p.Revision, nil
}
