package controller_test

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// dependsOn naming a deployment that does not exist, or one on another cluster, is an error on
// the deployment, which is held back rather than published without the order it asked for; a
// dependency that appears releases it, and one that goes later undeploys nothing.
func TestDependsOnErrors(t *testing.T) {
	f := newFixture(t)
	f.repository("catalog")
	f.repository("edge01")
	f.cluster()
	dependsOn := func(names ...string) func(*v1alpha1.PackageDeployment) {
		return func(pd *v1alpha1.PackageDeployment) {
			for _, n := range names {
				pd.Spec.DependsOn = append(pd.Spec.DependsOn, v1alpha1.LocalObjectReference{Name: n})
			}
		}
	}
	f.deployment("edge01-other", "nginx-hello", "v1")
	app := f.deployment("edge01-app", "nginx-hello", "v2", dependsOn("edge01-crds"))
	// Depends on app: held in turn while app is.
	top := f.deployment("edge01-top", "nginx-hello", "v3", dependsOn("edge01-app"))
	far := f.deployment("edge01-far", "nginx-hello", "v1", dependsOn("core-crds"))
	f.deployment("core-crds", "crds", "v1", func(pd *v1alpha1.PackageDeployment) { pd.Spec.Cluster.Name = "core" })

	cond := f.condition(app, func() []metav1.Condition { return app.Status.Conditions }, v1alpha1.ConditionStalled, metav1.ConditionTrue, "DependencyNotFound")
	f.g.Expect(cond.Message).To(ContainSubstring("edge01-crds, which does not exist in namespace " + f.ns))
	cond = f.condition(far, func() []metav1.Condition { return far.Status.Conditions }, v1alpha1.ConditionStalled, metav1.ConditionTrue, "DependencyOnOtherCluster")
	f.g.Expect(cond.Message).To(ContainSubstring("core-crds, which deploys to cluster core, not edge01"))
	f.condition(top, func() []metav1.Condition { return top.Status.Conditions }, v1alpha1.ConditionPublished, metav1.ConditionFalse, "WaitingForDependency")
	f.clusterWith(ConsistOf(v1alpha1.PublishedPin{Deployment: "edge01-other", Tag: "nginx-hello/v1"}))

	// The dependency appears: app, and then top, are published with their order.
	f.deployment("edge01-crds", "crds", "v1")
	c := f.clusterWith(ConsistOf(
		v1alpha1.PublishedPin{Deployment: "edge01-other", Tag: "nginx-hello/v1"},
		v1alpha1.PublishedPin{Deployment: "edge01-crds", Tag: "crds/v1"},
		v1alpha1.PublishedPin{Deployment: "edge01-app", Tag: "nginx-hello/v2"},
		v1alpha1.PublishedPin{Deployment: "edge01-top", Tag: "nginx-hello/v3"},
	))
	f.condition(app, func() []metav1.Condition { return app.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "Published")
	rootSync := f.syncObject(c.Status.DeployedPackages.Tag, app)
	f.g.Expect(rootSync.GetAnnotations()).To(HaveKeyWithValue("config.kubernetes.io/depends-on", ContainSubstring("RootSync/edge01-crds")))

	// The dependency goes: app stays published (nothing is undeployed on an error) and says why.
	crds := &v1alpha1.PackageDeployment{}
	f.g.Expect(env.Client.Get(f.ctx, f.key("edge01-crds"), crds)).To(Succeed())
	f.g.Expect(env.Client.Delete(f.ctx, crds)).To(Succeed())
	f.condition(app, func() []metav1.Condition { return app.Status.Conditions }, v1alpha1.ConditionStalled, metav1.ConditionTrue, "DependencyNotFound")
	f.clusterWith(ConsistOf(
		v1alpha1.PublishedPin{Deployment: "edge01-other", Tag: "nginx-hello/v1"},
		v1alpha1.PublishedPin{Deployment: "edge01-app", Tag: "nginx-hello/v2"},
		v1alpha1.PublishedPin{Deployment: "edge01-top", Tag: "nginx-hello/v3"},
	))
}
