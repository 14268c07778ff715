package packagevariant

import (
	"errors"
	"fmt"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/conditions"
	"github.com/flotilla-dev/flotilla/internal/fleet"
	"github.com/flotilla-dev/flotilla/internal/gitremote"
	"github.com/flotilla-dev/flotilla/internal/setplan"
	"github.com/flotilla-dev/flotilla/internal/specialize"
)

// Reasons of a PackageVariant's conditions.
const (
	ReasonPublished          = "Published"
	ReasonWaitingForUpstream = "WaitingForUpstream"
	ReasonMergeConflict      = "MergeConflict"
	ReasonVariantCycle       = "VariantCycle"
	ReasonDownstreamInUse    = "DownstreamInUse"
	ReasonSuspended          = "Suspended"
	ReasonWaitingForApproval = "WaitingForApproval"
)

// setPublished reports what the plan published, or the proposal that waits for approval (and
// what an approval annotation that published nothing was refused for).
func setPublished(pv *v1alpha1.PackageVariant, plan setplan.VariantPlan) {
	switch plan.Approval.State {
	case fleet.ApprovalInvalid:
		conditions.Stalled(&pv.Status.Conditions, pv.Generation, "ApprovalInvalid", plan.Approval.Message)
		return
	case fleet.ApprovalOutdated:
		conditions.Progressing(&pv.Status.Conditions, pv.Generation, "ApprovalOutdated", plan.Approval.Message)
		return
	}
	if p := plan.Proposal; p != nil {
		conditions.Progressing(&pv.Status.Conditions, pv.Generation, ReasonWaitingForApproval, fmt.Sprintf(
			"revision %d of %s, rendered from %s, waits for approval on %s: review it, then %s", p.Revision, pv.Spec.Downstream.Package, p.Upstream.Tag, p.Branch,
			setplan.ApproveCommand(pv, p.Commit)))
		return
	}
	if plan.Downstream == nil || plan.Upstream == nil {
		conditions.Progressing(&pv.Status.Conditions, pv.Generation, "Publishing", "nothing published yet")
		return
	}
	conditions.Ready(&pv.Status.Conditions, pv.Generation, ReasonPublished,
		fmt.Sprintf("%s rendered from %s (commit %s)", plan.Downstream.Tag, plan.Upstream.Tag, short(plan.Upstream.Commit)))
}

func setSuspended(pv *v1alpha1.PackageVariant) {
	conditions.Ready(&pv.Status.Conditions, pv.Generation, ReasonSuspended, "spec.suspend: nothing is published")
}

func setDownstreamInUse(pv *v1alpha1.PackageVariant, other *v1alpha1.PackageVariant) {
	conditions.Stalled(&pv.Status.Conditions, pv.Generation, ReasonDownstreamInUse, fmt.Sprintf(
		"PackageVariant %s, older, publishes to package %s of Repository %s already: nothing is published for this one; give it another spec.downstream",
		other.Name, pv.Spec.Downstream.Package, pv.Spec.Downstream.Repository.Name))
}

// setFailed reports err and returns it when a retry with backoff may help (nil when only the user
// can fix it, or the upstream will bring the variant back by itself).
func setFailed(pv *v1alpha1.PackageVariant, err error) error {
	var conflict *specialize.Conflict
	switch {
	case errors.Is(err, setplan.ErrUpstreamNotReady):
		conditions.Progressing(&pv.Status.Conditions, pv.Generation, ReasonWaitingForUpstream, err.Error())
		return nil
	case errors.As(err, &conflict):
		conditions.Stalled(&pv.Status.Conditions, pv.Generation, ReasonMergeConflict, err.Error())
		return nil
	case errors.Is(err, setplan.ErrVariantCycle):
		conditions.Stalled(&pv.Status.Conditions, pv.Generation, ReasonVariantCycle, err.Error())
		return nil
	case errors.Is(err, setplan.ErrRepositoryNotFound):
		conditions.Stalled(&pv.Status.Conditions, pv.Generation, "RepositoryNotFound", err.Error())
		return nil
	}
	reason, stalled := gitremote.Reason(err)
	if stalled {
		conditions.Stalled(&pv.Status.Conditions, pv.Generation, reason, err.Error())
		return nil
	}
	conditions.Progressing(&pv.Status.Conditions, pv.Generation, reason, err.Error()+"; retrying")
	return err
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}
