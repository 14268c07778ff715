package controller_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/gittest"
)

// Catalog tags are immutable to flotilla: a tag force-moved after it was pinned, or deleted, is
// reported with the old and new commits, the pin is kept, and nothing is published for it; with
// pinBy Commit the sync object keeps naming the commit that was pinned.
func TestTagMovedKeepsThePin(t *testing.T) {
	f := newFixture(t)
	f.repository("catalog")
	f.repository("edge01")
	f.cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.Sync.PinBy = v1alpha1.PinByCommit })
	pd := f.deployment("edge01-nginx", "nginx-hello", "v1")
	c := f.clusterWith(ConsistOf(v1alpha1.PublishedPin{Deployment: "edge01-nginx", Tag: "nginx-hello/v1"}))
	first := c.Status.DeployedPackages
	pinned := gittest.Tags(t, f.catalog)["nginx-hello/v1"]
	rootSync := f.syncObject(first.Tag, pd)
	f.g.Expect(revisionOf(rootSync)).To(Equal(pinned))
	f.g.Expect(rootSync.GetAnnotations()).To(HaveKeyWithValue("flotilla.dev/pinned-tag", "nginx-hello/v1"))

	// Someone rewrites nginx-hello/v1 to other content.
	moved := gittest.Commit(t, f.catalog, "nginx-hello", map[string]string{
		"nginx-hello/Kptfile":        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: nginx-hello\n",
		"nginx-hello/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nginx-hello\ndata:\n  revision: rewritten\n",
	})
	gittest.MoveTag(t, f.catalog, "nginx-hello/v1", moved)
	cond := f.condition(pd, func() []metav1.Condition { return pd.Status.Conditions }, v1alpha1.ConditionStalled, metav1.ConditionTrue, "TagMoved")
	f.g.Expect(cond.Message).To(And(ContainSubstring(pinned), ContainSubstring(moved), ContainSubstring("nginx-hello/v1")))
	f.g.Expect(pd.Status.Resolved.Commit).To(Equal(pinned))
	f.g.Expect(apimeta.FindStatusCondition(pd.Status.Conditions, v1alpha1.ConditionReady)).To(HaveField("Reason", "TagMoved"))

	// A change to the cluster re-renders its deployed-packages from the kept pin: the sync object
	// still names the pinned commit.
	f.update(c, func() {
		c.Spec.Sync.Git.Auth = "token"
		c.Spec.Sync.Git.SecretRef = &v1alpha1.LocalObjectReference{Name: "git-creds"}
	})
	c = f.clusterAt(first.Revision + 1)
	f.g.Expect(revisionOf(f.syncObject(c.Status.DeployedPackages.Tag, pd))).To(Equal(pinned))

	// The tag moved back: the deployment is Ready again with the same pin.
	gittest.MoveTag(t, f.catalog, "nginx-hello/v1", pinned)
	f.condition(pd, func() []metav1.Condition { return pd.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "Published")
	f.g.Expect(pd.Status.Resolved.Commit).To(Equal(pinned))

	// The tag deleted: RevisionNotFound, the pin is kept and named with its commit.
	gittest.DeleteTag(t, f.catalog, "nginx-hello/v1")
	cond = f.condition(pd, func() []metav1.Condition { return pd.Status.Conditions }, v1alpha1.ConditionStalled, metav1.ConditionTrue, "RevisionNotFound")
	f.g.Expect(cond.Message).To(ContainSubstring("keeping the current pin nginx-hello/v1 (commit " + pinned + ")"))
	f.g.Expect(pd.Status.Resolved.Commit).To(Equal(pinned))
	f.g.Consistently(func() int {
		f.g.Expect(env.Client.Get(f.ctx, f.key("edge01"), c)).To(Succeed())
		return c.Status.DeployedPackages.Revision
	}, 3*time.Second, 500*time.Millisecond).Should(Equal(first.Revision+1), "nothing is published for a moved or deleted tag")
}

// "latest" never moves backwards because the newest tag vanished.
func TestLatestNeverGoesBack(t *testing.T) {
	f := newFixture(t)
	f.repository("catalog")
	f.repository("edge01")
	f.cluster()
	pd := f.deployment("edge01-nginx", "nginx-hello", "latest")
	f.clusterWith(ConsistOf(v1alpha1.PublishedPin{Deployment: "edge01-nginx", Tag: "nginx-hello/v3"}))
	v3 := gittest.Tags(t, f.catalog)["nginx-hello/v3"]

	gittest.DeleteTag(t, f.catalog, "nginx-hello/v3")
	cond := f.condition(pd, func() []metav1.Condition { return pd.Status.Conditions }, v1alpha1.ConditionStalled, metav1.ConditionTrue, "RevisionNotFound")
	f.g.Expect(cond.Message).To(And(ContainSubstring("latest never goes back"), ContainSubstring("nginx-hello/v2"), ContainSubstring(v3)))
	f.g.Expect(pd.Status.Resolved.Tag).To(Equal("nginx-hello/v3"))
	f.clusterWith(ConsistOf(v1alpha1.PublishedPin{Deployment: "edge01-nginx", Tag: "nginx-hello/v3"}))

	// A person chooses v2: it is deployed.
	f.update(pd, func() { pd.Spec.Package.Revision = "v2" })
	f.clusterWith(ConsistOf(v1alpha1.PublishedPin{Deployment: "edge01-nginx", Tag: "nginx-hello/v2"}))
}

// revisionOf is the revision a RootSync or RepoSync syncs.
func revisionOf(u *unstructured.Unstructured) string {
	rev, _, _ := unstructured.NestedString(u.Object, "spec", "git", "revision")
	return rev
}

// A deployment that the published revision carries is not undeployed because it has no pin to
// keep. Here its status is lost (a restore from a backup writes none) after its tag was deleted:
// its reconciler reports RevisionNotFound with no pin, and the cluster publishes nothing without
// it, and says so, until a person decides (here: v2).
func TestNoPinIsNoUndeploy(t *testing.T) {
	f := newFixture(t)
	f.repository("catalog")
	f.repository("edge01")
	f.cluster()
	pd := f.deployment("edge01-nginx", "nginx-hello", "latest")
	carried := ConsistOf(v1alpha1.PublishedPin{Deployment: "edge01-nginx", Tag: "nginx-hello/v3"})
	first := f.clusterWith(carried).Status.DeployedPackages.Revision
	// Reported as published, the pin is the deployment's status alone (its reconciler keeps no
	// copy of a pin it reported): wiped, it is gone.
	f.condition(pd, func() []metav1.Condition { return pd.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "Published")
	gittest.DeleteTag(t, f.catalog, "nginx-hello/v3")
	f.condition(pd, func() []metav1.Condition { return pd.Status.Conditions }, v1alpha1.ConditionStalled, metav1.ConditionTrue, "RevisionNotFound")

	f.updateStatus(pd, func() {
		pd.Status = v1alpha1.PackageDeploymentStatus{}
	})
	f.g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(pd), pd)).To(Succeed())
		g.Expect(pd.Status.Resolved).To(BeNil())
		g.Expect(apimeta.FindStatusCondition(pd.Status.Conditions, v1alpha1.ConditionStalled)).To(HaveField("Reason", "RevisionNotFound"))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())

	c := &v1alpha1.WorkloadCluster{}
	f.g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, f.key("edge01"), c)).To(Succeed())
		ready := apimeta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal("PinUnknown"), "%v", ready)
		g.Expect(ready.Message).To(ContainSubstring("edge01-nginx"))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	f.g.Consistently(func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, f.key("edge01"), c)).To(Succeed())
		g.Expect(c.Status.DeployedPackages.Revision).To(Equal(first))
		g.Expect(c.Status.DeployedPackages.Packages).To(carried)
	}, 3*time.Second, 500*time.Millisecond).Should(Succeed(), "the deployment stays deployed")
	f.g.Expect(f.deployedTags()).To(And(ContainElement(fmt.Sprintf("deployed-packages/v%d", first)),
		Not(ContainElement(fmt.Sprintf("deployed-packages/v%d", first+1)))), "nothing was pushed")

	// A person chooses v2: it is deployed.
	f.update(pd, func() { pd.Spec.Package.Revision = "v2" })
	f.clusterWith(ConsistOf(v1alpha1.PublishedPin{Deployment: "edge01-nginx", Tag: "nginx-hello/v2"}))
	f.condition(c, func() []metav1.Condition { return c.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "Published")
}

// A suspended deployment keeps the revision published even with no pin of its own (its status
// lost): not undeployed, not moved to a newer revision.
func TestSuspendedKeepsThePublishedRevision(t *testing.T) {
	f := newFixture(t)
	f.repository("catalog")
	f.repository("edge01")
	f.cluster()
	pd := f.deployment("edge01-nginx", "nginx-hello", "latest")
	carried := ConsistOf(v1alpha1.PublishedPin{Deployment: "edge01-nginx", Tag: "nginx-hello/v3"})
	first := f.clusterWith(carried).Status.DeployedPackages.Revision
	f.update(pd, func() { pd.Spec.Suspend = true })
	f.publish("nginx-hello", 4)

	f.updateStatus(pd, func() {
		pd.Status = v1alpha1.PackageDeploymentStatus{}
	})
	c := &v1alpha1.WorkloadCluster{}
	f.g.Consistently(func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, f.key("edge01"), c)).To(Succeed())
		g.Expect(c.Status.DeployedPackages.Revision).To(Equal(first))
		g.Expect(c.Status.DeployedPackages.Packages).To(carried)
		g.Expect(apimeta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionReady)).To(HaveField("Reason", "Published"))
	}, 8*time.Second, 250*time.Millisecond).Should(Succeed(), "the suspended deployment stays at v3")
}

// A restore of the management cluster without status (Velero's default) loses the cluster's
// published revision as well as the deployment's pin: the branch still says what is deployed,
// and latest does not go back from it though its newest tag is gone.
func TestRestoreWithoutStatusKeepsWhatIsDeployed(t *testing.T) {
	f := newFixture(t)
	f.repository("catalog")
	f.repository("edge01")
	f.cluster()
	pd := f.deployment("edge01-nginx", "nginx-hello", "latest")
	carried := ConsistOf(v1alpha1.PublishedPin{Deployment: "edge01-nginx", Tag: "nginx-hello/v3"})
	published := *f.clusterWith(carried).Status.DeployedPackages
	f.condition(pd, func() []metav1.Condition { return pd.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "Published")
	gittest.DeleteTag(t, f.catalog, "nginx-hello/v3")
	f.condition(pd, func() []metav1.Condition { return pd.Status.Conditions }, v1alpha1.ConditionStalled, metav1.ConditionTrue, "RevisionNotFound")

	// The deployment's status goes first (the cluster holds, TestNoPinIsNoUndeploy), then the
	// cluster's: before, the cluster then took nothing as published and deployed v2.
	f.updateStatus(pd, func() {
		pd.Status = v1alpha1.PackageDeploymentStatus{}
	})
	c := &v1alpha1.WorkloadCluster{}
	f.g.Expect(env.Client.Get(f.ctx, f.key("edge01"), c)).To(Succeed())
	f.condition(c, func() []metav1.Condition { return c.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionFalse, "PinUnknown")
	f.updateStatus(c, func() {
		c.Status = v1alpha1.WorkloadClusterStatus{}
	})

	f.g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, f.key("edge01"), c)).To(Succeed())
		g.Expect(c.Status.DeployedPackages).NotTo(BeNil(), "the branch's revision is read back; conditions: %v", c.Status.Conditions)
		g.Expect(c.Status.DeployedPackages.Tag).To(Equal(published.Tag))
		g.Expect(c.Status.DeployedPackages.Commit).To(Equal(published.Commit))
		g.Expect(c.Status.DeployedPackages.Packages).To(carried)
		ready := apimeta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal("PinUnknown"), "%v", ready)
		g.Expect(ready.Message).To(ContainSubstring("edge01-nginx"))
	}, 60*time.Second, 100*time.Millisecond).Should(Succeed())
	f.condition(pd, func() []metav1.Condition { return pd.Status.Conditions }, v1alpha1.ConditionStalled, metav1.ConditionTrue, "RevisionNotFound")
	f.g.Consistently(func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, f.key("edge01"), c)).To(Succeed())
		g.Expect(c.Status.DeployedPackages.Tag).To(Equal(published.Tag))
		g.Expect(c.Status.DeployedPackages.Packages).To(carried)
	}, 3*time.Second, 500*time.Millisecond).Should(Succeed(), "the deployment stays deployed")
	f.g.Expect(f.deployedTags()).To(And(ContainElement(published.Tag),
		Not(ContainElement(fmt.Sprintf("deployed-packages/v%d", published.Revision+1)))), "nothing was pushed")

	// A person chooses v2: it is deployed.
	f.update(pd, func() { pd.Spec.Package.Revision = "v2" })
	f.clusterWith(ConsistOf(v1alpha1.PublishedPin{Deployment: "edge01-nginx", Tag: "nginx-hello/v2"}))
	f.condition(c, func() []metav1.Condition { return c.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "Published")
}

// A deployment's report that latest took back from the pin the cluster published (resolved
// before a newer publish, written after it) is not published: the cluster resolves it again
// against its published revision and keeps v3.
func TestReportedPinNeverGoesBackFromPublished(t *testing.T) {
	f := newFixture(t)
	f.repository("catalog")
	f.repository("edge01")
	f.cluster()
	pd := f.deployment("edge01-nginx", "nginx-hello", "latest")
	carried := ConsistOf(v1alpha1.PublishedPin{Deployment: "edge01-nginx", Tag: "nginx-hello/v3"})
	published := *f.clusterWith(carried).Status.DeployedPackages
	f.condition(pd, func() []metav1.Condition { return pd.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "Published")

	v2 := v1alpha1.ResolvedRevision{Repository: "catalog", Revision: 2, Tag: "nginx-hello/v2",
		Commit: gittest.Tags(t, f.catalog)["nginx-hello/v2"], Directory: "/nginx-hello"}
	f.updateStatus(pd, func() {
		pd.Status.Resolved = &v2
	})
	c := &v1alpha1.WorkloadCluster{}
	f.g.Consistently(func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, f.key("edge01"), c)).To(Succeed())
		g.Expect(c.Status.DeployedPackages.Tag).To(Equal(published.Tag))
		g.Expect(c.Status.DeployedPackages.Packages).To(carried)
		g.Expect(apimeta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionReady)).To(HaveField("Reason", "Published"))
	}, 5*time.Second, 250*time.Millisecond).Should(Succeed(), "v3 stays deployed")
	f.g.Expect(f.deployedTags()).NotTo(ContainElement(fmt.Sprintf("deployed-packages/v%d", published.Revision+1)), "nothing was pushed")
	// And the deployment reports the pin published again: the cluster brings its reconciler back
	// (nothing else changed that it watches).
	f.g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(pd), pd)).To(Succeed())
		g.Expect(pd.Status.Resolved).NotTo(BeNil())
		g.Expect(pd.Status.Resolved.Tag).To(Equal("nginx-hello/v3"))
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed(), "the deployment reports v3 again")

	// Suspended, it keeps the revision published: not the older report, not a newer latest.
	// (Its reconciler holds the report of the older pin for the publish it waits for: the
	// cluster reads the spec, and the pause gives its cache the suspend before v4 exists.)
	f.update(pd, func() { pd.Spec.Suspend = true })
	stays := func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, f.key("edge01"), c)).To(Succeed())
		g.Expect(c.Status.DeployedPackages.Tag).To(Equal(published.Tag))
		g.Expect(c.Status.DeployedPackages.Packages).To(carried)
	}
	f.g.Consistently(stays, 2*time.Second, 250*time.Millisecond).Should(Succeed())
	f.publish("nginx-hello", 4)
	f.updateStatus(pd, func() {
		pd.Status.Resolved = &v2
		pd.Status.Conditions = append(pd.Status.Conditions, metav1.Condition{Type: "Touched", Status: metav1.ConditionTrue, Reason: "Test", LastTransitionTime: metav1.Now()})
	})
	f.g.Consistently(stays, 5*time.Second, 250*time.Millisecond).Should(Succeed(), "the suspended deployment stays at v3")
}
