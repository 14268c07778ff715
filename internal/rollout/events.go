package rollout

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// Event is one rollout decision worth an event on the set: a rollout starting, moving to its next
// step, pausing, resuming, halting, rolling back or finishing.
type Event struct {
	Type    string // corev1.EventTypeNormal or EventTypeWarning
	Reason  string
	Message string
}

// Events are the decisions between two statuses of a set's rollout (before: the status it had,
// after: the one decided now). A status that did not change in what it decided gives none, so a
// set reconciled again records nothing twice.
func Events(before, after *v1alpha1.RolloutStatus) []Event {
	if after == nil {
		return nil
	}
	normal := func(reason, format string, args ...any) Event {
		return Event{Type: corev1.EventTypeNormal, Reason: reason, Message: fmt.Sprintf(format, args...)}
	}
	if before == nil || before.Revision != after.Revision {
		if after.Revision == "" {
			return nil
		}
		before = &v1alpha1.RolloutStatus{Revision: after.Revision, Resume: after.Resume, Undo: after.Undo}
		if !Done(after) {
			// A rollout that finds every target there already only finishes.
			return append([]Event{normal("RolloutStarted", "rolling out %s: %s", after.Revision, after.Message)}, Events(before, after)...)
		}
	}
	var out []Event
	switch {
	case len(after.RolledBack) > 0 && (len(before.RolledBack) == 0 || before.Undo != after.Undo):
		out = append(out, Event{Type: corev1.EventTypeWarning, Reason: "RolledBack", Message: after.Message})
	case after.Halted && !before.Halted:
		out = append(out, Event{Type: corev1.EventTypeWarning, Reason: "RolloutHalted", Message: after.Message})
	case after.Halted:
	case Done(after) && !Done(before):
		out = append(out, normal("RolloutComplete", "%s: %s", after.Revision, after.Message))
	case after.Paused && !before.Paused:
		out = append(out, normal("RolloutPaused", "%s", after.Message))
	case before.Paused && !after.Paused:
		out = append(out, normal("RolloutResumed", "step %d: %s", after.Step+1, after.Message))
	case after.Step > before.Step:
		out = append(out, normal("RolloutStep", "step %d: %s", after.Step+1, after.Message))
	}
	return out
}
