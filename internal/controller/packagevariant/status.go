package packagevariant

import (
	"errors"
	"fmt"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/conditions"
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
)

func setPublished(pv *v1alpha1.PackageVariant, plan setplan.VariantPlan) {
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
