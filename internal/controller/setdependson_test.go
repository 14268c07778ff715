package controller_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// PackageSet dependsOn: with scope Cluster a target waits until the named set is Ready on that
// cluster (SMF before UPF on each site); with Fleet until the named set is Ready everywhere; a
// cycle is refused with the chain.
func TestPackageSetDependsOn(t *testing.T) {
	f := newFixture(t)
	g := f.g
	f.repository("catalog")
	for _, name := range []string{"a", "b"} {
		f.git.CreateRepo(t, name)
		f.repository(name)
		f.create(&v1alpha1.WorkloadCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Labels: map[string]string{"site-type": "edge"}},
			// b publishes nothing yet: what is deployed there is never Ready.
			Spec: v1alpha1.WorkloadClusterSpec{Repository: v1alpha1.LocalObjectReference{Name: name}, Suspend: name == "b"},
		})
	}
	edges := edge(map[string]string{"site-type": "edge"})
	f.packageSet("smf", edges, func(s *v1alpha1.PackageSet) { s.Spec.Package.Name = "crds"; s.Spec.Package.Revision = "v1" })
	upf := f.packageSet("upf", edges, func(s *v1alpha1.PackageSet) {
		s.Spec.DependsOn = []v1alpha1.SetDependency{{Name: "smf", Scope: v1alpha1.DependencyCluster}}
	})
	core := f.packageSet("core", edges, func(s *v1alpha1.PackageSet) {
		s.Spec.Package.Name = "nginx-hello"
		s.Spec.DependsOn = []v1alpha1.SetDependency{{Name: "smf", Scope: v1alpha1.DependencyFleet}}
	})

	// a: SMF is Ready there, so UPF follows; b: SMF is not, UPF waits and the set says so.
	g.Eventually(func() []string { return f.deploymentsOf("upf") }, "30s").Should(Equal([]string{"upf-a→a"}))
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(upf), upf)).To(Succeed())
		c := meta.FindStatusCondition(upf.Status.Conditions, v1alpha1.ConditionReady)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal("WaitingForDependency"))
		g.Expect(c.Message).To(SatisfyAll(ContainSubstring("1 of 2 targets"), ContainSubstring("upf-b"), ContainSubstring("smf-b to be healthy on cluster b")))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	// Fleet: core waits for SMF everywhere.
	f.condition(core, func() []metav1.Condition { return core.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionFalse, "WaitingForDependency")
	g.Consistently(func() []string { return f.deploymentsOf("core") }, 3*time.Second, 200*time.Millisecond).Should(BeEmpty())

	// b publishes: SMF becomes Ready there, then UPF (Cluster) and core (Fleet) move.
	b := &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: f.ns}}
	f.update(b, func() { b.Spec.Suspend = false })
	g.Eventually(func() []string { return f.deploymentsOf("upf") }, "60s").Should(Equal([]string{"upf-a→a", "upf-b→b"}))
	g.Eventually(func() []string { return f.deploymentsOf("core") }, "60s").Should(Equal([]string{"core-a→a", "core-b→b"}))

	// A cycle: smf now depends on upf, which depends on smf.
	smf := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: "smf", Namespace: f.ns}}
	f.update(smf, func() { smf.Spec.DependsOn = []v1alpha1.SetDependency{{Name: "upf"}} })
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(smf), smf)).To(Succeed())
		c := meta.FindStatusCondition(smf.Status.Conditions, v1alpha1.ConditionStalled)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal("DependencyCycle"))
		g.Expect(c.Message).To(ContainSubstring("smf → upf → smf"))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	g.Expect(f.deploymentsOf("smf")).To(Equal([]string{"smf-a→a", "smf-b→b"}), "a refused set keeps its deployments")
}

// template.dependsOn orders each generated deployment after the other set's deployment on the
// same cluster: the cluster publishes both, the UPF's sync object ordered after the SMF's, and a
// later change of the template reaches the deployments.
func TestPackageSetTemplateDependsOn(t *testing.T) {
	f := newFixture(t)
	g := f.g
	f.repository("catalog")
	f.repository("edge01")
	f.cluster()
	one := v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{List: []v1alpha1.ListElement{{Cluster: "edge01"}}}}
	f.packageSet("smf", one, func(s *v1alpha1.PackageSet) { s.Spec.Package.Name = "crds"; s.Spec.Package.Revision = "v1" })
	upf := f.packageSet("upf", one, func(s *v1alpha1.PackageSet) {
		s.Spec.Template.DependsOn = []v1alpha1.TemplateDependency{{NameExpr: "'smf-' + target.name"}}
	})
	c := f.clusterWith(ConsistOf(
		v1alpha1.PublishedPin{Deployment: "smf-edge01", Tag: "crds/v1"},
		v1alpha1.PublishedPin{Deployment: "upf-edge01", Tag: "nginx-hello/v2"},
	))
	pd := &v1alpha1.PackageDeployment{}
	g.Expect(env.Client.Get(f.ctx, f.key("upf-edge01"), pd)).To(Succeed())
	g.Expect(pd.Spec.DependsOn).To(Equal([]v1alpha1.LocalObjectReference{{Name: "smf-edge01"}}))
	smf := &v1alpha1.PackageDeployment{}
	g.Expect(env.Client.Get(f.ctx, f.key("smf-edge01"), smf)).To(Succeed())
	g.Eventually(func() string {
		g.Expect(env.Client.Get(f.ctx, f.key("smf-edge01"), smf)).To(Succeed())
		if smf.Status.SyncObject == nil {
			return ""
		}
		return smf.Status.SyncObject.Name
	}, "30s").ShouldNot(BeEmpty())
	rs := f.syncObject(c.Status.DeployedPackages.Tag, pd)
	g.Expect(rs.GetAnnotations()["config.kubernetes.io/depends-on"]).To(HaveSuffix("/RootSync/" + smf.Status.SyncObject.Name))

	// Dropping the dependency from the template drops it from the deployment.
	f.update(upf, func() { upf.Spec.Template.DependsOn = nil })
	g.Eventually(func() []v1alpha1.LocalObjectReference {
		g.Expect(env.Client.Get(f.ctx, f.key("upf-edge01"), pd)).To(Succeed())
		return pd.Spec.DependsOn
	}, "30s").Should(BeEmpty())
}

// A Cluster dependency on a set whose rollout has not reached a cluster yet holds that cluster:
// the set depended on has no deployment there, but will have one once its rollout resumes.
func TestPackageSetDependsOnARolloutInProgress(t *testing.T) {
	f := newFixture(t)
	g := f.g
	f.repository("catalog")
	for _, name := range []string{"a", "b"} {
		f.git.CreateRepo(t, name)
		f.repository(name)
		labels := map[string]string{"site-type": "edge"}
		if name == "a" {
			labels["wave"] = "canary"
		}
		f.create(&v1alpha1.WorkloadCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Labels: labels},
			Spec:       v1alpha1.WorkloadClusterSpec{Repository: v1alpha1.LocalObjectReference{Name: name}},
		})
	}
	edges := edge(map[string]string{"site-type": "edge"})
	one := intstr.FromInt32(1)
	smf := f.packageSet("smf", edges, func(s *v1alpha1.PackageSet) {
		s.Spec.Package.Name, s.Spec.Package.Revision = "crds", "v1"
		s.Spec.Strategy = v1alpha1.RolloutStrategy{Type: v1alpha1.StrategyRollingUpdate, RollingUpdate: &v1alpha1.RollingUpdate{Steps: []v1alpha1.RolloutStep{
			{Selector: &v1alpha1.LabelSelector{MatchLabels: map[string]string{"wave": "canary"}}, MaxUnavailable: &one, Pause: true},
			{MaxUnavailable: &one},
		}}}
	})
	upf := f.packageSet("upf", edges, func(s *v1alpha1.PackageSet) {
		s.Spec.DependsOn = []v1alpha1.SetDependency{{Name: "smf", Scope: v1alpha1.DependencyCluster}}
	})

	// smf pauses after its canary a: upf follows it there, and waits on b, where smf has not come.
	g.Eventually(func() bool {
		g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(smf), smf)).To(Succeed())
		return smf.Status.Rollout != nil && smf.Status.Rollout.Paused
	}, "30s").Should(BeTrue())
	g.Eventually(func() []string { return f.deploymentsOf("upf") }, "30s").Should(Equal([]string{"upf-a→a"}))
	g.Consistently(func() []string { return f.deploymentsOf("upf") }, "3s").Should(Equal([]string{"upf-a→a"}))
	c := f.condition(upf, func() []metav1.Condition { return upf.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionFalse, "WaitingForDependency")
	g.Expect(c.Message).To(ContainSubstring("PackageSet smf to reach cluster b"))

	// Resumed, smf reaches b, and upf follows.
	f.update(smf, func() { smf.Annotations = map[string]string{v1alpha1.AnnotationResume: "1"} })
	g.Eventually(func() []string { return f.deploymentsOf("upf") }, "30s").Should(Equal([]string{"upf-a→a", "upf-b→b"}))
	g.Expect(f.deploymentsOf("smf")).To(Equal([]string{"smf-a→a", "smf-b→b"}))
}
