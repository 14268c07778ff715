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

// Revisions says, per target name, which package revision its deployment pins; a target missing
// from the map gets no deployment yet (a rollout has not reached it).
type Revisions map[string]v1alpha1.PackageReference

// Decide runs the rollout logic: AllAtOnce pins every target to the set's revision; RollingUpdate
// pins to the exact blueprint revision only the targets the rollout moved, and keeps the others
// where they are.
// The duration is when to look again without an event (0: not needed): a rollout waiting for
// targets to become healthy must halt when their health timeout runs out.
func Decide(in generate.Inputs, owned []v1alpha1.PackageDeployment, result generate.Result, now time.Time, wait gate, waiting map[string]string) (Revisions, *v1alpha1.RolloutStatus, time.Duration) {
	set, up := in.Set, in.Upstream
	revs := Revisions{}
	if wait == nil {
		wait = func(string) string { return "" }
	}
	if set.Spec.Strategy.Type != v1alpha1.StrategyRollingUpdate {
		current := map[string]v1alpha1.PackageReference{}
		for i := range owned {
			current[owned[i].Name] = owned[i].Spec.Package
		}
		for _, t := range result.Targets {
			reason := wait(t.Cluster)
			cur, exists := current[t.Name]
			switch {
			case reason == "" || (exists && cur == set.Spec.Package):
				revs[t.Name] = set.Spec.Package
			case exists:
				revs[t.Name] = cur // held where it is until its dependency is ready
				waiting[t.Name] = reason
			default:
				waiting[t.Name] = reason // no deployment until its dependency is ready
			}
		}
		return revs, nil, 0
	}
	pinned := func(rev string) v1alpha1.PackageReference {
		ref := *set.Spec.Package.DeepCopy()
		ref.Revision = rev
		return ref
	}
	byName := map[string]*v1alpha1.PackageDeployment{}
	for i := range owned {
		byName[owned[i].Name] = &owned[i]
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
		rt := rollout.Target{Name: t.Name, Labels: labels[t.Cluster], Blocked: wait(t.Cluster)}
		if pd := byName[t.Name]; pd != nil {
			rt.Current = prefix + pd.Spec.Package.Revision
			if pd.Spec.Package.Revision == "latest" && pd.Status.Resolved != nil {
				rt.Current = pd.Status.Resolved.Tag
			}
			rt.Healthy = healthy(pd, rt.Current)
			rt.Since, _ = time.Parse(time.RFC3339, pd.Annotations[AnnotationPinnedAt])
			if last := lastHealthy(pd); last != "" {
				rt.LastHealthy = prefix + last
			}
			revs[t.Name] = pinned(pd.Spec.Package.Revision)
		}
		if rt.Blocked != "" && rt.Current != up.Tag {
			waiting[t.Name] = rt.Blocked
		}
		targets = append(targets, rt)
	}
	d := rollout.Next(rollout.Input{
		Strategy: set.Spec.Strategy,
		Desired:  up.Tag,
		Targets:  targets,
		Status:   status,
		Resume:   set.Annotations[v1alpha1.AnnotationResume],
		Undo:     set.Annotations[v1alpha1.AnnotationUndo],
		Now:      now,
		Set:      set.Name,
	})
	for _, name := range d.Move {
		revs[name] = pinned(fmt.Sprintf("v%d", up.Number))
	}
	for name, tag := range d.Back {
		revs[name] = pinned(tag[len(prefix):])
	}
	return revs, d.Status, d.Recheck
}

// lastHealthy is the last revision (vN) healthy on pd before the one it pins now: where a
// rollback returns it.
func lastHealthy(pd *v1alpha1.PackageDeployment) string {
	return pd.Annotations[AnnotationLastHealthy]
}

// leaving is what pd's last-healthy revision becomes when its pin moves to rev: the revision it
// leaves, when that one is healthy, else what it recorded before.
func leaving(pd *v1alpha1.PackageDeployment, rev string) string {
	if pd.Spec.Package.Revision == rev {
		return pd.Annotations[AnnotationLastHealthy]
	}
	if r := pd.Status.Resolved; r != nil && healthy(pd, r.Tag) {
		return fmt.Sprintf("v%d", r.Revision)
	}
	return pd.Annotations[AnnotationLastHealthy]
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
