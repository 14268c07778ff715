package generate

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
			sel, err := metav1.LabelSelectorAsSelector(&leaf.Clusters.Selector)
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
