package rollout

import (
	"slices"
	"strings"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// TargetState is where one target stands in its set's rollout.
type TargetState string

// Target states, as the rollout classifies them.
const (
	TargetDone    TargetState = "Done"    // at the revision and healthy
	TargetMoving  TargetState = "Moving"  // at the revision, not healthy yet
	TargetWaiting TargetState = "Waiting" // not at the revision yet
	TargetFailed  TargetState = "Failed"  // not healthy within the health timeout (status.rollout.failedTargets)
	// TargetRolledBack returned to its last healthy revision (status.rollout.rolledBack).
	TargetRolledBack TargetState = "RolledBack"
)

// StepState is where one step stands.
type StepState string

// Step states.
const (
	StepDone    StepState = "Done"    // every target of the step (and of the steps before) moved
	StepCurrent StepState = "Current" // the step the rollout works on
	StepPaused  StepState = "Paused"  // done, and the rollout waits for flotilla.dev/resume
	StepHalted  StepState = "Halted"  // a target failed: nothing moves until the spec changes
	StepPending StepState = "Pending" // not reached yet
)

// PlannedStep is one step of a rolling update with the targets it takes.
type PlannedStep struct {
	Step v1alpha1.RolloutStep // with partitionBy, the template with the selector of its value
	// Partition is, with partitionBy, the label value the step takes ("" for the targets without
	// the label, and without partitionBy).
	Partition string
	State     StepState
	Targets   []PlannedTarget // in name order
}

// PlannedTarget is one target of a step and its state.
type PlannedTarget struct {
	Target
	State TargetState
}

// Plan is how Next sees a rolling update at status st: its steps (partitionBy expanded), each
// with the targets it takes and the state of each, for the people watching the rollout. It
// decides nothing: the steps, the step of each target and the classification are Next's own.
// A rollout without status (not started) has every step pending; an invalid selector is the
// error Next reports in the status message.
func Plan(ru *v1alpha1.RollingUpdate, targets []Target, st *v1alpha1.RolloutStatus) ([]PlannedStep, error) {
	targets = slices.Clone(targets)
	slices.SortFunc(targets, func(a, b Target) int { return strings.Compare(a.Name, b.Name) })
	steps, _ := settings(ru)
	if ru != nil && ru.PartitionBy != "" {
		steps = partitionSteps(ru.PartitionBy, steps[0], targets)
	}
	groups, err := partition(steps, targets)
	if err != nil {
		return nil, err
	}
	current, failed, back := -1, map[string]bool{}, map[string]bool{} // -1: not started, every step pending
	revision := ""
	if st != nil {
		current, revision = min(max(stepOf(ru, steps, st), 0), len(steps)-1), st.Revision
		for _, n := range st.FailedTargets {
			failed[n] = true
		}
		for _, b := range st.RolledBack {
			back[b.Target] = true
		}
	}
	out := make([]PlannedStep, len(steps))
	for i, s := range steps {
		p := PlannedStep{Step: s, State: StepPending}
		if ru != nil && ru.PartitionBy != "" {
			p.Partition = partitionOf(ru.PartitionBy, s)
		}
		switch {
		case current < 0:
		case i < current, i == current && Done(st):
			p.State = StepDone
		case i == current && st.Halted:
			p.State = StepHalted
		case i == current && st.Paused:
			p.State = StepPaused
		case i == current:
			p.State = StepCurrent
		}
		for _, t := range groups[i] {
			p.Targets = append(p.Targets, PlannedTarget{Target: t, State: targetState(t, revision, failed, back)})
		}
		out[i] = p
	}
	return out, nil
}

func targetState(t Target, revision string, failed, back map[string]bool) TargetState {
	switch {
	case failed[t.Name]:
		return TargetFailed
	case back[t.Name] && t.Current != revision:
		return TargetRolledBack
	case revision == "" || t.Current != revision:
		return TargetWaiting
	case t.Healthy:
		return TargetDone
	}
	return TargetMoving
}
