package setplan

import (
	"maps"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/generate"
)

// AnnotationTarget records, on a generated deployment, the generator element it comes from, so a
// target whose template fails keeps its deployment.
const AnnotationTarget = "flotilla.dev/target"

// Changes is what the set must write to match the generator.
type Changes struct {
	Create, Update, Delete []*v1alpha1.PackageDeployment
	// Unchanged counts deployments that already match.
	Unchanged int
}

// Empty reports whether there is nothing to write.
func (c Changes) Empty() bool { return len(c.Create)+len(c.Update)+len(c.Delete) == 0 }

// Diff compares the generated targets with the deployments the set owns. A deployment is deleted
// only when its target left the generator and no target has a problem: a problem (an expression
// failing for one object, say) may hide which deployment it is about, so nothing is deleted until
// it is fixed.
func Diff(set *v1alpha1.PackageSet, owned []v1alpha1.PackageDeployment, result generate.Result, revs Revisions, now time.Time) Changes {
	var c Changes
	byName := map[string]*v1alpha1.PackageDeployment{}
	for i := range owned {
		byName[owned[i].Name] = &owned[i]
	}
	wanted := map[string]bool{}
	for _, t := range result.Targets {
		wanted[t.Name] = true
		rev, pinned := revs[t.Name]
		if !pinned {
			continue // a rollout has not reached the target yet
		}
		cur, ok := byName[t.Name]
		desired := deployment(set, t, rev, pinnedAt(cur, rev, now))
		if ok && set.Spec.Strategy.Type == v1alpha1.StrategyRollingUpdate {
			last, blueprint := leaving(cur, rev.Revision)
			if last != "" {
				desired.Annotations[AnnotationLastHealthy] = last
			}
			if last != "" && blueprint != "" {
				desired.Annotations[AnnotationLastHealthyBlueprint] = blueprint
			}
		}
		switch {
		case !ok:
			c.Create = append(c.Create, desired)
		case cur.Spec.Cluster != desired.Spec.Cluster:
			// The cluster of a deployment is immutable: replace it.
			c.Delete = append(c.Delete, cur)
		case matches(cur, desired):
			c.Unchanged++
		default:
			upd := cur.DeepCopy()
			upd.Spec = desired.Spec
			upd.Labels, upd.Annotations = desired.Labels, desired.Annotations
			c.Update = append(c.Update, upd)
		}
	}
	for i := range owned {
		pd := &owned[i]
		if len(result.Problems) == 0 && !wanted[pd.Name] && pd.DeletionTimestamp.IsZero() {
			c.Delete = append(c.Delete, pd)
		}
	}
	return c
}

// pinnedAt keeps the time a deployment's revision last changed, or now when it changes.
func pinnedAt(cur *v1alpha1.PackageDeployment, rev v1alpha1.PackageReference, now time.Time) string {
	if cur != nil && cur.Spec.Package.Revision == rev.Revision && cur.Spec.Package.Name == rev.Name && cur.Annotations[AnnotationPinnedAt] != "" {
		return cur.Annotations[AnnotationPinnedAt]
	}
	return now.UTC().Format(time.RFC3339)
}

// deployment is the PackageDeployment a target asks for, pinned to rev, owned by the set.
func deployment(set *v1alpha1.PackageSet, t generate.Target, pkg v1alpha1.PackageReference, pinnedAt string) *v1alpha1.PackageDeployment {
	labels := maps.Clone(t.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[v1alpha1.LabelPackageSet] = set.Name
	annotations := maps.Clone(t.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[AnnotationTarget] = t.Key
	annotations[AnnotationPinnedAt] = pinnedAt
	var dependsOn []v1alpha1.LocalObjectReference
	for _, name := range t.DependsOn {
		dependsOn = append(dependsOn, v1alpha1.LocalObjectReference{Name: name})
	}
	return &v1alpha1.PackageDeployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:            t.Name,
			Namespace:       set.Namespace,
			Labels:          labels,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{ownerRef(set)},
			// Created with the finalizer the PackageDeployment reconciler would add: one write less.
			Finalizers: []string{v1alpha1.FinalizerPackageDeployment},
		},
		Spec: v1alpha1.PackageDeploymentSpec{
			Cluster:        v1alpha1.LocalObjectReference{Name: t.Cluster},
			Package:        *pkg.DeepCopy(),
			Namespace:      t.Namespace,
			DeletionPolicy: t.DeletionPolicy,
			DependsOn:      dependsOn,
		},
	}
}

func ownerRef(set *v1alpha1.PackageSet) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{
		APIVersion:         v1alpha1.GroupVersion.String(),
		Kind:               "PackageSet",
		Name:               set.Name,
		UID:                set.UID,
		Controller:         &yes,
		BlockOwnerDeletion: &yes,
	}
}

// matches reports whether cur already is what desired asks for (fields the set owns only).
func matches(cur, desired *v1alpha1.PackageDeployment) bool {
	return equalSpec(cur.Spec, desired.Spec) &&
		maps.Equal(cur.Labels, desired.Labels) &&
		maps.Equal(cur.Annotations, desired.Annotations)
}

func equalSpec(a, b v1alpha1.PackageDeploymentSpec) bool {
	if a.DeletionPolicy == "" {
		a.DeletionPolicy = v1alpha1.DeletionPolicyDelete
	}
	if b.DeletionPolicy == "" {
		b.DeletionPolicy = v1alpha1.DeletionPolicyDelete
	}
	return a.Cluster == b.Cluster && a.Namespace == b.Namespace && a.DeletionPolicy == b.DeletionPolicy &&
		a.Package.Name == b.Package.Name && a.Package.Revision == b.Package.Revision &&
		equalRef(a.Package.Repository, b.Package.Repository) && slices.Equal(a.DependsOn, b.DependsOn) && !a.Suspend
}

func equalRef(a, b *v1alpha1.LocalObjectReference) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
