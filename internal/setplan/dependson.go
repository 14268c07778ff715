package setplan

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/conditions"
	"github.com/flotilla-dev/flotilla/internal/generate"
	"github.com/flotilla-dev/flotilla/internal/rollout"
)

// SetReader is what set dependencies (spec.dependsOn) read: the sets named, and the deployments
// they own.
type SetReader interface {
	// PackageSet reads a set of the namespace (nil when it does not exist).
	PackageSet(ctx context.Context, namespace, name string) (*v1alpha1.PackageSet, error)
	// SetDeployments lists the deployments a set of the namespace owns.
	SetDeployments(ctx context.Context, namespace, set string) ([]v1alpha1.PackageDeployment, error)
}

// Errors of set dependencies: only a person can fix them.
var (
	ErrSetDependencyNotFound = errors.New("set dependency not found")
	ErrSetDependencyCycle    = errors.New("set dependency cycle")
)

// gate says, for a target cluster, what it waits for before it may move to a new revision ("":
// nothing).
type gate func(cluster string) string

// gates evaluates set's dependsOn: a Fleet dependency holds every target until the named set is
// Ready for its current generation; a Cluster dependency holds a target until each deployment the
// named set owns on that cluster is healthy at the revision the set asks for. A set that has no
// deployment on a cluster holds nothing there once it has reached all its targets; until then
// (a rollout in progress, paused or halted, or a spec not reconciled yet) it holds every cluster
// it may target: its rollout may not have reached that cluster yet.
func (p Planner) gates(ctx context.Context, r Reader, set *v1alpha1.PackageSet) (gate, error) {
	if len(set.Spec.DependsOn) == 0 {
		return func(string) string { return "" }, nil
	}
	sr, ok := r.(SetReader)
	if !ok {
		return nil, fmt.Errorf("spec.dependsOn is not supported here")
	}
	if err := checkCycle(ctx, sr, set); err != nil {
		return nil, err
	}
	fleetWide := ""
	perCluster := map[string][]string{}
	var unreached []reach // Cluster dependencies that may not have reached every target yet
	for _, d := range set.Spec.DependsOn {
		other, err := sr.PackageSet(ctx, set.Namespace, d.Name)
		if err != nil {
			return nil, err
		}
		if other == nil {
			return nil, fmt.Errorf("%w: spec.dependsOn names PackageSet %s, which does not exist in namespace %s: create it or fix spec.dependsOn",
				ErrSetDependencyNotFound, d.Name, set.Namespace)
		}
		if d.Scope == v1alpha1.DependencyFleet {
			if !conditions.Observed(other.Status.Conditions, other.Generation) || !meta.IsStatusConditionTrue(other.Status.Conditions, v1alpha1.ConditionReady) {
				fleetWide = fmt.Sprintf("PackageSet %s to be Ready fleet-wide (dependsOn, scope Fleet)", other.Name)
			}
			continue
		}
		owned, err := sr.SetDeployments(ctx, set.Namespace, other.Name)
		if err != nil {
			return nil, err
		}
		deployed := map[string]bool{}
		for i := range owned {
			pd := &owned[i]
			deployed[pd.Spec.Cluster.Name] = true
			if !readyAt(pd, other) {
				perCluster[pd.Spec.Cluster.Name] = append(perCluster[pd.Spec.Cluster.Name], pd.Name)
			}
		}
		if !reachedAll(other) {
			unreached = append(unreached, reach{set: other, deployed: deployed})
		}
	}
	labels := map[string]map[string]string{}
	if len(unreached) > 0 {
		clusters, err := r.Clusters(ctx, set.Namespace)
		if err != nil {
			return nil, fmt.Errorf("list clusters: %w", err)
		}
		for _, c := range clusters {
			labels[c.Name] = c.Labels
		}
	}
	return func(cluster string) string {
		if fleetWide != "" {
			return fleetWide
		}
		if waiting := perCluster[cluster]; len(waiting) > 0 {
			slices.Sort(waiting)
			return fmt.Sprintf("%s to be healthy on cluster %s (dependsOn, scope Cluster)", strings.Join(waiting, ", "), cluster)
		}
		for _, u := range unreached {
			if !u.deployed[cluster] && generate.MayTarget(u.set, cluster, labels[cluster]) {
				return fmt.Sprintf("PackageSet %s to reach cluster %s (dependsOn, scope Cluster)", u.set.Name, cluster)
			}
		}
		return ""
	}, nil
}

// reach is a set depended on, and the clusters it has deployments on.
type reach struct {
	set      *v1alpha1.PackageSet
	deployed map[string]bool
}

// reachedAll reports whether set has a deployment for every target it has: its status describes
// its current spec, and a RollingUpdate has completed (before that, targets it has not reached
// have no deployment yet).
func reachedAll(set *v1alpha1.PackageSet) bool {
	if !conditions.Observed(set.Status.Conditions, set.Generation) {
		return false
	}
	return set.Spec.Strategy.Type != v1alpha1.StrategyRollingUpdate || rollout.Done(set.Status.Rollout)
}

// readyAt reports whether pd, a deployment of set other, is healthy at the revision other asks
// for (a rollout still moving it waits).
func readyAt(pd *v1alpha1.PackageDeployment, other *v1alpha1.PackageSet) bool {
	r := pd.Status.Resolved
	if r == nil || !healthy(pd, r.Tag) {
		return false
	}
	// The revision the set deploys now (promoted, latest, or a rollout's): its deployments
	// count once they are healthy at it. A variant's deployments pin the variant: they count
	// by the blueprint revision it was rendered from.
	want := other.Status.Revision
	if other.Spec.Variant != nil {
		return want == "" || pd.Annotations[AnnotationBlueprint] == want
	}
	return want == "" || r.Tag == want
}

// checkCycle refuses a chain of dependsOn that comes back to set.
func checkCycle(ctx context.Context, r SetReader, set *v1alpha1.PackageSet) error {
	// Each set is walked once: a graph of many paths costs its size, not its number of paths.
	visited := map[string]bool{}
	var walk func(s *v1alpha1.PackageSet, path []string) error
	walk = func(s *v1alpha1.PackageSet, path []string) error {
		for _, d := range s.Spec.DependsOn {
			if d.Name == set.Name {
				return fmt.Errorf("%w: spec.dependsOn follows %s → %s: remove one of the dependencies", ErrSetDependencyCycle, strings.Join(path, " → "), set.Name)
			}
			if visited[d.Name] || slices.Contains(path, d.Name) || len(path) > maxChain {
				continue // walked already, or a cycle elsewhere: that set reports it
			}
			visited[d.Name] = true
			next, err := r.PackageSet(ctx, set.Namespace, d.Name)
			if err != nil {
				return err
			}
			if next != nil {
				if err := walk(next, append(slices.Clone(path), d.Name)); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(set, []string{set.Name})
}
