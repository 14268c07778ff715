// Package approval approves a WorkloadCluster's pending deployed-packages proposal, for
// `flotilla approve`.
package approval

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/fleet"
)

// Approve sets flotilla.dev/approve=<commit> on the cluster for its pending proposal and returns
// that proposal: the approval names the commit read here, so a proposal that changes afterwards
// (a new commit) is not approved by it (fleet.DecideApproval). The patch carries the
// resourceVersion read, so the annotation is never written over a newer state of the object.
func Approve(ctx context.Context, c client.Client, key client.ObjectKey) (v1alpha1.ProposalStatus, error) {
	var cluster v1alpha1.WorkloadCluster
	if err := c.Get(ctx, key, &cluster); err != nil {
		return v1alpha1.ProposalStatus{}, err
	}
	if cluster.Spec.Approval != v1alpha1.ApprovalManual {
		return v1alpha1.ProposalStatus{}, fmt.Errorf("workloadcluster %s has approval %s: nothing waits for approval", key, cluster.Spec.Approval)
	}
	value, err := fleet.ApprovalValue(cluster.Status.Proposal)
	if err != nil {
		return v1alpha1.ProposalStatus{}, fmt.Errorf("workloadcluster %s: %w", key, err)
	}
	p := *cluster.Status.Proposal
	before := cluster.DeepCopy()
	if cluster.Annotations == nil {
		cluster.Annotations = map[string]string{}
	}
	cluster.Annotations[v1alpha1.AnnotationApprove] = value
	if err := c.Patch(ctx, &cluster, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return v1alpha1.ProposalStatus{}, fmt.Errorf("approve %s: %w", key, err)
	}
	return p, nil
}
