package controller_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/health"
)

// TestHealthFollowsTheWorkloadCluster: a deployment's health follows its sync object in the
// workload cluster with nothing changing on the management side (the poller lists the cluster and
// brings back only the deployment whose object changed): a sync error shows on that deployment,
// its neighbour on the same cluster keeps its status untouched, and the fix shows as Synced.
func TestHealthFollowsTheWorkloadCluster(t *testing.T) {
	f := newFixture(t)
	f.repository("catalog")
	f.repository("edge01")
	workloadCluster(f)
	app := f.deployment("app", "nginx-hello", "v2")
	crds := f.deployment("crds", "crds", "v1")
	c := f.clusterWith(ConsistOf(HaveField("Deployment", "app"), HaveField("Deployment", "crds")))
	synced := func(pd *v1alpha1.PackageDeployment, status metav1.ConditionStatus, reason string) metav1.Condition {
		t.Helper()
		return f.condition(pd, func() []metav1.Condition { return pd.Status.Conditions }, v1alpha1.ConditionSynced, status, reason)
	}
	for _, pd := range []*v1alpha1.PackageDeployment{app, crds} {
		f.condition(pd, func() []metav1.Condition { return pd.Status.Conditions }, v1alpha1.ConditionPublished, metav1.ConditionTrue, "Published")
		configSyncAgent{f: f, pd: pd}.sync(c.Status.DeployedPackages.Tag, pd.Status.Resolved.Commit)
		synced(pd, metav1.ConditionTrue, health.ReasonSynced)
	}
	f.g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(crds), crds)).To(Succeed())
	neighbour := crds.ResourceVersion

	// Config Sync reports an apply error for app: only the workload cluster changes.
	live := f.syncObject(c.Status.DeployedPackages.Tag, app)
	f.g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(live), live)).To(Succeed())
	f.g.Expect(unstructured.SetNestedSlice(live.Object, []any{map[string]any{"code": "2009", "errorMessage": "KNV2009: failed to apply Deployment.apps, default/nginx: admission webhook denied the request"}},
		"status", "sync", "errors")).To(Succeed())
	f.g.Expect(env.Client.Status().Update(f.ctx, live)).To(Succeed())
	failed := synced(app, metav1.ConditionFalse, health.ReasonSyncError)
	f.g.Expect(failed.Message).To(ContainSubstring("admission webhook denied the request"))
	f.g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(crds), crds)).To(Succeed())
	f.g.Expect(crds.ResourceVersion).To(Equal(neighbour), "the neighbour's status was written")

	// Fixed in the cluster: app is Synced again.
	f.g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(live), live)).To(Succeed())
	unstructured.RemoveNestedField(live.Object, "status", "sync", "errors")
	f.g.Expect(env.Client.Status().Update(f.ctx, live)).To(Succeed())
	synced(app, metav1.ConditionTrue, health.ReasonSynced)
	f.g.Consistently(func() string {
		_ = env.Client.Get(f.ctx, client.ObjectKeyFromObject(crds), crds)
		return crds.ResourceVersion
	}, 3*time.Second, 500*time.Millisecond).Should(Equal(neighbour))
}
