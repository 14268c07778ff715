package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

const (
	maxFailed     = 10  // FailedTargets is capped by the schema
	maxRolledBack = 100 // and RolledBack
	maxNames      = 5   // names a progress message lists before "and N more"
)

// Messages are for the user reading the set's conditions: stable (no times, no counters that
// tick by themselves), and they say what the rollout waits for or what to do.

func progressMessage(step, steps int, p progress, move []string, desired string) string {
	waiting := slices.Concat(p.unavailable, move)
	slices.Sort(waiting)
	total := len(p.done) + len(p.unavailable) + len(p.pending)
	return fmt.Sprintf("step %d of %d: %d of %d targets healthy at %s; waiting for %s to become healthy",
		step+1, steps, len(p.done), total, desired, names(waiting, maxNames))
}

func pauseMessage(step, steps, healthy, total int, desired, set string) string {
	if set == "" {
		set = "SET"
	}
	return fmt.Sprintf("paused after step %d of %d, %d of %d targets healthy at %s; to go on, run `flotilla rollout resume %s` or give the %s annotation a new value",
		step+1, steps, healthy, total, desired, set, v1alpha1.AnnotationResume)
}

func haltMessage(failed []string, desired string, timeout time.Duration) string {
	return fmt.Sprintf("halted: %s did not become healthy within %s of being pinned to %s; nothing else moves until the set asks for another revision (publish a fixed one, or go back to the previous one)",
		names(failed, maxFailed), timeout, desired)
}

func rollbackMessage(failed []string, back []v1alpha1.RolledBackTarget, desired string, timeout time.Duration) string {
	return fmt.Sprintf("rolled back: %s did not become healthy within %s of being pinned to %s; %s; nothing else moves until the set asks for another revision",
		names(failed, maxFailed), timeout, desired, returned(back))
}

func undoMessage(back []v1alpha1.RolledBackTarget, desired string) string {
	return fmt.Sprintf("rolled back by hand (%s): %s; the rollout of %s is halted until the set asks for another revision", v1alpha1.AnnotationUndo, returned(back), desired)
}

// returned says which targets a rollback returned where.
func returned(back []v1alpha1.RolledBackTarget) string {
	if len(back) == 0 {
		return "no target had a healthy revision to return to"
	}
	parts := make([]string, 0, len(back))
	for _, b := range back {
		parts = append(parts, b.Target+" → "+b.To)
	}
	return "returned " + names(parts, maxNames)
}

// names lists up to n names and counts the rest, so a message stays short at any fleet size.
func names(all []string, n int) string {
	if len(all) <= n {
		return strings.Join(all, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(all[:n], ", "), len(all)-n)
}
