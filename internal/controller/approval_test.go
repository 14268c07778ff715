package controller_test

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/approval"
	"github.com/flotilla-dev/flotilla/internal/gittest"
)

// Manual approval: a change is pushed to proposed/deployed-packages/vN and nothing is tagged
// until flotilla.dev/approve=vN; then vN is published on main and the proposal branch removed.
func TestManualApproval(t *testing.T) {
	f := newFixture(t)
	f.repository("catalog")
	f.repository("edge01")
	c := f.cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.Approval = v1alpha1.ApprovalManual })
	pd := f.deployment("edge01-nginx", "nginx-hello", "v2")
	g := f.g

	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		g.Expect(c.Status.Proposal).NotTo(BeNil())
		g.Expect(c.Status.Proposal.Packages).To(ConsistOf(v1alpha1.PublishedPin{Deployment: "edge01-nginx", Tag: "nginx-hello/v2"}))
	}, "30s", "100ms").Should(Succeed())
	p := *c.Status.Proposal
	g.Expect(p.Branch).To(Equal("proposed/deployed-packages/v1"))
	g.Expect(p.Summary).To(Equal("+edge01-nginx nginx-hello/v2"))
	g.Expect(gittest.Branches(t, f.edge)).To(HaveKeyWithValue(p.Branch, p.Commit))
	g.Expect(gittest.Tags(t, f.edge)).To(BeEmpty(), "nothing is published before approval")
	cond := f.condition(c, func() []metav1.Condition { return c.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionFalse, "WaitingForApproval")
	g.Expect(cond.Message).To(ContainSubstring("flotilla approve edge01"))
	f.condition(pd, func() []metav1.Condition { return pd.Status.Conditions }, v1alpha1.ConditionPublished, metav1.ConditionFalse, "WaitingForApproval")

	// A wrong revision approves nothing.
	f.update(c, func() { c.Annotations = map[string]string{v1alpha1.AnnotationApprove: "v7"} })
	g.Consistently(func() map[string]string { return gittest.Tags(t, f.edge) }, "2s").Should(BeEmpty())

	// `flotilla approve edge01`.
	n, err := approval.Approve(f.ctx, env.Client, client.ObjectKeyFromObject(c))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(Equal(1))
	c = f.clusterAt(1)
	g.Expect(c.Status.Proposal).To(BeNil())
	g.Expect(gittest.Tags(t, f.edge)).To(HaveKeyWithValue("deployed-packages/v1", p.Commit), "the approved commit is what gets tagged")
	g.Expect(gittest.Branches(t, f.edge)).NotTo(HaveKey(p.Branch), "the proposal branch is removed")
	f.condition(pd, func() []metav1.Condition { return pd.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "Published")

	// The next change is proposed as v2.
	f.update(pd, func() { pd.Spec.Package.Revision = "v3" })
	g.Eventually(func() string {
		_ = env.Client.Get(f.ctx, client.ObjectKeyFromObject(c), c)
		if c.Status.Proposal == nil {
			return ""
		}
		return c.Status.Proposal.Summary
	}, "30s").Should(Equal("~edge01-nginx nginx-hello/v2→nginx-hello/v3"))
	g.Expect(c.Status.Proposal.Branch).To(Equal("proposed/deployed-packages/v2"))
	g.Expect(c.Status.DeployedPackages.Tag).To(Equal("deployed-packages/v1"))
}
