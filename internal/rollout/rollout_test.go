package rollout

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// tick is one reconcile: the world changes, Next decides, and the test checks the decision
// before the simulated controller applies it (pins the moved targets, not healthy yet).
type tick struct {
	at      time.Duration // since t0
	desired string        // the set asks for another revision from now on
	resume  string        // the annotation's value from now on
	undo    string        // the undo annotation's value from now on
	healthy []string      // these targets' agents report their current pin healthy from now on
	sick    []string      // these targets' agents report their current pin unhealthy from now on
	join    []Target      // the generator yields these targets from now on

	move   []string
	back   map[string]string // the rollbacks the decision makes (nil: none)
	status *v1alpha1.RolloutStatus
}

// run plays ticks against a simulated fleet whose targets start at revision v1, healthy.
func run(t *testing.T, strategy v1alpha1.RolloutStrategy, targets []Target, ticks []tick) {
	t.Helper()
	fleet := map[string]*Target{}
	var order []string
	add := func(ts []Target) {
		for _, tg := range ts {
			fleet[tg.Name] = &tg
			order = append(order, tg.Name)
		}
	}
	add(targets)
	desired, resume, undo := "app/v2", "", ""
	var status *v1alpha1.RolloutStatus
	for i, tk := range ticks {
		now := t0.Add(tk.at)
		add(tk.join)
		if tk.desired != "" {
			desired = tk.desired
		}
		if tk.resume != "" {
			resume = tk.resume
		}
		if tk.undo != "" {
			undo = tk.undo
		}
		for _, n := range tk.healthy {
			fleet[n].Healthy = true
		}
		for _, n := range tk.sick {
			fleet[n].Healthy = false
		}
		in := Input{Strategy: strategy, Desired: desired, Status: status, Resume: resume, Undo: undo, Now: now, Set: "upf"}
		for _, n := range order {
			in.Targets = append(in.Targets, *fleet[n])
		}
		got := Next(in)
		if diff := cmp.Diff(tk.move, got.Move); diff != "" {
			t.Fatalf("tick %d (%s): Move (-want +got):\n%s", i, tk.at, diff)
		}
		if diff := cmp.Diff(tk.status, got.Status); diff != "" {
			t.Fatalf("tick %d (%s): Status (-want +got):\n%s", i, tk.at, diff)
		}
		var back map[string]string
		if len(got.Back) > 0 {
			back = got.Back
		}
		if diff := cmp.Diff(tk.back, back); diff != "" {
			t.Fatalf("tick %d (%s): Back (-want +got):\n%s", i, tk.at, diff)
		}
		for _, n := range got.Move {
			last := fleet[n].LastHealthy
			if fleet[n].Healthy {
				last = fleet[n].Current
			}
			*fleet[n] = Target{Name: n, Labels: fleet[n].Labels, Current: desired, Since: now, LastHealthy: last}
		}
		for n, tag := range got.Back {
			// The revision it returns to was healthy there.
			*fleet[n] = Target{Name: n, Labels: fleet[n].Labels, Current: tag, Healthy: true, Since: now, LastHealthy: tag}
		}
		status = got.Status
	}
}

func at(name, rev string, labels map[string]string) Target {
	return Target{Name: name, Labels: labels, Current: rev, Healthy: rev != "", Since: t0.Add(-24 * time.Hour)}
}

var canary = map[string]string{"wave": "canary"}

func rollingUpdate(timeout time.Duration, steps ...v1alpha1.RolloutStep) v1alpha1.RolloutStrategy {
	ru := &v1alpha1.RollingUpdate{Steps: steps}
	if timeout > 0 {
		ru.HealthTimeout = &metav1.Duration{Duration: timeout}
	}
	return v1alpha1.RolloutStrategy{Type: v1alpha1.StrategyRollingUpdate, RollingUpdate: ru}
}

func canaryStep() v1alpha1.RolloutStep {
	return v1alpha1.RolloutStep{Selector: &v1alpha1.LabelSelector{MatchLabels: canary}, Pause: true}
}

func unavailable(n int) *intstr.IntOrString { v := intstr.FromInt32(int32(n)); return &v }
func percent(s string) *intstr.IntOrString  { v := intstr.FromString(s); return &v }

func waiting(step, done, total int, rev, names string) string {
	return fmt.Sprintf("step %d of 2: %d of %d targets healthy at %s; waiting for %s to become healthy", step, done, total, rev, names)
}

// paused is the message after a canary step of one target.
func paused(total int, rev string) string {
	return fmt.Sprintf("paused after step 1 of 2, 1 of %d targets healthy at %s; to go on, run `flotilla rollout resume upf` or give the flotilla.dev/resume annotation a new value", total, rev)
}

func TestCanaryPauseThenRest(t *testing.T) {
	targets := []Target{at("e4", "app/v1", nil), at("c1", "app/v1", canary), at("e1", "app/v1", nil), at("e2", "app/v1", nil), at("e3", "app/v1", nil)}
	run(t, rollingUpdate(0, canaryStep(), v1alpha1.RolloutStep{MaxUnavailable: unavailable(2)}), targets, []tick{
		{move: []string{"c1"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Message: waiting(1, 0, 1, "app/v2", "c1")}},
		{at: time.Minute, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Message: waiting(1, 0, 1, "app/v2", "c1")}},
		{at: 2 * time.Minute, healthy: []string{"c1"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Paused: true, Message: paused(5, "app/v2")}},
		// Paused: nothing moves however long it takes.
		{at: time.Hour, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Paused: true, Message: paused(5, "app/v2")}},
		{at: time.Hour + time.Minute, resume: "r1", move: []string{"e1", "e2"},
			status: &v1alpha1.RolloutStatus{Revision: "app/v2", Step: 1, Resume: "r1", Message: waiting(2, 1, 5, "app/v2", "e1, e2")}},
		{at: time.Hour + 2*time.Minute, healthy: []string{"e1"}, move: []string{"e3"},
			status: &v1alpha1.RolloutStatus{Revision: "app/v2", Step: 1, Resume: "r1", Message: waiting(2, 2, 5, "app/v2", "e2, e3")}},
		{at: time.Hour + 3*time.Minute, healthy: []string{"e2", "e3"}, move: []string{"e4"},
			status: &v1alpha1.RolloutStatus{Revision: "app/v2", Step: 1, Resume: "r1", Message: waiting(2, 4, 5, "app/v2", "e4")}},
		{at: time.Hour + 4*time.Minute, healthy: []string{"e4"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Step: 1, Resume: "r1", Message: DoneMessage}},
		// Once done, clusters that join get the revision at once, and a target turning
		// unhealthy later does not halt a finished rollout.
		{at: 2 * time.Hour, join: []Target{at("c2", "", canary), at("e5", "", nil)}, move: []string{"c2", "e5"},
			status: &v1alpha1.RolloutStatus{Revision: "app/v2", Step: 1, Resume: "r1", Message: DoneMessage}},
		{at: 3 * time.Hour, sick: []string{"e1", "c2"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Step: 1, Resume: "r1", Message: DoneMessage}},
	})
}

func TestRolledTargetTurningUnhealthyHoldsThenHalts(t *testing.T) {
	targets := []Target{at("c1", "app/v1", canary), at("e1", "app/v1", nil), at("e2", "app/v1", nil)}
	step2 := v1alpha1.RolloutStep{Selector: &v1alpha1.LabelSelector{MatchLabels: map[string]string{}}}
	run(t, rollingUpdate(0, v1alpha1.RolloutStep{Selector: &v1alpha1.LabelSelector{MatchLabels: canary}}, step2), targets, []tick{
		{move: []string{"c1"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Message: waiting(1, 0, 1, "app/v2", "c1")}},
		{at: time.Minute, healthy: []string{"c1"}, move: []string{"e1"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Step: 1, Message: waiting(2, 1, 3, "app/v2", "e1")}},
		{at: 2 * time.Minute, healthy: []string{"e1"}, sick: []string{"c1"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Step: 1, Message: waiting(2, 1, 3, "app/v2", "c1")}},
		{at: 11 * time.Minute, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Step: 1, Halted: true, FailedTargets: []string{"c1"},
			Message: "halted: c1 did not become healthy within 10m0s of being pinned to app/v2; nothing else moves until the set asks for another revision (publish a fixed one, or go back to the previous one)"}},
	})
}

func TestResumeGivenBeforePauseDoesNotSkipIt(t *testing.T) {
	targets := []Target{at("c1", "app/v1", canary), at("e1", "app/v1", nil)}
	run(t, rollingUpdate(0, canaryStep(), v1alpha1.RolloutStep{}), targets, []tick{
		{resume: "old", move: []string{"c1"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Resume: "old", Message: waiting(1, 0, 1, "app/v2", "c1")}},
		{at: time.Minute, resume: "early", status: &v1alpha1.RolloutStatus{Revision: "app/v2", Resume: "old", Message: waiting(1, 0, 1, "app/v2", "c1")}},
		{at: 2 * time.Minute, healthy: []string{"c1"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Paused: true, Resume: "early", Message: paused(2, "app/v2")}},
		{at: 3 * time.Minute, resume: "now", move: []string{"e1"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Step: 1, Resume: "now", Message: waiting(2, 1, 2, "app/v2", "e1")}},
	})
}

func TestPercentageMaxUnavailable(t *testing.T) {
	var targets []Target
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		targets = append(targets, at(n, "app/v1", nil))
	}
	// 50% of 5 targets rounds down to 2.
	one := func(msg string) *v1alpha1.RolloutStatus {
		return &v1alpha1.RolloutStatus{Revision: "app/v2", Message: msg}
	}
	msg := func(done int, names string) string {
		return fmt.Sprintf("step 1 of 1: %d of 5 targets healthy at app/v2; waiting for %s to become healthy", done, names)
	}
	run(t, rollingUpdate(0, v1alpha1.RolloutStep{MaxUnavailable: percent("50%")}), targets, []tick{
		{move: []string{"a", "b"}, status: one(msg(0, "a, b"))},
		{at: time.Minute, healthy: []string{"a"}, move: []string{"c"}, status: one(msg(1, "b, c"))},
		{at: 2 * time.Minute, healthy: []string{"b", "c"}, move: []string{"d", "e"}, status: one(msg(3, "d, e"))},
		{at: 3 * time.Minute, healthy: []string{"d", "e"}, status: one(DoneMessage)},
	})
}

func TestMaxUnavailable(t *testing.T) {
	cases := map[string]struct {
		v     *intstr.IntOrString
		total int
		want  int
	}{
		"default":                {nil, 8, 1},
		"number":                 {unavailable(3), 8, 3},
		"zero still moves":       {unavailable(0), 8, 1},
		"percentage rounds down": {percent("25%"), 10, 2},
		"at least one":           {percent("10%"), 5, 1},
		"all":                    {percent("100%"), 5, 5},
		"not a percentage":       {percent("many"), 5, 1},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, maxUnavailable(c.v, c.total)); diff != "" {
				t.Error(diff)
			}
		})
	}
}

func TestHealthTimeoutHalts(t *testing.T) {
	targets := []Target{at("a", "app/v1", nil), at("b", "app/v1", nil), at("c", "app/v1", nil)}
	halted := &v1alpha1.RolloutStatus{Revision: "app/v2", Halted: true, FailedTargets: []string{"a", "b"},
		Message: "halted: a, b did not become healthy within 5m0s of being pinned to app/v2; nothing else moves until the set asks for another revision (publish a fixed one, or go back to the previous one)"}
	run(t, rollingUpdate(5*time.Minute, v1alpha1.RolloutStep{MaxUnavailable: unavailable(2)}), targets, []tick{
		{move: []string{"a", "b"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Message: "step 1 of 1: 0 of 3 targets healthy at app/v2; waiting for a, b to become healthy"}},
		{at: 5 * time.Minute, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Message: "step 1 of 1: 0 of 3 targets healthy at app/v2; waiting for a, b to become healthy"}},
		{at: 5*time.Minute + time.Second, status: halted},
		// Halted stays halted, even when a failed target recovers.
		{at: 10 * time.Minute, healthy: []string{"a", "b"}, status: halted},
		// A new revision is a new rollout.
		{at: 11 * time.Minute, desired: "app/v3", move: []string{"a", "b"},
			status: &v1alpha1.RolloutStatus{Revision: "app/v3", Message: "step 1 of 1: 0 of 3 targets healthy at app/v3; waiting for a, b to become healthy"}},
	})
}

func TestHaltNamesAtMostTenTargets(t *testing.T) {
	var targets []Target
	for i := range 12 {
		targets = append(targets, at(fmt.Sprintf("t%02d", i), "app/v1", nil))
	}
	all := []string{"t00", "t01", "t02", "t03", "t04", "t05", "t06", "t07", "t08", "t09", "t10", "t11"}
	run(t, rollingUpdate(0, v1alpha1.RolloutStep{MaxUnavailable: percent("100%")}), targets, []tick{
		{move: all, status: &v1alpha1.RolloutStatus{Revision: "app/v2",
			Message: "step 1 of 1: 0 of 12 targets healthy at app/v2; waiting for t00, t01, t02, t03, t04 and 7 more to become healthy"}},
		{at: 11 * time.Minute, healthy: []string{"t03"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Halted: true,
			FailedTargets: []string{"t00", "t01", "t02", "t04", "t05", "t06", "t07", "t08", "t09", "t10"},
			Message:       "halted: t00, t01, t02, t04, t05, t06, t07, t08, t09, t10 and 1 more did not become healthy within 10m0s of being pinned to app/v2; nothing else moves until the set asks for another revision (publish a fixed one, or go back to the previous one)"}},
	})
}

func TestUnknownPinTimeNeverHalts(t *testing.T) {
	stuck := Target{Name: "a", Current: "app/v2"} // Since unknown
	got := Next(Input{Strategy: rollingUpdate(time.Minute, v1alpha1.RolloutStep{}), Desired: "app/v2", Targets: []Target{stuck}, Now: t0})
	want := Decision{Status: &v1alpha1.RolloutStatus{Revision: "app/v2", Message: "step 1 of 1: 0 of 1 targets healthy at app/v2; waiting for a to become healthy"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
}

func TestNewRevisionRestartsFromFirstStep(t *testing.T) {
	targets := []Target{at("c1", "app/v1", canary), at("e1", "app/v1", nil), at("e2", "app/v1", nil)}
	run(t, rollingUpdate(0, canaryStep(), v1alpha1.RolloutStep{}), targets, []tick{
		{move: []string{"c1"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Message: waiting(1, 0, 1, "app/v2", "c1")}},
		{at: time.Minute, healthy: []string{"c1"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Paused: true, Message: paused(3, "app/v2")}},
		{at: 2 * time.Minute, resume: "r1", move: []string{"e1"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Step: 1, Resume: "r1", Message: waiting(2, 1, 3, "app/v2", "e1")}},
		// app/v3 arrives while e1 is still moving to app/v2: back to the canary, which pauses
		// again and needs a resume given after that pause.
		{at: 3 * time.Minute, desired: "app/v3", move: []string{"c1"}, status: &v1alpha1.RolloutStatus{Revision: "app/v3", Resume: "r1", Message: waiting(1, 0, 1, "app/v3", "c1")}},
		{at: 4 * time.Minute, healthy: []string{"c1"}, status: &v1alpha1.RolloutStatus{Revision: "app/v3", Paused: true, Resume: "r1", Message: paused(3, "app/v3")}},
		{at: 5 * time.Minute, resume: "r2", move: []string{"e1"}, status: &v1alpha1.RolloutStatus{Revision: "app/v3", Step: 1, Resume: "r2", Message: waiting(2, 1, 3, "app/v3", "e1")}},
	})
}

func TestFirstDeploymentIsRolledToo(t *testing.T) {
	targets := []Target{at("c1", "", canary), at("e1", "", nil), at("e2", "", nil)}
	run(t, rollingUpdate(0, canaryStep(), v1alpha1.RolloutStep{MaxUnavailable: percent("100%")}), targets, []tick{
		// Only the canary gets a deployment; e1 and e2 get none until their step.
		{move: []string{"c1"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Message: waiting(1, 0, 1, "app/v2", "c1")}},
		{at: time.Minute, healthy: []string{"c1"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Paused: true, Message: paused(3, "app/v2")}},
		{at: 2 * time.Minute, resume: "go", move: []string{"e1", "e2"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Step: 1, Resume: "go", Message: waiting(2, 1, 3, "app/v2", "e1, e2")}},
		{at: 3 * time.Minute, healthy: []string{"e1", "e2"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Step: 1, Resume: "go", Message: DoneMessage}},
	})
}

func TestTargetsNoStepTakesBelongToTheLastStep(t *testing.T) {
	steps := rollingUpdate(0,
		v1alpha1.RolloutStep{Selector: &v1alpha1.LabelSelector{MatchLabels: canary}},
		v1alpha1.RolloutStep{Selector: &v1alpha1.LabelSelector{MatchLabels: map[string]string{"wave": "two"}}, MaxUnavailable: percent("100%")})
	targets := []Target{at("c1", "app/v1", canary), at("x", "app/v1", nil), at("w2", "app/v1", map[string]string{"wave": "two"})}
	run(t, steps, targets, []tick{
		{move: []string{"c1"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Message: waiting(1, 0, 1, "app/v2", "c1")}},
		// No pause: step 2 starts in the same call, with x (matched by no step) in it.
		{at: time.Minute, healthy: []string{"c1"}, move: []string{"w2", "x"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Step: 1, Message: waiting(2, 1, 3, "app/v2", "w2, x")}},
	})
}

func TestInvalidSelectorMovesNothing(t *testing.T) {
	bad := v1alpha1.RolloutStep{Selector: &v1alpha1.LabelSelector{MatchExpressions: []v1alpha1.LabelSelectorRequirement{{Key: "wave", Operator: "Near"}}}}
	got := Next(Input{Strategy: rollingUpdate(0, bad, v1alpha1.RolloutStep{}), Desired: "app/v2", Targets: []Target{at("a", "app/v1", nil)}, Now: t0})
	want := Decision{Status: &v1alpha1.RolloutStatus{Revision: "app/v2",
		Message: `cannot roll out: the selector of step 1 is invalid ("Near" is not a valid label selector operator); fix spec.strategy.rollingUpdate.steps[0].selector`}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
}

func TestAllAtOnce(t *testing.T) {
	targets := []Target{at("c", "app/v1", nil), at("a", "app/v2", nil), at("b", "", nil), at("d", "app/v1", nil)}
	for _, typ := range []v1alpha1.StrategyType{"", v1alpha1.StrategyAllAtOnce} {
		t.Run(string(typ), func(t *testing.T) {
			// A status left from an earlier RollingUpdate is dropped.
			got := Next(Input{Strategy: v1alpha1.RolloutStrategy{Type: typ}, Desired: "app/v2", Targets: targets, Status: &v1alpha1.RolloutStatus{Revision: "app/v1"}, Now: t0})
			if diff := cmp.Diff(Decision{Move: []string{"b", "c", "d"}}, got); diff != "" {
				t.Error(diff)
			}
		})
	}
}

func TestDone(t *testing.T) {
	if Done(nil) || Done(&v1alpha1.RolloutStatus{Message: "step 1 of 2"}) || !Done(&v1alpha1.RolloutStatus{Message: DoneMessage}) {
		t.Error("Done misreads the status")
	}
}

func TestNextLeavesItsInputAlone(t *testing.T) {
	prev := &v1alpha1.RolloutStatus{Revision: "app/v2", Paused: true, Resume: "a"}
	targets := []Target{at("b", "app/v1", nil), at("a", "app/v1", nil)}
	Next(Input{Strategy: rollingUpdate(0, canaryStep(), v1alpha1.RolloutStep{}), Desired: "app/v2", Targets: targets, Status: prev, Resume: "b", Now: t0})
	if diff := cmp.Diff(&v1alpha1.RolloutStatus{Revision: "app/v2", Paused: true, Resume: "a"}, prev); diff != "" {
		t.Errorf("status changed: %s", diff)
	}
	if targets[0].Name != "b" {
		t.Error("targets reordered")
	}
}

// While targets are unavailable, the decision says when the first health timeout runs out, so
// the caller looks again then even if no target reports anything.
func TestRecheckAtTheFirstHealthTimeout(t *testing.T) {
	strategy := rollingUpdate(5*time.Minute, v1alpha1.RolloutStep{MaxUnavailable: unavailable(2)})
	pinned := func(name string, ago time.Duration) Target {
		return Target{Name: name, Current: "app/v2", Since: t0.Add(-ago)}
	}
	got := Next(Input{Strategy: strategy, Desired: "app/v2", Now: t0,
		Targets: []Target{pinned("a", time.Minute), pinned("b", 3*time.Minute), at("c", "app/v1", nil)}})
	if want := 2*time.Minute + time.Second; got.Recheck != want {
		t.Errorf("Recheck = %s, want %s (b's timeout, the earlier, plus a second)", got.Recheck, want)
	}
	// All healthy: nothing to wait for.
	healthy := pinned("a", time.Minute)
	healthy.Healthy = true
	got = Next(Input{Strategy: strategy, Desired: "app/v2", Now: t0, Targets: []Target{healthy}})
	if got.Recheck != 0 {
		t.Errorf("Recheck = %s for a finished rollout, want 0", got.Recheck)
	}
}

// onFailure Rollback: the target that did not become healthy returns to its last healthy
// revision (scope Failed), or every moved target does (scope All); the rollout halts on the bad
// revision and records what it rolled back.
func TestRollbackOnFailure(t *testing.T) {
	for _, tc := range []struct {
		scope v1alpha1.RollbackScope
		back  map[string]string
		moved []v1alpha1.RolledBackTarget
	}{
		{v1alpha1.RollbackFailed, map[string]string{"b": "app/v1"}, []v1alpha1.RolledBackTarget{{Target: "b", From: "app/v2", To: "app/v1"}}},
		{v1alpha1.RollbackAll, map[string]string{"a": "app/v1", "b": "app/v1"},
			[]v1alpha1.RolledBackTarget{{Target: "a", From: "app/v2", To: "app/v1"}, {Target: "b", From: "app/v2", To: "app/v1"}}},
	} {
		t.Run(string(tc.scope), func(t *testing.T) {
			strategy := rollingUpdate(5*time.Minute, v1alpha1.RolloutStep{MaxUnavailable: unavailable(1)})
			strategy.RollingUpdate.OnFailure, strategy.RollingUpdate.RollbackScope = v1alpha1.OnFailureRollback, tc.scope
			names := map[v1alpha1.RollbackScope]string{v1alpha1.RollbackFailed: "b → app/v1", v1alpha1.RollbackAll: "a → app/v1, b → app/v1"}[tc.scope]
			halted := &v1alpha1.RolloutStatus{Revision: "app/v2", Halted: true, FailedTargets: []string{"b"}, RolledBack: tc.moved,
				Message: "rolled back: b did not become healthy within 5m0s of being pinned to app/v2; returned " + names + "; nothing else moves until the set asks for another revision"}
			run(t, strategy, []Target{at("a", "app/v1", nil), at("b", "app/v1", nil), at("c", "app/v1", nil)}, []tick{
				{move: []string{"a"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Message: "step 1 of 1: 0 of 3 targets healthy at app/v2; waiting for a to become healthy"}},
				{at: time.Minute, healthy: []string{"a"}, move: []string{"b"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Message: "step 1 of 1: 1 of 3 targets healthy at app/v2; waiting for b to become healthy"}},
				{at: 6*time.Minute + time.Second, back: tc.back, status: halted},
				// Halted: nothing more moves, nothing more is rolled back.
				{at: 10 * time.Minute, status: halted},
			})
		})
	}
}

// flotilla rollout undo (a new flotilla.dev/undo value) returns every moved target, even after
// the rollout finished, and halts it.
func TestUndoByHand(t *testing.T) {
	strategy := rollingUpdate(0, v1alpha1.RolloutStep{MaxUnavailable: unavailable(2)})
	done := &v1alpha1.RolloutStatus{Revision: "app/v2", Message: DoneMessage}
	undone := &v1alpha1.RolloutStatus{Revision: "app/v2", Halted: true, Undo: "1",
		RolledBack: []v1alpha1.RolledBackTarget{{Target: "a", From: "app/v2", To: "app/v1"}, {Target: "b", From: "app/v2", To: "app/v1"}},
		Message:    "rolled back by hand (flotilla.dev/undo): returned a → app/v1, b → app/v1; the rollout of app/v2 is halted until the set asks for another revision"}
	run(t, strategy, []Target{at("a", "app/v1", nil), at("b", "app/v1", nil)}, []tick{
		{move: []string{"a", "b"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Message: "step 1 of 1: 0 of 2 targets healthy at app/v2; waiting for a, b to become healthy"}},
		{at: time.Minute, healthy: []string{"a", "b"}, status: done},
		{at: 2 * time.Minute, undo: "1", back: map[string]string{"a": "app/v1", "b": "app/v1"}, status: undone},
		{at: 3 * time.Minute, status: undone},
	})
}

// partitionBy makes one step per value of the label, in sorted order, then one for the targets
// without it; each step takes the template's maxUnavailable (here 50%).
func TestPartitionByLabel(t *testing.T) {
	strategy := rollingUpdate(0, v1alpha1.RolloutStep{MaxUnavailable: percent("50%")})
	strategy.RollingUpdate.PartitionBy = "region"
	eu, us := map[string]string{"region": "eu"}, map[string]string{"region": "us"}
	run(t, strategy, []Target{at("a", "app/v1", us), at("b", "app/v1", eu), at("c", "app/v1", eu), at("d", "app/v1", nil)}, []tick{
		{move: []string{"b"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Partition: "eu", Message: "step 1 of 3: 0 of 2 targets healthy at app/v2; waiting for b to become healthy"}},
		{at: time.Minute, healthy: []string{"b"}, move: []string{"c"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Partition: "eu", Message: "step 1 of 3: 1 of 2 targets healthy at app/v2; waiting for c to become healthy"}},
		{at: 2 * time.Minute, healthy: []string{"c"}, move: []string{"a"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Step: 1, Partition: "us", Message: "step 2 of 3: 2 of 3 targets healthy at app/v2; waiting for a to become healthy"}},
		{at: 3 * time.Minute, healthy: []string{"a"}, move: []string{"d"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Step: 2, Message: "step 3 of 3: 3 of 4 targets healthy at app/v2; waiting for d to become healthy"}},
		{at: 4 * time.Minute, healthy: []string{"d"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Step: 2, Message: DoneMessage}},
	})
}

// partitionBy remembers its step by the label value: a region that appears during the rollout
// and sorts before the current one shifts the indexes, not the rollout, and its targets join the
// steps already done (moved under the current step's budget).
func TestPartitionByKeepsItsPlace(t *testing.T) {
	strategy := rollingUpdate(0, v1alpha1.RolloutStep{MaxUnavailable: unavailable(1)})
	strategy.RollingUpdate.PartitionBy = "region"
	as, eu, us := map[string]string{"region": "as"}, map[string]string{"region": "eu"}, map[string]string{"region": "us"}
	run(t, strategy, []Target{at("a", "app/v1", eu), at("b", "app/v1", us)}, []tick{
		{move: []string{"a"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Partition: "eu", Message: "step 1 of 3: 0 of 1 targets healthy at app/v2; waiting for a to become healthy"}},
		{at: time.Minute, healthy: []string{"a"}, move: []string{"b"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Step: 1, Partition: "us", Message: "step 2 of 3: 1 of 2 targets healthy at app/v2; waiting for b to become healthy"}},
		{at: 2 * time.Minute, join: []Target{at("c", "app/v1", as)}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Step: 2, Partition: "us", Message: "step 3 of 4: 1 of 3 targets healthy at app/v2; waiting for b to become healthy"}},
		{at: 3 * time.Minute, healthy: []string{"b"}, move: []string{"c"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Step: 2, Partition: "us", Message: "step 3 of 4: 2 of 3 targets healthy at app/v2; waiting for c to become healthy"}},
		{at: 4 * time.Minute, healthy: []string{"c"}, status: &v1alpha1.RolloutStatus{Revision: "app/v2", Step: 3, Message: DoneMessage}},
	})
}
