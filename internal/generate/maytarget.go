package generate

import (
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// MayTarget reports whether the set's generator could yield a deployment to the cluster with this
// name and these labels, without evaluating it: a clusters selector that matches (or does not
// parse), a list element that names it, or any objects generator (an object may name it).
func MayTarget(set *v1alpha1.PackageSet, cluster string, clusterLabels map[string]string) bool {
	for _, leaf := range append([]v1alpha1.LeafGenerator{set.Spec.Targets.LeafGenerator}, set.Spec.Targets.Matrix...) {
		switch {
		case leaf.Clusters != nil:
			sel, err := leaf.Clusters.Selector.Selector()
			if err != nil || sel.Matches(labels.Set(clusterLabels)) {
				return true
			}
		case leaf.Objects != nil:
			return true
		default:
			for _, e := range leaf.List {
				if e.Cluster == cluster {
					return true
				}
			}
		}
	}
	return false
}

// UsesFacts reports whether the set reads the clusters' facts: a facts values layer, or an
// expression that names target.facts (a conservative, textual check: a set that might use them is
// re-rendered when they change; one that cannot is not).
func UsesFacts(set *v1alpha1.PackageSet) bool {
	t := set.Spec.Template
	exprs := []string{t.NameExpr, t.NamespaceExpr}
	for _, d := range t.DependsOn {
		exprs = append(exprs, d.NameExpr)
	}
	for _, m := range []map[string]string{t.Labels, t.Annotations} {
		for _, e := range m {
			exprs = append(exprs, e)
		}
	}
	if v := set.Spec.Variant; v != nil {
		for _, l := range v.Values.Hierarchy {
			if l.Facts {
				return true
			}
			exprs = append(exprs, l.ConfigMapExpr)
		}
		for _, in := range v.Injectors {
			exprs = append(exprs, in.NameExpr)
		}
	}
	for _, e := range exprs {
		if strings.Contains(e, "facts") {
			return true
		}
	}
	return false
}
