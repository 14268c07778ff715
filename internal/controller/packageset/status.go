package packageset

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/conditions"
	"github.com/flotilla-dev/flotilla/internal/generate"
	"github.com/flotilla-dev/flotilla/internal/gitremote"
	"github.com/flotilla-dev/flotilla/internal/metrics"
	"github.com/flotilla-dev/flotilla/internal/rollout"
	"github.com/flotilla-dev/flotilla/internal/setplan"
)

// maxProblems bounds status.problems, so status stays small at 10,000 targets.
const maxProblems = 10

// setGeneratorFailed reports a failed generation and returns the error to retry with backoff: nil
// when only the user can fix it.
func setGeneratorFailed(set *v1alpha1.PackageSet, err error, kept int) error {
	reason, userError := "GeneratorFailed", true
	switch {
	case errors.Is(err, setplan.ErrRepositoryNotFound):
		reason = "RepositoryNotFound"
	case errors.Is(err, setplan.ErrSetDependencyNotFound):
		reason = "DependencyNotFound"
	case errors.Is(err, setplan.ErrSetDependencyCycle):
		reason = "DependencyCycle"
	case isKindNotAllowed(err):
		reason = "KindNotAllowed"
	case transientAPIError(err):
		reason, userError = "APIError", false
	default:
		if r, s := gitremote.Reason(err); r != "GitError" {
			reason, userError = r, s
		}
	}
	msg := fmt.Sprintf("%v; keeping the %d existing deployments", err, kept)
	if userError {
		stalled(set, reason, msg)
		return nil
	}
	// A git outage: retried with backoff (and the repository's recovery brings the set back).
	conditions.Progressing(&set.Status.Conditions, set.Generation, reason, msg+"; retrying")
	return err
}

func setEmptyGuard(set *v1alpha1.PackageSet, kept int) {
	stalled(set, "NoTargets", fmt.Sprintf("the generator selects no target, but %d deployments exist: keeping them. "+
		"Fix the generator, or set spec.allowEmpty: true to undeploy them all", kept))
}

func setDeleting(set *v1alpha1.PackageSet, left int) {
	conditions.Set(&set.Status.Conditions, set.Generation, v1alpha1.ConditionReady, false, "Deleting",
		fmt.Sprintf("waiting for %d deployments to be undeployed and deleted", left))
}

func stalled(set *v1alpha1.PackageSet, reason, msg string) {
	conditions.Stalled(&set.Status.Conditions, set.Generation, reason, msg)
	meta.RemoveStatusCondition(&set.Status.Conditions, v1alpha1.ConditionProgressing)
}

// setProgress counts the set's deployments and sets its conditions. owned is the list read at the
// start of the reconcile: counts lag one reconcile behind writes, and the deployments' own events
// bring the set back.
// wrote is true when this reconcile wrote deployments (their statuses in owned are older).
func setProgress(set *v1alpha1.PackageSet, result generate.Result, owned []v1alpha1.PackageDeployment, wrote bool, waiting map[string]string) {
	gen := set.Generation
	wanted := map[string]bool{}
	for _, t := range result.Targets {
		wanted[t.Name] = true
	}
	updated, ready := 0, 0
	for i := range owned {
		pd := &owned[i]
		if !wanted[pd.Name] || !pd.DeletionTimestamp.IsZero() {
			continue
		}
		if pd.Status.ObservedGeneration == pd.Generation && meta.IsStatusConditionTrue(pd.Status.Conditions, v1alpha1.ConditionPublished) {
			updated++
		}
		if meta.IsStatusConditionTrue(pd.Status.Conditions, v1alpha1.ConditionReady) && pd.Status.ObservedGeneration == pd.Generation {
			ready++
		}
	}
	s := &set.Status
	s.Targets, s.Updated, s.Ready, s.Failed = len(result.Targets)+len(result.Problems), updated, ready, len(result.Problems)
	s.Problems = nil
	for i, p := range result.Problems {
		if i == maxProblems {
			break
		}
		s.Problems = append(s.Problems, v1alpha1.TargetProblem{Target: p.Target, Message: p.Message})
	}
	s.ObservedGeneration = gen
	for state, n := range map[string]int{"total": s.Targets, "updated": updated, "ready": ready, "failed": s.Failed} {
		metrics.Targets.WithLabelValues(set.Namespace, set.Name, state).Set(float64(n))
	}

	// Progressing (the set's own condition, as a Deployment's) says whether deployments move;
	// Ready, Reconciling and Stalled say, as for every kind, whether the set is done, still at
	// work or waiting for a person (kstatus).
	ro := s.Rollout
	switch {
	case ro != nil && ro.Halted && len(ro.RolledBack) > 0:
		stalled(set, "RolledBack", ro.Message)
	case ro != nil && ro.Halted:
		stalled(set, "RolloutHalted", ro.Message)
	case ro != nil && ro.Paused:
		// Waiting for a person to resume, as a proposal waits for approval: not done, no error.
		conditions.Progressing(&s.Conditions, gen, "RolloutPaused", ro.Message)
		conditions.Set(&s.Conditions, gen, v1alpha1.ConditionProgressing, false, "RolloutPaused", ro.Message)
	case len(result.Problems) > 0:
		msg := fmt.Sprintf("%d of %d targets have problems (see status.problems), first: %s: %s", len(result.Problems), s.Targets, result.Problems[0].Target, result.Problems[0].Message)
		moving := ready < len(result.Targets) || wrote || (ro != nil && !rollout.Done(ro))
		if moving {
			conditions.Progressing(&s.Conditions, gen, "TargetProblems", msg)
		} else {
			// Everything else is ready: only fixing the problems finishes the set.
			conditions.Stalled(&s.Conditions, gen, "TargetProblems", msg)
		}
		conditions.Set(&s.Conditions, gen, v1alpha1.ConditionProgressing, moving, "TargetProblems", msg)
	case len(waiting) > 0 && ro == nil:
		names := slices.Sorted(maps.Keys(waiting))
		msg := fmt.Sprintf("%d of %d targets wait for their dependencies, first %s: waiting for %s", len(waiting), len(result.Targets), names[0], waiting[names[0]])
		conditions.Progressing(&s.Conditions, gen, "WaitingForDependency", msg)
		conditions.Set(&s.Conditions, gen, v1alpha1.ConditionProgressing, true, "WaitingForDependency", msg)
	case ready < len(result.Targets) || wrote || (ro != nil && !rollout.Done(ro)):
		msg := fmt.Sprintf("%d of %d deployments ready, %d updated", ready, len(result.Targets), updated)
		if ro != nil {
			msg += "; rollout of " + ro.Revision + ": " + ro.Message
		}
		conditions.Progressing(&s.Conditions, gen, "Progressing", msg)
		conditions.Set(&s.Conditions, gen, v1alpha1.ConditionProgressing, true, "Progressing", msg)
	default:
		msg := fmt.Sprintf("all %d deployments ready", ready)
		conditions.Ready(&s.Conditions, gen, "Ready", msg)
		conditions.Set(&s.Conditions, gen, v1alpha1.ConditionProgressing, false, "Ready", msg)
	}
}

// transientAPIError reports whether err is an API server error that retrying may cure (a
// timeout, throttling, an internal error, a conflict), not one that names the user's mistake.
func transientAPIError(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	return !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) &&
		!apierrors.IsBadRequest(err) && !apierrors.IsUnauthorized(err) && !apierrors.IsMethodNotSupported(err)
}
