// Package rollout decides which targets of a PackageSet move to the blueprint revision it asks
// for next. It is pure: the caller passes what it observed (targets, previous status, the resume
// annotation) and the time, and applies the returned pins and status. That keeps every rollout
// story a table test over time, and makes the decision the same on every replica.
package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// DefaultHealthTimeout is how long a moved target may take to become healthy when the
// strategy does not say.
const DefaultHealthTimeout = 10 * time.Minute

// DoneMessage is the status message of a rollout whose last step completed. It is constant, so
// callers can tell a finished rollout from one in progress (RolloutStatus has no field for it).
const DoneMessage = "rollout complete: every step became healthy; clusters that join get the revision at once"

// Target is one target of the set as the caller observed it.
type Target struct {
	Name    string            // the target's deployment name (unique)
	Labels  map[string]string // the target cluster's labels (steps select on them)
	Current string            // blueprint revision (tag) its deployment pins now; "" when it has no deployment yet
	Healthy bool              // its deployment reports the Current revision synced and healthy
	Since   time.Time         // when Current last changed (zero if unknown)
	// LastHealthy is the last revision (tag) that was healthy on the target ("" if none): where a
	// rollback returns it.
	LastHealthy string
	// Blocked, when not empty, is what the target waits for before it may move (a set it depends
	// on): it is not moved, and its step does not complete.
	Blocked string
}

// Input is everything a decision depends on.
type Input struct {
	Strategy v1alpha1.RolloutStrategy
	Desired  string                  // the blueprint revision (tag) the set asks for now
	Targets  []Target                // in any order
	Status   *v1alpha1.RolloutStatus // the previous status (nil at first)
	Resume   string                  // current value of the flotilla.dev/resume annotation
	Undo     string                  // current value of the flotilla.dev/undo annotation
	Now      time.Time
	// Set is the PackageSet's name; messages use it to say how to resume.
	Set string
}

// Decision is what the caller applies.
type Decision struct {
	Move   []string                // targets to pin to Desired now, sorted
	Status *v1alpha1.RolloutStatus // the new status; nil for AllAtOnce
	// Back maps the targets to roll back now to the revision (tag) they return to.
	Back map[string]string
	// Recheck, when not zero, is how long until the health timeout of an unavailable target runs
	// out: the caller must call Next again by then even if no target changes.
	Recheck time.Duration
}

// Done reports whether a status describes a rollout whose last step completed.
func Done(st *v1alpha1.RolloutStatus) bool {
	return st != nil && !st.Halted && !st.Paused && st.Message == DoneMessage
}

// Next decides which targets move to in.Desired now. AllAtOnce moves every target that is not
// there; RollingUpdate moves them step by step (see rolling).
func Next(in Input) Decision {
	targets := slices.Clone(in.Targets)
	slices.SortFunc(targets, func(a, b Target) int { return strings.Compare(a.Name, b.Name) })
	if in.Strategy.Type != v1alpha1.StrategyRollingUpdate {
		return Decision{Move: notAt(in.Desired, targets)}
	}
	return rolling(in, targets)
}

// notAt names the targets not at the desired revision yet.
func notAt(desired string, targets []Target) []string {
	if desired == "" {
		return nil
	}
	var names []string
	for _, t := range targets {
		if t.Current != desired {
			names = append(names, t.Name)
		}
	}
	return names
}

// rolling runs a RollingUpdate. The status remembers the revision, the step and a pause; the
// rest is recomputed from the targets on every call, so a step that is already healthy (a
// revision some targets already run) costs nothing. A step's work covers the targets of every
// step up to it: a cluster that joins a step already done still gets the revision, under the
// current step's maxUnavailable, and a rolled target that turns unhealthy holds the rollout.
func rolling(in Input, targets []Target) (d Decision) {
	steps, timeout := settings(in.Strategy.RollingUpdate)
	st := in.Status.DeepCopy()
	if st == nil || st.Revision != in.Desired {
		// A new revision starts over from the first step; the resume and undo annotations'
		// current values are the baselines a later pause or undo waits to change.
		st = &v1alpha1.RolloutStatus{Revision: in.Desired, Resume: in.Resume, Undo: in.Undo}
	}
	if ru := in.Strategy.RollingUpdate; ru != nil && ru.PartitionBy != "" {
		steps = partitionSteps(ru.PartitionBy, steps[0], targets)
		st.Step = stepOf(ru, steps, st)
		defer func() {
			if d.Status != nil {
				d.Status.Partition = partitionOf(ru.PartitionBy, steps[min(max(d.Status.Step, 0), len(steps)-1)])
			}
		}()
	}
	if in.Undo != st.Undo && in.Desired != "" {
		// Rolled back by hand (flotilla rollout undo): every target the rollout moved returns.
		st.Undo, st.Halted, st.Paused = in.Undo, true, false
		back := rollback(st, targets, in.Desired, nil)
		st.Message = undoMessage(st.RolledBack, in.Desired)
		return Decision{Status: st, Back: back}
	}
	if st.Halted || in.Desired == "" {
		return Decision{Status: st}
	}
	if Done(st) {
		// The whole fleet runs the revision: clusters that join later get it at once, and a
		// target turning unhealthy afterwards is its cluster's Healthy condition, not a halt.
		return Decision{Move: notAt(in.Desired, targets), Status: st}
	}
	last := len(steps) - 1
	st.Step = min(max(st.Step, 0), last) // the spec may have lost steps since
	if st.Paused {
		if in.Resume == st.Resume {
			return Decision{Status: st}
		}
		st.Paused, st.Resume, st.Step = false, in.Resume, min(st.Step+1, last)
	}
	groups, err := partition(steps, targets)
	if err != nil {
		st.Message = "cannot roll out: " + err.Error()
		return Decision{Status: st}
	}
	for {
		p := classify(slices.Concat(groups[:st.Step+1]...), in.Desired, in.Now, timeout)
		switch {
		case len(p.failed) > 0:
			st.Halted = true
			st.FailedTargets = p.failed[:min(len(p.failed), maxFailed)]
			st.Message = haltMessage(p.failed, in.Desired, timeout)
			ru := in.Strategy.RollingUpdate
			if ru == nil || ru.OnFailure != v1alpha1.OnFailureRollback {
				return Decision{Status: st}
			}
			only := map[string]bool{}
			for _, name := range p.failed {
				only[name] = true
			}
			if ru.RollbackScope == v1alpha1.RollbackAll {
				only = nil
			}
			back := rollback(st, targets, in.Desired, only)
			st.Message = rollbackMessage(p.failed, st.RolledBack, in.Desired, timeout)
			return Decision{Status: st, Back: back}
		case len(p.pending) > 0 || len(p.unavailable) > 0:
			budget := maxUnavailable(steps[st.Step].MaxUnavailable, len(groups[st.Step])) - len(p.unavailable)
			var move []string
			if movable := unblocked(p.pending, targets); budget > 0 {
				move = movable[:min(budget, len(movable))]
			}
			st.Message = progressMessage(st.Step, len(steps), p, move, in.Desired)
			if b := blocked(p.pending, targets); len(b) > 0 {
				st.Message += "; " + b
			}
			d := Decision{Move: move, Status: st}
			if !p.deadline.IsZero() {
				d.Recheck = max(p.deadline.Sub(in.Now), 0) + time.Second
			}
			return d
		case st.Step == last:
			st.Message = DoneMessage
			return Decision{Status: st}
		case steps[st.Step].Pause:
			// The baseline is the annotation's value now, so only a resume given after the
			// pause is visible releases it.
			st.Paused, st.Resume = true, in.Resume
			st.Message = pauseMessage(st.Step, len(steps), len(p.done), len(targets), in.Desired, in.Set)
			return Decision{Status: st}
		}
		st.Step++
	}
}

// rollback returns the targets at desired (those in only, every one when only is nil) to their
// last healthy revision, and records them in st.RolledBack. Targets never healthy on another
// revision have nowhere to go and stay.
func rollback(st *v1alpha1.RolloutStatus, targets []Target, desired string, only map[string]bool) map[string]string {
	back := map[string]string{}
	st.RolledBack = nil
	for _, t := range targets {
		if t.Current != desired || t.LastHealthy == "" || t.LastHealthy == desired || (only != nil && !only[t.Name]) {
			continue
		}
		back[t.Name] = t.LastHealthy
		if len(st.RolledBack) < maxRolledBack {
			st.RolledBack = append(st.RolledBack, v1alpha1.RolledBackTarget{Target: t.Name, From: desired, To: t.LastHealthy})
		}
	}
	return back
}

// unblocked is the names of pending that wait for nothing.
func unblocked(pending []string, targets []Target) []string {
	by := map[string]string{}
	for _, t := range targets {
		by[t.Name] = t.Blocked
	}
	var out []string
	for _, n := range pending {
		if by[n] == "" {
			out = append(out, n)
		}
	}
	return out
}

// blocked says which of pending wait for a dependency, and for what (the first), "" when none.
func blocked(pending []string, targets []Target) string {
	by := map[string]string{}
	for _, t := range targets {
		by[t.Name] = t.Blocked
	}
	var held []string
	first := ""
	for _, n := range pending {
		if by[n] != "" {
			held = append(held, n)
			if first == "" {
				first = by[n]
			}
		}
	}
	if len(held) == 0 {
		return ""
	}
	return fmt.Sprintf("%s wait for their dependencies (%s waits for %s)", names(held, maxNames), held[0], first)
}

// progress sorts the targets in scope of a step.
type progress struct {
	done        []string  // at the revision and healthy
	unavailable []string  // at the revision, not healthy yet
	pending     []string  // not at the revision
	failed      []string  // unavailable for longer than the health timeout
	deadline    time.Time // when the first unavailable target that has not failed yet will
}

func classify(targets []Target, desired string, now time.Time, timeout time.Duration) progress {
	var p progress
	for _, t := range targets {
		switch {
		case t.Current != desired:
			p.pending = append(p.pending, t.Name)
		case t.Healthy:
			p.done = append(p.done, t.Name)
		default:
			p.unavailable = append(p.unavailable, t.Name)
			// Without a known pin time there is nothing to count from: the target stays
			// unavailable (and holds the step) rather than failing at once.
			switch end := t.Since.Add(timeout); {
			case t.Since.IsZero():
			case now.After(end):
				p.failed = append(p.failed, t.Name)
			case p.deadline.IsZero() || end.Before(p.deadline):
				p.deadline = end
			}
		}
	}
	// Targets come sorted per step; the scope spans steps.
	slices.Sort(p.done)
	slices.Sort(p.unavailable)
	slices.Sort(p.pending)
	slices.Sort(p.failed)
	return p
}
