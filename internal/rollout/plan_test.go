package rollout

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

func TestPlan(t *testing.T) {
	canary := v1alpha1.RolloutStep{Selector: &v1alpha1.LabelSelector{MatchLabels: map[string]string{"wave": "canary"}}, Pause: true}
	steps := &v1alpha1.RollingUpdate{Steps: []v1alpha1.RolloutStep{canary, {}}}
	byRegion := &v1alpha1.RollingUpdate{PartitionBy: "region", Steps: []v1alpha1.RolloutStep{{}}}
	targets := []Target{
		{Name: "c", Labels: map[string]string{"region": "us"}, Current: "app/v1", Healthy: true},
		{Name: "a", Labels: map[string]string{"wave": "canary", "region": "eu"}, Current: "app/v2", Healthy: true},
		{Name: "b", Labels: map[string]string{"region": "eu"}, Current: "app/v2"},
		{Name: "d", Current: "app/v1", Healthy: true},
	}
	// summary is each step as "State: target=state ...".
	type summary struct {
		State     StepState
		Partition string
		Targets   map[string]TargetState
	}
	tests := []struct {
		name string
		ru   *v1alpha1.RollingUpdate
		st   *v1alpha1.RolloutStatus
		want []summary
	}{{
		name: "not started: every step pending, every target waiting",
		ru:   steps,
		want: []summary{
			{State: StepPending, Targets: map[string]TargetState{"a": TargetWaiting}},
			{State: StepPending, Targets: map[string]TargetState{"b": TargetWaiting, "c": TargetWaiting, "d": TargetWaiting}},
		},
	}, {
		name: "paused after the canary",
		ru:   steps,
		st:   &v1alpha1.RolloutStatus{Revision: "app/v2", Step: 0, Paused: true},
		want: []summary{
			{State: StepPaused, Targets: map[string]TargetState{"a": TargetDone}},
			{State: StepPending, Targets: map[string]TargetState{"b": TargetMoving, "c": TargetWaiting, "d": TargetWaiting}},
		},
	}, {
		name: "halted on the second step: failed and rolled back targets",
		ru:   steps,
		st: &v1alpha1.RolloutStatus{Revision: "app/v2", Step: 1, Halted: true, FailedTargets: []string{"b"},
			RolledBack: []v1alpha1.RolledBackTarget{{Target: "c", From: "app/v2", To: "app/v1"}}},
		want: []summary{
			{State: StepDone, Targets: map[string]TargetState{"a": TargetDone}},
			{State: StepHalted, Targets: map[string]TargetState{"b": TargetFailed, "c": TargetRolledBack, "d": TargetWaiting}},
		},
	}, {
		name: "complete",
		ru:   steps,
		st:   &v1alpha1.RolloutStatus{Revision: "app/v2", Step: 1, Message: DoneMessage},
		want: []summary{
			{State: StepDone, Targets: map[string]TargetState{"a": TargetDone}},
			{State: StepDone, Targets: map[string]TargetState{"b": TargetMoving, "c": TargetWaiting, "d": TargetWaiting}},
		},
	}, {
		name: "partitionBy: one step per value, the current one found by its value",
		ru:   byRegion,
		st:   &v1alpha1.RolloutStatus{Revision: "app/v2", Step: 0, Partition: "us"},
		want: []summary{
			{State: StepDone, Partition: "eu", Targets: map[string]TargetState{"a": TargetDone, "b": TargetMoving}},
			{State: StepCurrent, Partition: "us", Targets: map[string]TargetState{"c": TargetWaiting}},
			{State: StepPending, Targets: map[string]TargetState{"d": TargetWaiting}},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := Plan(tt.ru, targets, tt.st)
			if err != nil {
				t.Fatal(err)
			}
			var got []summary
			for _, s := range plan {
				sum := summary{State: s.State, Partition: s.Partition, Targets: map[string]TargetState{}}
				for _, tg := range s.Targets {
					sum.Targets[tg.Name] = tg.State
				}
				got = append(got, sum)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Plan (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlanInvalidSelector(t *testing.T) {
	ru := &v1alpha1.RollingUpdate{Steps: []v1alpha1.RolloutStep{{Selector: &v1alpha1.LabelSelector{
		MatchExpressions: []v1alpha1.LabelSelectorRequirement{{Key: "wave", Operator: "Bogus"}}}}}}
	if _, err := Plan(ru, nil, nil); err == nil {
		t.Error("Plan accepted an invalid selector")
	}
}
