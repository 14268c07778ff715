package rollout

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

func TestEvents(t *testing.T) {
	st := func(step int, mutate ...func(*v1alpha1.RolloutStatus)) *v1alpha1.RolloutStatus {
		s := &v1alpha1.RolloutStatus{Revision: "app/v2", Step: step, Message: "m"}
		for _, m := range mutate {
			m(s)
		}
		return s
	}
	paused := func(s *v1alpha1.RolloutStatus) { s.Paused = true }
	halted := func(s *v1alpha1.RolloutStatus) { s.Halted = true }
	done := func(s *v1alpha1.RolloutStatus) { s.Message = DoneMessage }
	rolledBack := func(s *v1alpha1.RolloutStatus) {
		s.Halted, s.RolledBack = true, []v1alpha1.RolledBackTarget{{Target: "a", From: "app/v2", To: "app/v1"}}
	}
	tests := []struct {
		name          string
		before, after *v1alpha1.RolloutStatus
		want          []string // reason: message
	}{
		{"no rollout", nil, nil, nil},
		{"a new revision starts", &v1alpha1.RolloutStatus{Revision: "app/v1", Message: DoneMessage}, st(0), []string{"RolloutStarted: rolling out app/v2: m"}},
		{"a new revision that pauses at once", nil, st(0, paused), []string{"RolloutStarted: rolling out app/v2: m", "RolloutPaused: m"}},
		{"every target there already: only finished", nil, st(1, done), []string{"RolloutComplete: app/v2: " + DoneMessage}},
		{"nothing decided", st(0), st(0), nil},
		{"next step", st(0), st(1), []string{"RolloutStep: step 2: m"}},
		{"paused", st(0), st(0, paused), []string{"RolloutPaused: m"}},
		{"still paused", st(0, paused), st(0, paused), nil},
		{"resumed", st(0, paused), st(1), []string{"RolloutResumed: step 2: m"}},
		{"halted", st(1), st(1, halted), []string{"RolloutHalted: m"}},
		{"still halted", st(1, halted), st(1, halted), nil},
		{"rolled back", st(1), st(1, rolledBack), []string{"RolledBack: m"}},
		{"recorded when it happened", st(1, rolledBack), st(1, rolledBack), nil},
		{"undone again by hand", st(1, rolledBack), st(1, rolledBack, func(s *v1alpha1.RolloutStatus) { s.Undo = "2" }), []string{"RolledBack: m"}},
		{"complete", st(1), st(1, done), []string{"RolloutComplete: app/v2: " + DoneMessage}},
		{"still complete", st(1, done), st(1, done), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range Events(tt.before, tt.after) {
				got = append(got, e.Reason+": "+e.Message)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}
