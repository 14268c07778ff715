package rollout

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// settings is the steps and health timeout of a rolling update with defaults filled in. The
// schema requires steps; without them the whole set is one careful step rather than a crash.
func settings(ru *v1alpha1.RollingUpdate) ([]v1alpha1.RolloutStep, time.Duration) {
	steps, timeout := []v1alpha1.RolloutStep{{}}, DefaultHealthTimeout
	if ru == nil {
		return steps, timeout
	}
	if len(ru.Steps) > 0 {
		steps = ru.Steps
	}
	if ru.HealthTimeout != nil && ru.HealthTimeout.Duration > 0 {
		timeout = ru.HealthTimeout.Duration
	}
	return steps, timeout
}

// partitionSteps makes one step per value of the label key among the targets, sorted, then one
// for the targets without the label, each a copy of template with a selector.
func partitionSteps(key string, template v1alpha1.RolloutStep, targets []Target) []v1alpha1.RolloutStep {
	seen := map[string]bool{}
	for _, t := range targets {
		if v, ok := t.Labels[key]; ok {
			seen[v] = true
		}
	}
	values := make([]string, 0, len(seen))
	for v := range seen {
		values = append(values, v)
	}
	sort.Strings(values)
	steps := make([]v1alpha1.RolloutStep, 0, len(values)+1)
	for _, v := range values {
		s := *template.DeepCopy()
		s.Selector = &v1alpha1.LabelSelector{MatchLabels: map[string]string{key: v}}
		steps = append(steps, s)
	}
	// The rest: a step without selector (also the only step when no target has the label).
	rest := *template.DeepCopy()
	rest.Selector = nil
	return append(steps, rest)
}

// stepOf is the index of the step st is at. With partitionBy the step is remembered by its label
// value: a value that appears later (sorting before it) shifts the indexes, not the rollout.
func stepOf(ru *v1alpha1.RollingUpdate, steps []v1alpha1.RolloutStep, st *v1alpha1.RolloutStatus) int {
	if ru != nil && ru.PartitionBy != "" && st.Partition != "" {
		if i := slices.IndexFunc(steps, func(s v1alpha1.RolloutStep) bool { return partitionOf(ru.PartitionBy, s) == st.Partition }); i >= 0 {
			return i
		}
	}
	return st.Step
}

// partitionOf is the label value a partitionBy step selects ("" for the step of the rest).
func partitionOf(key string, s v1alpha1.RolloutStep) string {
	if s.Selector == nil {
		return ""
	}
	return s.Selector.MatchLabels[key]
}

// partition gives each step its targets, in name order: the first step whose selector matches a
// target takes it, a step without selector takes the rest, and targets no step takes belong to
// the last step (so no target is ever left out of a rollout).
func partition(steps []v1alpha1.RolloutStep, targets []Target) ([][]Target, error) {
	selectors := make([]labels.Selector, len(steps))
	for i, s := range steps {
		selectors[i] = labels.Everything()
		if s.Selector == nil {
			continue
		}
		sel, err := s.Selector.Selector()
		if err != nil {
			return nil, fmt.Errorf("the selector of step %d is invalid (%w); fix spec.strategy.rollingUpdate.steps[%d].selector", i+1, err, i)
		}
		selectors[i] = sel
	}
	groups := make([][]Target, len(steps))
	for _, t := range targets {
		i := len(steps) - 1
		for j, sel := range selectors {
			if sel.Matches(labels.Set(t.Labels)) {
				i = j
				break
			}
		}
		groups[i] = append(groups[i], t)
	}
	return groups, nil
}

// maxUnavailable is how many of a step's total targets may be moving at once: a number or a
// percentage rounded down, at least 1 so every step makes progress. A value the schema let
// through but that is neither (a string without %) counts as the default, 1: the careful choice.
func maxUnavailable(v *intstr.IntOrString, total int) int {
	n := 1
	if v != nil {
		if scaled, err := intstr.GetScaledValueFromIntOrPercent(v, total, false); err == nil {
			n = scaled
		}
	}
	return max(n, 1)
}
