package controller_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/internal/health"
)

// configSyncAgent plays Config Sync in the workload cluster (the test API server, reached through
// kubeConfigSecretRef) for one deployment: it applies the RootSync that a deployed-packages
// revision declares, and writes the status and ResourceGroup Config Sync would write once it has
// synced commit with inventory listing what it applied.
type configSyncAgent struct {
	f  *fixture
	pd *v1alpha1.PackageDeployment
}

func (a configSyncAgent) sync(rev, commit string, inventory ...string) {
	f := a.f
	f.t.Helper()
	want := f.syncObject(rev, a.pd)
	live := want.DeepCopy()
	err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(want), live)
	switch {
	case apierrors.IsNotFound(err):
		live = want
		f.g.Expect(env.Client.Create(f.ctx, live)).To(Succeed())
	case err == nil:
		live.Object["spec"] = want.Object["spec"]
		live.SetAnnotations(want.GetAnnotations())
		f.g.Expect(env.Client.Update(f.ctx, live)).To(Succeed())
	default:
		f.t.Fatal(err)
	}
	live.Object["status"] = map[string]any{
		"observedGeneration": live.GetGeneration(),
		"source":             map[string]any{"commit": commit},
		"sync":               map[string]any{"commit": commit},
		"conditions":         []any{map[string]any{"type": "Syncing", "status": "False", "lastUpdateTime": time.Now().UTC().Format(time.RFC3339)}},
	}
	f.g.Expect(env.Client.Status().Update(f.ctx, live)).To(Succeed())

	rg := &unstructured.Unstructured{}
	rg.SetGroupVersionKind(health.ResourceGroupGVK)
	rg.SetNamespace(live.GetNamespace())
	rg.SetName(live.GetName())
	var resources []any
	for _, name := range inventory {
		resources = append(resources, map[string]any{"group": "", "kind": "ConfigMap", "namespace": "default", "name": name})
	}
	err = env.Client.Get(f.ctx, client.ObjectKeyFromObject(rg), rg)
	if apierrors.IsNotFound(err) {
		f.g.Expect(unstructured.SetNestedSlice(rg.Object, resources, "spec", "resources")).To(Succeed())
		f.g.Expect(env.Client.Create(f.ctx, rg)).To(Succeed())
		return
	}
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(unstructured.SetNestedSlice(rg.Object, resources, "spec", "resources")).To(Succeed())
	f.g.Expect(env.Client.Update(f.ctx, rg)).To(Succeed())
}

// drainingCluster creates edge01 with spec.sync.deletion EmptyFirst, reaching the test API server
// as its workload cluster.
func drainingCluster(f *fixture, timeout time.Duration) {
	workloadCluster(f, func(c *v1alpha1.WorkloadCluster) {
		c.Spec.Sync.Deletion = v1alpha1.DeletionEmptyFirst
		c.Spec.Sync.DrainTimeout = &metav1.Duration{Duration: timeout}
	})
}

// workloadCluster creates edge01 (mutated by mutate) reaching the test API server as its
// workload cluster through a kubeconfig Secret.
func workloadCluster(f *fixture, mutate ...func(*v1alpha1.WorkloadCluster)) {
	kc, err := env.AdminKubeconfig("workload-" + f.ns)
	f.g.Expect(err).NotTo(HaveOccurred())
	f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kubeconfig", Namespace: f.ns}, Data: map[string][]byte{"value": kc}})
	f.cluster(append([]func(*v1alpha1.WorkloadCluster){func(c *v1alpha1.WorkloadCluster) {
		c.Spec.KubeConfigSecretRef = &v1alpha1.SecretKeyReference{Name: "kubeconfig", Key: "value"}
	}}, mutate...)...)
}

// TestEmptyFirstDrainsBeforeRemoving undeploys a package from a cluster whose agent does not
// propagate deletion: the sync object is first pointed at the empty package, stays while the
// agent still lists objects (past the drain timeout too, reported as DrainTimedOut), and is
// removed, and the deployment released, only once the agent reports its inventory empty.
func TestEmptyFirstDrainsBeforeRemoving(t *testing.T) {
	f := newFixture(t)
	f.repository("catalog")
	f.repository("edge01")
	drainingCluster(f, 4*time.Second)
	pd := f.deployment("app", "nginx-hello", "v2")
	agent := configSyncAgent{f: f, pd: pd}

	c := f.clusterWith(ConsistOf(v1alpha1.PublishedPin{Deployment: "app", Tag: "nginx-hello/v2"}))
	f.condition(pd, func() []metav1.Condition { return pd.Status.Conditions }, v1alpha1.ConditionPublished, metav1.ConditionTrue, "Published")
	agent.sync(c.Status.DeployedPackages.Tag, pd.Status.Resolved.Commit, "nginx-hello")
	f.condition(pd, func() []metav1.Condition { return pd.Status.Conditions }, v1alpha1.ConditionSynced, metav1.ConditionTrue, health.ReasonSynced)

	f.g.Expect(env.Client.Delete(f.ctx, pd)).To(Succeed())
	// The next revision points the RootSync at the empty package of the cluster repository.
	live := c.Status.DeployedPackages.Revision
	c = f.clusterWith(ConsistOf(v1alpha1.PublishedPin{Deployment: "app", Tag: "flotilla-empty/v1"}))
	f.g.Expect(c.Status.DeployedPackages.Revision).To(Equal(live + 1))
	rs := f.syncObject(c.Status.DeployedPackages.Tag, pd)
	dir, _, _ := unstructured.NestedString(rs.Object, "spec", "git", "dir")
	repo, _, _ := unstructured.NestedString(rs.Object, "spec", "git", "repo")
	revision, _, _ := unstructured.NestedString(rs.Object, "spec", "git", "revision")
	f.g.Expect([]string{dir, repo, revision}).To(Equal([]string{"/flotilla-empty", f.git.URL + "/edge01.git", "flotilla-empty/v1"}))
	empty := gittest.Tags(t, f.edge)["flotilla-empty/v1"]
	f.g.Expect(gittest.ReadFile(t, f.edge, "flotilla-empty/v1", "flotilla-empty/Kptfile")).To(ContainSubstring("config.kubernetes.io/local-config"))

	ready := f.condition(pd, func() []metav1.Condition { return pd.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionFalse, "Draining")
	f.g.Expect(ready.Message).To(ContainSubstring("empty package"))
	f.g.Expect(pd.Status.Drain).NotTo(BeNil())
	f.g.Expect(pd.Finalizers).To(ContainElement(v1alpha1.FinalizerPackageDeployment))

	// The agent synced the empty commit but has not pruned yet: the drain waits, says what is
	// left, and once past the timeout reports it, without removing anything.
	agent.sync(c.Status.DeployedPackages.Tag, empty, "nginx-hello", "extra")
	stalled := f.condition(pd, func() []metav1.Condition { return pd.Status.Conditions }, v1alpha1.ConditionStalled, metav1.ConditionTrue, "DrainTimedOut")
	f.g.Expect(stalled.Message).To(SatisfyAll(ContainSubstring("2 objects still in its inventory"), ContainSubstring("ConfigMap default/nginx-hello"),
		ContainSubstring("spec.deletionPolicy Orphan")))
	f.g.Expect(pd.Status.Drain.Commit).To(Equal(empty))
	f.g.Expect(pd.Status.Drain.Drained).To(BeFalse())
	f.g.Consistently(func(g Gomega) {
		got := &v1alpha1.WorkloadCluster{}
		g.Expect(env.Client.Get(f.ctx, f.key("edge01"), got)).To(Succeed())
		g.Expect(got.Status.DeployedPackages.Revision).To(Equal(live + 1))
		g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(pd), &v1alpha1.PackageDeployment{})).To(Succeed())
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())

	// Pruned: the RootSync leaves deployed-packages, then the deployment is released.
	agent.sync(c.Status.DeployedPackages.Tag, empty)
	c = f.clusterAt(live + 2)
	f.g.Expect(c.Status.DeployedPackages.Packages).To(BeEmpty())
	f.g.Expect(f.files(c.Status.DeployedPackages.Tag)).To(Equal([]string{"Kptfile"}))
	f.g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(f.ctx, client.ObjectKeyFromObject(pd), &v1alpha1.PackageDeployment{}))
	}, 30*time.Second, 100*time.Millisecond).Should(BeTrue())
	// The empty package's revision is never moved.
	f.g.Expect(gittest.Tags(t, f.edge)["flotilla-empty/v1"]).To(Equal(empty))
}

// TestEmptyFirstOrphanRemovesAtOnce: with deletionPolicy Orphan nothing drains, the sync object
// goes in the next revision (and with it, on such agents, nothing is deleted, as asked).
func TestEmptyFirstOrphanRemovesAtOnce(t *testing.T) {
	f := newFixture(t)
	f.repository("catalog")
	f.repository("edge01")
	drainingCluster(f, time.Minute)
	pd := f.deployment("app", "nginx-hello", "v2", func(pd *v1alpha1.PackageDeployment) { pd.Spec.DeletionPolicy = v1alpha1.DeletionPolicyOrphan })
	f.clusterWith(ConsistOf(v1alpha1.PublishedPin{Deployment: "app", Tag: "nginx-hello/v2"}))
	f.condition(pd, func() []metav1.Condition { return pd.Status.Conditions }, v1alpha1.ConditionPublished, metav1.ConditionTrue, "Published")
	f.g.Expect(env.Client.Delete(f.ctx, pd)).To(Succeed())
	f.clusterWith(BeEmpty())
	f.g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(f.ctx, client.ObjectKeyFromObject(pd), &v1alpha1.PackageDeployment{}))
	}, 30*time.Second, 100*time.Millisecond).Should(BeTrue())
	f.g.Expect(gittest.Tags(t, f.edge)).NotTo(HaveKey("flotilla-empty/v1"), "nothing drained, so no empty package is published")
}

// TestEmptyFirstNeedsKubeconfig: the schema refuses EmptyFirst on a cluster flotilla cannot read
// back from, saying why.
func TestEmptyFirstNeedsKubeconfig(t *testing.T) {
	f := newFixture(t)
	err := env.Client.Create(f.ctx, &v1alpha1.WorkloadCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "edge01", Namespace: f.ns},
		Spec: v1alpha1.WorkloadClusterSpec{Repository: v1alpha1.LocalObjectReference{Name: "edge01"},
			Sync: v1alpha1.ClusterSync{Deletion: v1alpha1.DeletionEmptyFirst}},
	})
	f.g.Expect(err).To(MatchError(ContainSubstring("spec.sync.deletion EmptyFirst needs spec.kubeConfigSecretRef")))
	err = env.Client.Create(f.ctx, &v1alpha1.WorkloadCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "edge02", Namespace: f.ns},
		Spec: v1alpha1.WorkloadClusterSpec{Repository: v1alpha1.LocalObjectReference{Name: "edge01"},
			Sync: v1alpha1.ClusterSync{DrainTimeout: &metav1.Duration{Duration: -time.Second}}},
	})
	f.g.Expect(err).To(MatchError(ContainSubstring("spec.sync.drainTimeout must be a positive duration")))
}
