package controller_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/gittest"
)

// A chain blueprint → use → environment, declared once: each layer specializes the one above,
// a new blueprint revision flows down layer by layer to the deployment that follows the last one,
// each layer keeps its direct edits, and a conflict stops the flow at its layer and says where.
func TestPackageVariantChain(t *testing.T) {
	f := newFixture(t)
	g := f.g
	gittest.Commit(t, f.catalog, "upf", map[string]string{"upf/Kptfile": upfKptfile, "upf/deployment.yaml": upfDeployment("30")}, "upf/v1")
	f.git.CreateRepo(t, "blueprints")
	for _, name := range []string{"catalog", "blueprints", "edge01"} {
		f.repository(name)
	}
	f.cluster()
	f.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "telco", Namespace: f.ns}, Data: map[string]string{"image": "upf:telco", "replicas": "2", "region": "none"}})
	use := &v1alpha1.PackageVariant{
		ObjectMeta: metav1.ObjectMeta{Name: "upf-telco", Namespace: f.ns},
		Spec: v1alpha1.PackageVariantSpec{
			Upstream:   v1alpha1.VariantUpstream{Repository: &v1alpha1.LocalObjectReference{Name: "catalog"}, Name: "upf", Revision: "latest"},
			Downstream: v1alpha1.VariantDownstream{Repository: v1alpha1.LocalObjectReference{Name: "blueprints"}, Package: "upf-telco"},
			Values:     v1alpha1.VariantValues{Hierarchy: []v1alpha1.ValuesLayer{{ConfigMap: "telco", Required: true}}},
		},
	}
	prod := &v1alpha1.PackageVariant{
		ObjectMeta: metav1.ObjectMeta{Name: "upf-telco-prod", Namespace: f.ns},
		Spec: v1alpha1.PackageVariantSpec{
			Upstream:   v1alpha1.VariantUpstream{Variant: "upf-telco"},
			Downstream: v1alpha1.VariantDownstream{Repository: v1alpha1.LocalObjectReference{Name: "blueprints"}, Package: "upf-telco-prod"},
			Values:     v1alpha1.VariantValues{Inline: map[string]string{"replicas": "5"}},
		},
	}
	f.create(prod) // before its upstream: it waits for it
	f.condition(prod, func() []metav1.Condition { return prod.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionFalse, "WaitingForUpstream")
	f.create(use)
	pd := f.deployment("upf", "upf-telco-prod", "latest", func(pd *v1alpha1.PackageDeployment) { pd.Spec.Package.Repository.Name = "blueprints" })

	blueprints := f.git.Dir("blueprints")
	file := func(rev, pkg, name string) string { return gittest.ReadFile(t, blueprints, rev, pkg+"/"+name) }
	f.clusterWith(ConsistOf(v1alpha1.PublishedPin{Deployment: "upf", Tag: "upf-telco-prod/v1"}))
	g.Expect(file("upf-telco-prod/v1", "upf-telco-prod", "deployment.yaml")).To(SatisfyAll(ContainSubstring("image: upf:telco"), ContainSubstring("replicas: 5 "), ContainSubstring("terminationGracePeriodSeconds: 30")))
	g.Expect(file("upf-telco-prod/v1", "upf-telco-prod", "Kptfile")).To(SatisfyAll(ContainSubstring("ref: upf-telco/v1"), ContainSubstring("upstreamLock:")))
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(prod), prod)).To(Succeed())
		g.Expect(prod.Status.Lineage).To(HaveLen(2))
		g.Expect([]string{prod.Status.Lineage[0].Variant, prod.Status.Lineage[0].Tag, prod.Status.Lineage[1].Variant, prod.Status.Lineage[1].Tag}).
			To(Equal([]string{"", "upf/v1", "upf-telco", "upf-telco/v1"}))
		g.Expect(prod.Status.Downstream.Tag).To(Equal("upf-telco-prod/v1"))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())

	// A direct edit of the environment layer, then a new blueprint revision: it flows down both
	// layers and the edit stays.
	gittest.Commit(t, blueprints, "", map[string]string{"upf-telco-prod/deployment.yaml": strings.Replace(file("main", "upf-telco-prod", "deployment.yaml"), "  labels:\n", "  labels:\n    team: core\n", 1)})
	gittest.Commit(t, f.catalog, "upf", map[string]string{"upf/Kptfile": upfKptfile, "upf/deployment.yaml": upfDeployment("60")}, "upf/v2")
	// The edit alone may be published first as its own revision (the layer re-renders when its
	// repository changes): what matters is the revision the deployment ends on.
	var deployed string
	g.Eventually(func(g Gomega) {
		c := &v1alpha1.WorkloadCluster{}
		g.Expect(env.Client.Get(f.ctx, f.key("edge01"), c)).To(Succeed())
		g.Expect(c.Status.DeployedPackages).NotTo(BeNil())
		g.Expect(c.Status.DeployedPackages.Packages).To(HaveLen(1))
		deployed = c.Status.DeployedPackages.Packages[0].Tag
		g.Expect(file(deployed, "upf-telco-prod", "deployment.yaml")).To(SatisfyAll(
			ContainSubstring("terminationGracePeriodSeconds: 60"), ContainSubstring("team: core"), ContainSubstring("image: upf:telco")))
	}, 60*time.Second, 500*time.Millisecond).Should(Succeed())
	g.Expect(file("upf-telco/v2", "upf-telco", "deployment.yaml")).To(ContainSubstring("terminationGracePeriodSeconds: 60"))

	// A conflicting edit in the use layer: the next blueprint revision stops there.
	gittest.Commit(t, blueprints, "", map[string]string{"upf-telco/deployment.yaml": strings.Replace(file("main", "upf-telco", "deployment.yaml"), "terminationGracePeriodSeconds: 60", "terminationGracePeriodSeconds: 10", 1)})
	gittest.Commit(t, f.catalog, "upf", map[string]string{"upf/Kptfile": upfKptfile, "upf/deployment.yaml": upfDeployment("90")}, "upf/v3")
	stalled := f.condition(use, func() []metav1.Condition { return use.Status.Conditions }, v1alpha1.ConditionStalled, metav1.ConditionTrue, "MergeConflict")
	g.Expect(stalled.Message).To(SatisfyAll(ContainSubstring("PackageVariant upf-telco"), ContainSubstring("deployment.yaml"),
		ContainSubstring("terminationGracePeriodSeconds"), ContainSubstring("upf/v3")))
	// The layer below keeps the last revision the use layer published (its edit may have been
	// published alone before the conflicting blueprint revision came).
	g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(prod), prod)).To(Succeed())
	kept, keptDown := prod.Status.Upstream.Tag, prod.Status.Downstream.Tag
	g.Consistently(func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(prod), prod)).To(Succeed())
		g.Expect(prod.Status.Upstream.Tag).To(Equal(kept))
		g.Expect(prod.Status.Downstream.Tag).To(Equal(keptDown))
		g.Expect(meta.IsStatusConditionTrue(prod.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue())
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())
	for tag := range gittest.Tags(t, blueprints) {
		if strings.HasPrefix(tag, "upf-telco") {
			g.Expect(file(tag, strings.Split(tag, "/")[0], "deployment.yaml")).NotTo(ContainSubstring("terminationGracePeriodSeconds: 90"), tag)
		}
	}
	g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(pd), pd)).To(Succeed())
	g.Eventually(func() string {
		g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(pd), pd)).To(Succeed())
		return pd.Status.Resolved.Tag
	}, 30*time.Second, 200*time.Millisecond).Should(Equal(keptDown))
}

// Variants that name each other as upstream are refused with the cycle; two variants writing one
// downstream package: the older writes, the other says so.
func TestPackageVariantRefusals(t *testing.T) {
	f := newFixture(t)
	f.repository("catalog")
	f.repository("edge01")
	mk := func(name, upstream, pkg string) *v1alpha1.PackageVariant {
		pv := &v1alpha1.PackageVariant{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
			Spec: v1alpha1.PackageVariantSpec{
				Downstream: v1alpha1.VariantDownstream{Repository: v1alpha1.LocalObjectReference{Name: "edge01"}, Package: pkg},
			},
		}
		if upstream != "" {
			pv.Spec.Upstream.Variant = upstream
		} else {
			pv.Spec.Upstream = v1alpha1.VariantUpstream{Repository: &v1alpha1.LocalObjectReference{Name: "catalog"}, Name: "nginx-hello", Revision: "v1"}
		}
		f.create(pv)
		return pv
	}
	a := mk("a", "b", "a")
	mk("b", "a", "b")
	stalled := f.condition(a, func() []metav1.Condition { return a.Status.Conditions }, v1alpha1.ConditionStalled, metav1.ConditionTrue, "VariantCycle")
	f.g.Expect(stalled.Message).To(ContainSubstring("a → b → a"))

	first := mk("first", "", "shared")
	f.condition(first, func() []metav1.Condition { return first.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "Published")
	second := mk("second", "", "shared")
	inUse := f.condition(second, func() []metav1.Condition { return second.Status.Conditions }, v1alpha1.ConditionStalled, metav1.ConditionTrue, "DownstreamInUse")
	f.g.Expect(inUse.Message).To(ContainSubstring("PackageVariant first"))

	err := env.Client.Create(f.ctx, &v1alpha1.PackageVariant{
		ObjectMeta: metav1.ObjectMeta{Name: "both", Namespace: f.ns},
		Spec: v1alpha1.PackageVariantSpec{
			Upstream:   v1alpha1.VariantUpstream{Variant: "a", Repository: &v1alpha1.LocalObjectReference{Name: "catalog"}, Name: "x"},
			Downstream: v1alpha1.VariantDownstream{Repository: v1alpha1.LocalObjectReference{Name: "edge01"}, Package: "x"},
		},
	})
	f.g.Expect(err).To(MatchError(ContainSubstring("set either variant")))
}

// A layer with approval Manual proposes each new revision and publishes it only when its
// flotilla.dev/approve annotation names the proposal's commit; the deployment below moves then.
func TestPackageVariantApproval(t *testing.T) {
	f := newFixture(t)
	g := f.g
	gittest.Commit(t, f.catalog, "upf", map[string]string{"upf/Kptfile": upfKptfile, "upf/deployment.yaml": upfDeployment("30")}, "upf/v1")
	f.git.CreateRepo(t, "blueprints")
	for _, name := range []string{"catalog", "blueprints", "edge01"} {
		f.repository(name)
	}
	f.cluster()
	pv := &v1alpha1.PackageVariant{
		ObjectMeta: metav1.ObjectMeta{Name: "upf-prod", Namespace: f.ns},
		Spec: v1alpha1.PackageVariantSpec{
			Upstream:   v1alpha1.VariantUpstream{Repository: &v1alpha1.LocalObjectReference{Name: "catalog"}, Name: "upf"},
			Downstream: v1alpha1.VariantDownstream{Repository: v1alpha1.LocalObjectReference{Name: "blueprints"}, Package: "upf-prod"},
			Values:     v1alpha1.VariantValues{Inline: map[string]string{"replicas": "3"}},
			Approval:   v1alpha1.ApprovalManual,
		},
	}
	f.create(pv)
	waiting := f.condition(pv, func() []metav1.Condition { return pv.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionFalse, "WaitingForApproval")
	g.Expect(pv.Status.Proposal).NotTo(BeNil())
	g.Expect(waiting.Message).To(SatisfyAll(ContainSubstring("proposed/upf-prod/v1"), ContainSubstring("flotilla.dev/approve="+pv.Status.Proposal.Commit)))
	g.Expect(gittest.Tags(t, f.git.Dir("blueprints"))).NotTo(HaveKey("upf-prod/v1"), "nothing is published before the approval")
	pd := f.deployment("upf", "upf-prod", "latest", func(pd *v1alpha1.PackageDeployment) { pd.Spec.Package.Repository.Name = "blueprints" })

	// A wrong approval publishes nothing and says why.
	f.update(pv, func() { pv.Annotations = map[string]string{v1alpha1.AnnotationApprove: "v1"} })
	f.condition(pv, func() []metav1.Condition { return pv.Status.Conditions }, v1alpha1.ConditionStalled, metav1.ConditionTrue, "ApprovalInvalid")

	commit := pv.Status.Proposal.Commit
	f.update(pv, func() { pv.Annotations = map[string]string{v1alpha1.AnnotationApprove: commit} })
	f.condition(pv, func() []metav1.Condition { return pv.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "Published")
	g.Expect(pv.Status.Downstream.Tag).To(Equal("upf-prod/v1"))
	g.Expect(pv.Status.ApprovedCommit).To(Equal(commit))
	g.Expect(pv.Status.Proposal).To(BeNil())
	g.Expect(gittest.ReadFile(t, f.git.Dir("blueprints"), "upf-prod/v1", "upf-prod/deployment.yaml")).To(ContainSubstring("replicas: 3 "))
	f.clusterWith(ConsistOf(v1alpha1.PublishedPin{Deployment: "upf", Tag: "upf-prod/v1"}))

	// The next blueprint revision waits again; the deployment stays.
	gittest.Commit(t, f.catalog, "upf", map[string]string{"upf/Kptfile": upfKptfile, "upf/deployment.yaml": upfDeployment("60")}, "upf/v2")
	f.condition(pv, func() []metav1.Condition { return pv.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionFalse, "WaitingForApproval")
	g.Expect(pv.Status.Proposal.Upstream.Tag).To(Equal("upf/v2"))
	g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(pd), pd)).To(Succeed())
	g.Expect(pd.Status.Resolved.Tag).To(Equal("upf-prod/v1"))
}
