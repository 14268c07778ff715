package controller_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/gittest"
)

// secondCluster creates the WorkloadCluster name in namespace ns on the Repository repo, with one
// deployment of nginx-hello v1 (from a catalog Repository it creates in ns when ns is not the
// fixture's).
func (f *fixture) secondCluster(ns, name, repo string, mutate ...func(*v1alpha1.WorkloadCluster)) *v1alpha1.WorkloadCluster {
	f.t.Helper()
	c := &v1alpha1.WorkloadCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       v1alpha1.WorkloadClusterSpec{Repository: v1alpha1.LocalObjectReference{Name: repo}},
	}
	for _, m := range mutate {
		m(c)
	}
	f.create(c)
	f.create(&v1alpha1.PackageDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-nginx", Namespace: ns},
		Spec: v1alpha1.PackageDeploymentSpec{
			Cluster: v1alpha1.LocalObjectReference{Name: name},
			Package: v1alpha1.PackageReference{Repository: &v1alpha1.LocalObjectReference{Name: "catalog"}, Name: "nginx-hello", Revision: "v1"},
		},
	})
	return c
}

// inUse waits until c is not Ready because other writes its deployed-packages, and returns the
// message.
func (f *fixture) inUse(c *v1alpha1.WorkloadCluster, other string) string {
	f.t.Helper()
	cond := f.condition(c, func() []metav1.Condition { return c.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionFalse, "RepositoryInUse")
	f.g.Expect(cond.Message).To(ContainSubstring("WorkloadCluster " + other + " writes deployed-packages"))
	f.g.Expect(cond.Message).To(ContainSubstring("spec.sync.package"))
	f.condition(c, func() []metav1.Condition { return c.Status.Conditions }, v1alpha1.ConditionStalled, metav1.ConditionTrue, "RepositoryInUse")
	f.g.Expect(c.Status.DeployedPackages).To(BeNil())
	return cond.Message
}

// deployedTags lists the tags of the cluster repository.
func (f *fixture) deployedTags() []string {
	var out []string
	for tag := range gittest.Tags(f.t, f.edge) {
		out = append(out, tag)
	}
	return out
}

// Two clusters on two Repositories of one URL, branch and directory: the older writes, the other
// is Stalled with RepositoryInUse naming it, and nothing of its deployment reaches git. When the
// writer is deleted, the other publishes.
func TestOneWriterSameDirectory(t *testing.T) {
	f := newFixture(t)
	f.repository("catalog")
	f.repository("edge01")
	f.cluster()
	f.deployment("edge01-nginx", "nginx-hello", "v1")
	writer := f.clusterWith(ConsistOf(v1alpha1.PublishedPin{Deployment: "edge01-nginx", Tag: "nginx-hello/v1"}))
	published := writer.Status.DeployedPackages
	// The same repository under another name (TestNormalize has the spellings of one URL).
	f.repository("edge01-again", func(r *v1alpha1.Repository) { r.Spec.Git.URL = f.git.URL + "/edge01.git" })
	blocked := f.secondCluster(f.ns, "edge02", "edge01-again")
	f.inUse(blocked, f.ns+"/edge01")

	// Nothing of edge02 is pushed: edge01's revision stays the last tag and the branch head.
	tags, head := f.deployedTags(), gittest.ReadCommit(t, f.edge, "main")
	f.g.Expect(tags).To(ContainElement(published.Tag))
	f.g.Consistently(func(g Gomega) {
		g.Expect(f.deployedTags()).To(ConsistOf(tags))
		g.Expect(gittest.ReadCommit(t, f.edge, "main")).To(Equal(head))
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())
	f.g.Expect(f.files("main")).To(ConsistOf("Kptfile", HavePrefix("edge01-nginx")))

	// The writer goes: edge02 publishes its own deployed-packages.
	f.g.Expect(env.Client.Delete(f.ctx, writer)).To(Succeed())
	f.g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(blocked), blocked)).To(Succeed())
		g.Expect(blocked.Status.DeployedPackages).NotTo(BeNil(), "conditions: %v", blocked.Status.Conditions)
		g.Expect(blocked.Status.DeployedPackages.Packages).To(ConsistOf(v1alpha1.PublishedPin{Deployment: "edge02-nginx", Tag: "nginx-hello/v1"}))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	f.condition(blocked, func() []metav1.Condition { return blocked.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "Published")
	f.g.Expect(blocked.Status.DeployedPackages.Revision).To(BeNumerically(">", published.Revision))
	f.g.Expect(f.files(blocked.Status.DeployedPackages.Tag)).To(ConsistOf("Kptfile", HavePrefix("edge02-nginx")))
}

// Two tenants name the same cluster repository (its URL spelled differently): the older cluster
// writes, the other is told which cluster (namespace/name), and nothing else of the writer's
// namespace.
func TestOneWriterAcrossNamespaces(t *testing.T) {
	f := newFixture(t)
	f.repository("catalog")
	f.repository("tenant-a-repository", func(r *v1alpha1.Repository) { r.Spec.Git.URL = f.git.URL + "/edge01.git" })
	f.cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.Repository.Name = "tenant-a-repository" })
	f.deployment("edge01-nginx", "nginx-hello", "v1")
	f.clusterWith(ConsistOf(v1alpha1.PublishedPin{Deployment: "edge01-nginx", Tag: "nginx-hello/v1"}))

	other := f.ns + "-b"
	f.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}})
	f.create(&v1alpha1.Repository{
		ObjectMeta: metav1.ObjectMeta{Name: "catalog", Namespace: other},
		Spec:       v1alpha1.RepositorySpec{Git: &v1alpha1.GitRepository{URL: f.git.URL + "/catalog.git"}},
	})
	variant := f.git.URL + "/edge01/"
	f.create(&v1alpha1.Repository{
		ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: other},
		Spec:       v1alpha1.RepositorySpec{Git: &v1alpha1.GitRepository{URL: variant}},
	})
	blocked := f.secondCluster(other, "edge01", "mine")
	msg := f.inUse(blocked, f.ns+"/edge01")
	f.g.Expect(msg).NotTo(ContainSubstring("tenant-a-repository"))
	f.g.Expect(msg).NotTo(ContainSubstring("edge01.git"), "the writer's URL")

	tags := f.deployedTags()
	f.g.Consistently(f.deployedTags, 2*time.Second, 200*time.Millisecond).Should(ConsistOf(tags))
	f.g.Expect(f.files("main")).To(ConsistOf("Kptfile", HavePrefix("edge01-nginx")))
}

// Two clusters on one Repository with different spec.sync.package write different directories:
// both publish.
func TestOneWriterDifferentPackages(t *testing.T) {
	f := newFixture(t)
	f.repository("catalog")
	f.repository("edge01")
	f.cluster()
	f.deployment("edge01-nginx", "nginx-hello", "v1")
	second := f.secondCluster(f.ns, "edge02", "edge01", func(c *v1alpha1.WorkloadCluster) { c.Spec.Sync.Package = "edge02-packages" })
	f.clusterWith(ConsistOf(v1alpha1.PublishedPin{Deployment: "edge01-nginx", Tag: "nginx-hello/v1"}))
	f.condition(second, func() []metav1.Condition { return second.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "Published")
	f.g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(second), second)).To(Succeed())
		g.Expect(second.Status.DeployedPackages).NotTo(BeNil())
		g.Expect(second.Status.DeployedPackages.Packages).To(ConsistOf(v1alpha1.PublishedPin{Deployment: "edge02-nginx", Tag: "nginx-hello/v1"}))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	f.g.Expect(second.Status.DeployedPackages.Tag).To(HavePrefix("edge02-packages/v"))
	f.g.Expect(f.deployedTags()).To(ContainElements(HavePrefix("deployed-packages/v"), HavePrefix("edge02-packages/v")))
}

// An older cluster moved onto the directory a newer cluster publishes to does not take it over
// (which would undeploy what the newer one runs): the cluster published there keeps writing, and
// the moved one is Stalled with RepositoryInUse naming it.
func TestOneWriterKeepsThePublisher(t *testing.T) {
	f := newFixture(t)
	f.git.CreateRepo(t, "elsewhere")
	f.repository("catalog")
	f.repository("edge01")
	f.repository("elsewhere")
	older := f.secondCluster(f.ns, "older", "elsewhere")
	f.g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(older), older)).To(Succeed())
		g.Expect(older.Status.DeployedPackages).NotTo(BeNil())
		g.Expect(older.Status.DeployedPackages.Location).To(HaveSuffix("/elsewhere main deployed-packages"))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	time.Sleep(time.Second) // creationTimestamp has a resolution of one second
	f.cluster()
	f.deployment("edge01-nginx", "nginx-hello", "v2")
	newer := f.clusterWith(ConsistOf(v1alpha1.PublishedPin{Deployment: "edge01-nginx", Tag: "nginx-hello/v2"}))
	f.g.Expect(older.CreationTimestamp.Before(&newer.CreationTimestamp)).To(BeTrue())
	tags, head := f.deployedTags(), gittest.ReadCommit(t, f.edge, "main")

	f.update(older, func() { older.Spec.Repository.Name = "edge01" })
	cond := f.condition(older, func() []metav1.Condition { return older.Status.Conditions }, v1alpha1.ConditionStalled, metav1.ConditionTrue, "RepositoryInUse")
	f.g.Expect(cond.Message).To(ContainSubstring("WorkloadCluster " + f.ns + "/edge01 writes deployed-packages"))
	// It left where it published: it no longer holds that place either.
	f.g.Expect(older.Status.DeployedPackages).To(BeNil())
	f.g.Consistently(func(g Gomega) {
		g.Expect(f.deployedTags()).To(ConsistOf(tags))
		g.Expect(gittest.ReadCommit(t, f.edge, "main")).To(Equal(head))
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed(), "nothing of the moved cluster is pushed")
	f.g.Expect(f.files("main")).To(ConsistOf("Kptfile", HavePrefix("edge01-nginx")))
}
