package setplan

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/fleet"
	"github.com/flotilla-dev/flotilla/internal/generate"
	"github.com/flotilla-dev/flotilla/internal/rollout"
)

// AnnotationPinnedAt records, on a generated deployment, when the set last changed its revision:
// the health timeout of a rollout counts from there.
const AnnotationPinnedAt = "flotilla.dev/pinned-at"

// AnnotationLastHealthy records, on a generated deployment, the last revision (vN) that was
// healthy on it: where a rollback returns it.
const AnnotationLastHealthy = "flotilla.dev/last-healthy"

// AnnotationBlueprint records, on a deployment of a set with a variant, the blueprint revision
// (tag) the variant it pins was rendered from: where a rollout counts it.
const AnnotationBlueprint = "flotilla.dev/blueprint"

// AnnotationLastHealthyBlueprint records, next to AnnotationLastHealthy on a deployment of a
// variant, the blueprint revision (tag) that last healthy variant revision was rendered from.
const AnnotationLastHealthyBlueprint = "flotilla.dev/last-healthy-blueprint"

// Revisions says, per target name, which package revision its deployment pins; a target missing
// from the map gets no deployment yet (a rollout has not reached it).
type Revisions map[string]v1alpha1.PackageReference

// Decision is what the rollout logic asks for.
type Decision struct {
	// Revisions is the pin of each target that has a deployment now. For a set with a variant,
	// a target pinned to the set's blueprint revision gets its variant rendered from it.
	Revisions Revisions
	// Kept names, for a set with a variant, the targets whose deployment keeps (or returns to) the
	// variant revision in Revisions as it is, without rendering: a rollout has not moved them to
	// the blueprint revision asked for, or rolled them back. The value is the blueprint revision
	// (tag) that variant revision was rendered from.
	Kept map[string]string
	// Rollout is the set's new rollout status (nil for AllAtOnce).
	Rollout *v1alpha1.RolloutStatus
	// Recheck is when to look again without an event (0: not needed).
	Recheck time.Duration
}

// Decide runs the rollout logic: AllAtOnce pins every target to the set's revision; RollingUpdate
// pins to the exact blueprint revision only the targets the rollout moved, and keeps the others
// where they are. A set with a variant rolls out in blueprint revisions too: a target's place is
// the blueprint revision its variant was rendered from (AnnotationBlueprint), and one that stays
// keeps its variant revision, not rendered again.
// The recheck is when to look again without an event: a rollout waiting for targets to become
// healthy must halt when their health timeout runs out.
func Decide(in generate.Inputs, owned []v1alpha1.PackageDeployment, result generate.Result, now time.Time, wait gate, waiting map[string]string) Decision {
	set, up := in.Set, in.Upstream
	d := Decision{Revisions: Revisions{}, Kept: map[string]string{}}
	revs := d.Revisions
	if wait == nil {
		wait = func(string) string { return "" }
	}
	variant := set.Spec.Variant != nil
	// keep leaves pd where it is: a variant is not rendered again.
	keep := func(pd *v1alpha1.PackageDeployment) {
		revs[pd.Name] = *pd.Spec.Package.DeepCopy()
		if variant {
			d.Kept[pd.Name] = pd.Annotations[AnnotationBlueprint]
		}
	}
	byName := map[string]*v1alpha1.PackageDeployment{}
	for i := range owned {
		byName[owned[i].Name] = &owned[i]
	}
	if set.Spec.Strategy.Type != v1alpha1.StrategyRollingUpdate {
		for _, t := range result.Targets {
			reason := wait(t.Cluster)
			cur := byName[t.Name]
			switch {
			case reason == "" || (cur != nil && at(cur, set, up.Tag)):
				revs[t.Name] = set.Spec.Package
			case cur != nil:
				keep(cur) // held where it is until its dependency is ready
				waiting[t.Name] = reason
			default:
				waiting[t.Name] = reason // no deployment until its dependency is ready
			}
		}
		return d
	}
	pinned := func(rev string) v1alpha1.PackageReference {
		ref := *set.Spec.Package.DeepCopy()
		ref.Revision = rev
		return ref
	}
	labels := map[string]map[string]string{}
	for _, c := range in.Clusters {
		labels[c.Name] = c.Labels
	}
	status := set.Status.Rollout
	if status != nil && status.Halted && set.Status.ObservedGeneration != set.Generation {
		status = nil // the spec changed: a halted rollout starts over
	}
	// Tags are <package path>/vN (OCI: PKG:vN); the path includes the repository directory.
	prefix, _ := fleet.SplitTag(up.Tag)
	targets := make([]rollout.Target, 0, len(result.Targets))
	for _, t := range result.Targets {
		rt := rollout.Target{Labels: labels[t.Cluster]}
		if pd := byName[t.Name]; pd != nil {
			rt = RolloutTarget(pd, variant, prefix, labels[t.Cluster])
			keep(pd)
		}
		rt.Name, rt.Blocked = t.Name, wait(t.Cluster)
		if rt.Blocked != "" && rt.Current != up.Tag {
			waiting[t.Name] = rt.Blocked
		}
		targets = append(targets, rt)
	}
	next := rollout.Next(rollout.Input{
		Strategy: set.Spec.Strategy,
		Desired:  up.Tag,
		Targets:  targets,
		Status:   status,
		Resume:   set.Annotations[v1alpha1.AnnotationResume],
		Undo:     set.Annotations[v1alpha1.AnnotationUndo],
		Now:      now,
		Set:      set.Name,
	})
	moved := map[string]bool{}
	for _, name := range next.Move {
		moved[name] = true
	}
	for _, rt := range targets {
		// Moved, or already there: a variant is rendered from the blueprint revision asked for
		// (its values and hand edits follow; a kept target's do not).
		if moved[rt.Name] || (variant && rt.Current == up.Tag && up.Tag != "") {
			revs[rt.Name] = pinned(fmt.Sprintf("v%d", up.Number))
			delete(d.Kept, rt.Name)
		}
	}
	for name, tag := range next.Back {
		pd := byName[name]
		if !variant {
			revs[name] = pinned(tag[len(prefix):])
			continue
		}
		// A variant returns to the variant revision that was healthy, as it was rendered then.
		ref := *pd.Spec.Package.DeepCopy()
		ref.Revision = lastHealthy(pd)
		revs[name], d.Kept[name] = ref, tag
	}
	d.Rollout, d.Recheck = next.Status, next.Recheck
	return d
}

// RolloutTarget is how a rollout sees the set's deployment pd on a cluster with labels: the
// blueprint revision it runs (tags start with prefix, e.g. "free5gc-upf/"), whether it is healthy
// there, since when, and where a rollback returns it. Decide and the dashboard both read targets
// through it.
func RolloutTarget(pd *v1alpha1.PackageDeployment, variant bool, prefix string, labels map[string]string) rollout.Target {
	rt := rollout.Target{Name: pd.Name, Labels: labels, Healthy: healthyPin(pd)}
	rt.Current, rt.LastHealthy = place(pd, variant, prefix)
	rt.Since, _ = time.Parse(time.RFC3339, pd.Annotations[AnnotationPinnedAt])
	return rt
}

// place is where a rollout counts pd: the blueprint revision (tag) it runs and the last one that
// was healthy on it ("" if none). A variant's deployment pins the variant: its blueprint revision
// is the one the variant was rendered from.
func place(pd *v1alpha1.PackageDeployment, variant bool, prefix string) (current, last string) {
	if variant {
		if pd.Annotations[AnnotationLastHealthy] != "" {
			last = pd.Annotations[AnnotationLastHealthyBlueprint]
		}
		return pd.Annotations[AnnotationBlueprint], last
	}
	current = prefix + pd.Spec.Package.Revision
	if pd.Spec.Package.Revision == "latest" && pd.Status.Resolved != nil {
		current = pd.Status.Resolved.Tag
	}
	if l := lastHealthy(pd); l != "" {
		last = prefix + l
	}
	return current, last
}

// at reports whether pd already deploys what set asks for (blueprint tag: the resolved revision
// of the set's blueprint).
func at(pd *v1alpha1.PackageDeployment, set *v1alpha1.PackageSet, tag string) bool {
	if set.Spec.Variant != nil {
		return tag != "" && pd.Annotations[AnnotationBlueprint] == tag
	}
	return pd.Spec.Package == set.Spec.Package
}

// lastHealthy is the last revision (vN) healthy on pd before the one it pins now: where a
// rollback returns it.
func lastHealthy(pd *v1alpha1.PackageDeployment) string {
	return pd.Annotations[AnnotationLastHealthy]
}

// leaving is what pd's last-healthy revision (and, for a variant, its blueprint revision) becomes
// when its pin moves to rev: the revision it leaves, when that one is healthy, else what it
// recorded before.
func leaving(pd *v1alpha1.PackageDeployment, rev string) (last, blueprint string) {
	recorded := func() (string, string) {
		return pd.Annotations[AnnotationLastHealthy], pd.Annotations[AnnotationLastHealthyBlueprint]
	}
	if pd.Spec.Package.Revision == rev {
		return recorded()
	}
	if healthyPin(pd) {
		return fmt.Sprintf("v%d", pd.Status.Resolved.Revision), pd.Annotations[AnnotationBlueprint]
	}
	return recorded()
}

// healthyPin reports whether pd is healthy at the revision it pins now.
func healthyPin(pd *v1alpha1.PackageDeployment) bool {
	r := pd.Status.Resolved
	if r == nil || (pd.Spec.Package.Revision != "latest" && pd.Spec.Package.Revision != fmt.Sprintf("v%d", r.Revision)) {
		return false
	}
	return healthy(pd, r.Tag)
}

// healthy reports whether a deployment has its revision applied: Synced when the cluster reports
// health, otherwise Ready (published).
func healthy(pd *v1alpha1.PackageDeployment, tag string) bool {
	if pd.Status.ObservedGeneration != pd.Generation || pd.Status.Resolved == nil || pd.Status.Resolved.Tag != tag {
		return false
	}
	if c := meta.FindStatusCondition(pd.Status.Conditions, v1alpha1.ConditionSynced); c != nil {
		return c.Status == "True" && c.ObservedGeneration == pd.Generation
	}
	return meta.IsStatusConditionTrue(pd.Status.Conditions, v1alpha1.ConditionReady)
}
