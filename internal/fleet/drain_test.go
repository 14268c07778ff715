package fleet

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

func TestMustDrain(t *testing.T) {
	now := metav1.Now()
	published := &v1alpha1.DeployedPackagesStatus{Packages: []v1alpha1.PublishedPin{{Deployment: "upf", Tag: "free5gc-upf/v7"}}}
	drainingPublished := &v1alpha1.DeployedPackagesStatus{Packages: []v1alpha1.PublishedPin{{Deployment: "upf", Tag: "flotilla-empty/v1"}}}
	cluster := func(mode v1alpha1.DeletionMode) *v1alpha1.WorkloadCluster {
		return &v1alpha1.WorkloadCluster{Spec: v1alpha1.WorkloadClusterSpec{Sync: v1alpha1.ClusterSync{Deletion: mode}}}
	}
	pd := func(deleted bool, policy v1alpha1.DeletionPolicy, drain *v1alpha1.DrainStatus) *v1alpha1.PackageDeployment {
		p := &v1alpha1.PackageDeployment{ObjectMeta: metav1.ObjectMeta{Name: "upf"}, Spec: v1alpha1.PackageDeploymentSpec{DeletionPolicy: policy}}
		p.Status.Drain = drain
		if deleted {
			p.DeletionTimestamp = &now
		}
		return p
	}
	for name, tc := range map[string]struct {
		cluster   *v1alpha1.WorkloadCluster
		pd        *v1alpha1.PackageDeployment
		published *v1alpha1.DeployedPackagesStatus
		want      bool
	}{
		"deleted, EmptyFirst":          {cluster(v1alpha1.DeletionEmptyFirst), pd(true, "", nil), published, true},
		"deleted, Propagation":         {cluster(v1alpha1.DeletionPropagation), pd(true, "", nil), published, false},
		"deleted, default mode":        {cluster(""), pd(true, "", nil), published, false},
		"not deleted":                  {cluster(v1alpha1.DeletionEmptyFirst), pd(false, "", nil), published, false},
		"Orphan":                       {cluster(v1alpha1.DeletionEmptyFirst), pd(true, v1alpha1.DeletionPolicyOrphan, nil), published, false},
		"never published":              {cluster(v1alpha1.DeletionEmptyFirst), pd(true, "", nil), nil, false},
		"draining":                     {cluster(v1alpha1.DeletionEmptyFirst), pd(true, "", &v1alpha1.DrainStatus{Tag: "flotilla-empty/v1"}), drainingPublished, true},
		"drained":                      {cluster(v1alpha1.DeletionEmptyFirst), pd(true, "", &v1alpha1.DrainStatus{Tag: "flotilla-empty/v1", Drained: true}), drainingPublished, false},
		"drained, read on another pin": {cluster(v1alpha1.DeletionEmptyFirst), pd(true, "", &v1alpha1.DrainStatus{Tag: "flotilla-empty/v1", Drained: true}), published, true},
	} {
		t.Run(name, func(t *testing.T) {
			if got := MustDrain(tc.cluster, tc.pd, tc.published); got != tc.want {
				t.Errorf("MustDrain = %v, want %v", got, tc.want)
			}
		})
	}
}
