package controller_test

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/gittest"
)

// A deployment becomes a pinned RootSync in a new deployed-packages revision; changing its
// revision and deleting it each publish the next revision; nothing changed publishes nothing.
func TestDeployUpgradeUndeploy(t *testing.T) {
	f := newFixture(t)
	f.repository("catalog")
	f.repository("edge01")
	f.cluster()
	pd := f.deployment("edge01-nginx", "nginx-hello", "v1")

	c := f.clusterWith(ConsistOf(v1alpha1.PublishedPin{Deployment: "edge01-nginx", Tag: "nginx-hello/v1"}))
	first := c.Status.DeployedPackages
	f.condition(pd, func() []metav1.Condition { return pd.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "Published")
	g := f.g
	g.Expect(pd.Status.Resolved.Tag).To(Equal("nginx-hello/v1"))
	g.Expect(pd.Status.Resolved.Commit).To(Equal(gittest.Tags(t, f.catalog)["nginx-hello/v1"]))
	g.Expect(pd.Status.DeployedPackagesRevision).To(Equal(first.Revision))
	g.Expect(pd.Status.SyncObject.Kind).To(Equal("RootSync"))
	g.Expect(len(pd.Status.SyncObject.Name)).To(BeNumerically("<=", 38))
	g.Expect(pd.Finalizers).To(ContainElement(v1alpha1.FinalizerPackageDeployment))

	rs := f.syncObject(first.Tag, pd)
	g.Expect(rs.GetKind()).To(Equal("RootSync"))
	g.Expect(rs.GetAnnotations()).To(HaveKeyWithValue("configsync.gke.io/deletion-propagation-policy", "Foreground"))
	g.Expect(rs.Object["spec"]).To(HaveKeyWithValue("git", SatisfyAll(
		HaveKeyWithValue("revision", "nginx-hello/v1"),
		HaveKeyWithValue("dir", "/nginx-hello"),
		HaveKeyWithValue("repo", f.git.URL+"/catalog.git"),
	)))
	// The generated RootSync is valid for the real Config Sync CRD.
	g.Expect(dryRun(f.ctx, rs)).To(Succeed())

	// Nothing changed: a reconcile (triggered by a label) writes no commit and no tag.
	head := gittest.Branches(t, f.edge)["main"]
	tags := gittest.Tags(t, f.edge)
	f.update(c, func() { c.Labels = map[string]string{"poke": "1"} })
	f.condition(c, func() []metav1.Condition { return c.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "Published")
	g.Consistently(func() map[string]string { return gittest.Branches(t, f.edge) }, "2s").Should(HaveKeyWithValue("main", head))
	g.Expect(gittest.Tags(t, f.edge)).To(Equal(tags))

	// Upgrade: v1 -> v3 publishes the next deployed-packages revision, pinning nginx-hello/v3.
	f.update(pd, func() { pd.Spec.Package.Revision = "v3" })
	c = f.clusterAt(first.Revision + 1)
	g.Expect(f.syncObject(c.Status.DeployedPackages.Tag, pd).Object["spec"]).To(HaveKeyWithValue("git", HaveKeyWithValue("revision", "nginx-hello/v3")))

	// Undeploy: the next revision has no sync object, then the deployment is gone.
	g.Expect(env.Client.Delete(f.ctx, pd)).To(Succeed())
	c = f.clusterAt(first.Revision + 2)
	g.Expect(f.files(c.Status.DeployedPackages.Tag)).To(Equal([]string{"Kptfile"}))
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(f.ctx, client.ObjectKeyFromObject(pd), pd))
	}, "20s").Should(BeTrue())
	// Tags are never moved.
	after := gittest.Tags(t, f.edge)
	for tag, sha := range tags {
		g.Expect(after).To(HaveKeyWithValue(tag, sha))
	}
}

// Orphan is carried to Config Sync, RepoSync is used for namespaced deployments, and dependsOn
// becomes config.kubernetes.io/depends-on; the RepoSync is valid for the real CRD.
func TestOrphanNamespacedAndDependsOn(t *testing.T) {
	f := newFixture(t)
	f.repository("catalog")
	f.repository("edge01")
	f.cluster()
	crds := f.deployment("edge01-crds", "crds", "v1")
	app := f.deployment("edge01-app", "nginx-hello", "latest", func(pd *v1alpha1.PackageDeployment) {
		pd.Spec.Namespace = f.ns + "-apps"
		pd.Spec.DeletionPolicy = v1alpha1.DeletionPolicyOrphan
		pd.Spec.DependsOn = []v1alpha1.LocalObjectReference{{Name: "edge01-crds"}}
	})
	// The deployments resolve one after the other, so the cluster may publish a revision per
	// deployment; wait for the one that carries both.
	c := f.clusterWith(ConsistOf(
		v1alpha1.PublishedPin{Deployment: "edge01-app", Tag: "nginx-hello/v3"},
		v1alpha1.PublishedPin{Deployment: "edge01-crds", Tag: "crds/v1"},
	))
	g := f.g
	rs := f.syncObject(c.Status.DeployedPackages.Tag, app)
	g.Expect(rs.GetKind()).To(Equal("RepoSync"))
	g.Expect(rs.GetNamespace()).To(Equal(f.ns + "-apps"))
	g.Expect(rs.GetAnnotations()).To(HaveKeyWithValue("configsync.gke.io/deletion-propagation-policy", "Orphan"))
	f.condition(crds, func() []metav1.Condition { return crds.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "Published")
	g.Expect(rs.GetAnnotations()).To(HaveKeyWithValue("config.kubernetes.io/depends-on",
		"configsync.gke.io/namespaces/config-management-system/RootSync/"+crds.Status.SyncObject.Name))
	f.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns + "-apps"}})
	g.Expect(dryRun(f.ctx, rs)).To(Succeed())

	// A new tag moves a `latest` deployment.
	before := c.Status.DeployedPackages.Revision
	f.publish("nginx-hello", 4)
	c = f.clusterWith(ContainElement(v1alpha1.PublishedPin{Deployment: "edge01-app", Tag: "nginx-hello/v4"}))
	g.Expect(c.Status.DeployedPackages.Revision).To(Equal(before + 1))
}
