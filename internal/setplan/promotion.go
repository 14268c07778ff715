package setplan

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/conditions"
	"github.com/flotilla-dev/flotilla/internal/fleet"
)

// promote resolves spec.package.revisionFrom: the set moves to the revision the source set
// deploys once that set has been Ready at it for healthyFor (at once with flotilla.dev/promotion:
// force, never with hold). It returns the set as planning sees it (its package pinned to the
// revision it deploys now), the promotion status, and when to look again (0: not needed).
func (p Planner) promote(ctx context.Context, r Reader, set *v1alpha1.PackageSet, now time.Time) (*v1alpha1.PackageSet, *v1alpha1.PromotionStatus, time.Duration, error) {
	rf := set.Spec.Package.RevisionFrom
	if rf == nil {
		return set, nil, 0, nil
	}
	sr, ok := r.(SetReader)
	if !ok {
		return nil, nil, 0, fmt.Errorf("spec.package.revisionFrom is not supported here")
	}
	src, err := sr.PackageSet(ctx, set.Namespace, rf.PackageSet)
	if err != nil {
		return nil, nil, 0, err
	}
	if src == nil {
		return nil, nil, 0, fmt.Errorf("%w: spec.package.revisionFrom names PackageSet %s, which does not exist in namespace %s", ErrSetDependencyNotFound, rf.PackageSet, set.Namespace)
	}
	if src.Spec.Package.Name != set.Spec.Package.Name || !equalRef(src.Spec.Package.Repository, set.Spec.Package.Repository) {
		return nil, nil, 0, fmt.Errorf("%w: spec.package.revisionFrom names PackageSet %s, which deploys package %s: promotion needs the same repository and package",
			ErrSetDependencyNotFound, src.Name, src.Spec.Package.Name)
	}
	// What the set deploys now is what it was promoted to, whatever set it came from (renaming
	// the source never sends the fleet back to the initial revision).
	current := set.Spec.Package.Revision
	if pr := set.Status.Promotion; pr != nil && pr.Revision != "" {
		current = pr.Revision
	}
	_, candidate := fleet.SplitTag(src.Status.Revision)
	var healthyFor time.Duration
	if rf.HealthyFor != nil {
		healthyFor = rf.HealthyFor.Duration
	}
	ready := meta.FindStatusCondition(src.Status.Conditions, v1alpha1.ConditionReady)
	isReady := ready != nil && ready.Status == "True" && conditions.Observed(src.Status.Conditions, src.Generation)
	var msg string
	var recheck time.Duration
	switch mode := set.Annotations[v1alpha1.AnnotationPromotion]; {
	case mode == "hold":
		msg = fmt.Sprintf("held by %s: hold; %s deploys %s", v1alpha1.AnnotationPromotion, src.Name, orNone(candidate))
	case candidate == "":
		msg = fmt.Sprintf("waiting for %s to deploy a revision", src.Name)
	case candidate == current:
		msg = fmt.Sprintf("at %s's revision %s", src.Name, current)
	case !isReady:
		msg = fmt.Sprintf("waiting for %s to be Ready at %s", src.Name, candidate)
	case mode == "force" || now.Sub(ready.LastTransitionTime.Time) >= healthyFor:
		current = candidate
		msg = fmt.Sprintf("promoted %s from %s", candidate, src.Name)
	default:
		msg = fmt.Sprintf("waiting for %s to stay Ready at %s for %s (revisionFrom.healthyFor); %s: force promotes now", src.Name, candidate, healthyFor, v1alpha1.AnnotationPromotion)
		recheck = ready.LastTransitionTime.Add(healthyFor).Sub(now) + time.Second
	}
	eff := set.DeepCopy()
	eff.Spec.Package.Revision, eff.Spec.Package.RevisionFrom = current, nil
	return eff, &v1alpha1.PromotionStatus{From: src.Name, Revision: current, Message: msg}, recheck, nil
}

func orNone(s string) string {
	if s == "" {
		return "nothing yet"
	}
	return s
}
