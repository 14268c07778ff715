package controller_test

import (
	"os/exec"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/approval"
	"github.com/flotilla-dev/flotilla/internal/gittest"
)

// Manual approval: a change is pushed to proposed/deployed-packages/vN and nothing is tagged
// until flotilla.dev/approve names the proposal's commit; then exactly that commit is published
// as vN on main and the proposal branch removed.
func TestManualApproval(t *testing.T) {
	f := newFixture(t)
	f.repository("catalog")
	f.repository("edge01")
	c := f.cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.Approval = v1alpha1.ApprovalManual })
	pd := f.deployment("edge01-nginx", "nginx-hello", "v2")
	g := f.g

	p := f.proposal(c, "+edge01-nginx nginx-hello/v2")
	g.Expect(p.Branch).To(Equal("proposed/deployed-packages/v1"))
	g.Expect(p.Packages).To(ConsistOf(v1alpha1.PublishedPin{Deployment: "edge01-nginx", Tag: "nginx-hello/v2"}))
	g.Expect(gittest.Branches(t, f.edge)).To(HaveKeyWithValue(p.Branch, p.Commit))
	g.Expect(gittest.Tags(t, f.edge)).To(BeEmpty(), "nothing is published before approval")
	cond := f.condition(c, func() []metav1.Condition { return c.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionFalse, "WaitingForApproval")
	g.Expect(cond.Message).To(ContainSubstring("flotilla approve edge01"))
	g.Expect(cond.Message).To(ContainSubstring("flotilla.dev/approve=" + p.Commit))
	f.condition(pd, func() []metav1.Condition { return pd.Status.Conditions }, v1alpha1.ConditionPublished, metav1.ConditionFalse, "WaitingForApproval")

	// `flotilla approve edge01` writes the proposal's full commit id.
	approved, err := approval.Approve(f.ctx, env.Client, client.ObjectKeyFromObject(c))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(approved).To(Equal(p))
	g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
	g.Expect(c.Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationApprove, p.Commit))
	c = f.clusterAt(1)
	g.Expect(c.Status.Proposal).To(BeNil())
	g.Expect(gittest.Tags(t, f.edge)).To(HaveKeyWithValue("deployed-packages/v1", p.Commit), "the approved commit is what gets tagged")
	g.Expect(c.Status.DeployedPackages.ApprovedCommit).To(Equal(p.Commit))
	g.Expect(gittest.Branches(t, f.edge)).NotTo(HaveKey(p.Branch), "the proposal branch is removed")
	f.condition(pd, func() []metav1.Condition { return pd.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "Published")

	// The next change is proposed as v2 and waits: the approval still on the object named v1's
	// commit, which is published, so it neither approves v2 nor counts as outdated.
	f.update(pd, func() { pd.Spec.Package.Revision = "v3" })
	next := f.proposal(c, "~edge01-nginx nginx-hello/v2→nginx-hello/v3")
	g.Expect(next.Branch).To(Equal("proposed/deployed-packages/v2"))
	f.condition(c, func() []metav1.Condition { return c.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionFalse, "WaitingForApproval")
	g.Expect(c.Status.DeployedPackages.Tag).To(Equal("deployed-packages/v1"))
	g.Consistently(func() map[string]string { return gittest.Tags(t, f.edge) }, "2s").Should(HaveLen(1))
}

// An approval binds to the content reviewed: a proposal that changes after it was approved is a
// new commit, the old approval publishes nothing and the cluster says so; approving the new commit
// publishes exactly it.
func TestApprovalOfAnOutdatedProposal(t *testing.T) {
	f := newFixture(t)
	f.repository("catalog")
	f.repository("edge01")
	c := f.cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.Approval = v1alpha1.ApprovalManual })
	pd := f.deployment("edge01-nginx", "nginx-hello", "v2")
	g := f.g
	reviewed := f.proposal(c, "+edge01-nginx nginx-hello/v2")

	// The deployment moves before the approval reaches the controller.
	f.update(pd, func() { pd.Spec.Package.Revision = "v3" })
	current := f.proposal(c, "+edge01-nginx nginx-hello/v3")
	g.Expect(current.Commit).NotTo(Equal(reviewed.Commit), "new content, new commit")
	g.Expect(gittest.Branches(t, f.edge)).To(HaveKeyWithValue(current.Branch, current.Commit))

	f.update(c, func() { c.Annotations = map[string]string{v1alpha1.AnnotationApprove: reviewed.Commit} })
	cond := f.condition(c, func() []metav1.Condition { return c.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionFalse, "ApprovalOutdated")
	g.Expect(cond.Message).To(And(ContainSubstring(reviewed.Commit), ContainSubstring(current.Commit), ContainSubstring("flotilla approve edge01")))
	f.condition(c, func() []metav1.Condition { return c.Status.Conditions }, v1alpha1.ConditionReconciling, metav1.ConditionTrue, "ApprovalOutdated")
	g.Eventually(func() []string { return f.events("ApprovalOutdated") }, "30s", "100ms").Should(ConsistOf(cond.Message))
	g.Consistently(func() map[string]string { return gittest.Tags(t, f.edge) }, "2s").Should(BeEmpty(), "an outdated approval publishes nothing")
	g.Expect(gittest.Branches(t, f.edge)).To(Equal(map[string]string{current.Branch: current.Commit}), "main is untouched")

	// Approving the current commit publishes exactly that content.
	approved, err := approval.Approve(f.ctx, env.Client, client.ObjectKeyFromObject(c))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(approved.Commit).To(Equal(current.Commit))
	c = f.clusterAt(1)
	g.Expect(gittest.Tags(t, f.edge)).To(Equal(map[string]string{"deployed-packages/v1": current.Commit}))
	g.Expect(f.tree("deployed-packages/v1")).To(Equal(f.tree(current.Commit)))
	g.Expect(c.Status.DeployedPackages.Packages).To(ConsistOf(v1alpha1.PublishedPin{Deployment: "edge01-nginx", Tag: "nginx-hello/v3"}))
	f.condition(c, func() []metav1.Condition { return c.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "Published")
}

// The old flotilla.dev/approve=vN form is refused with a message that says what to write instead.
func TestApprovalByRevisionIsRefused(t *testing.T) {
	f := newFixture(t)
	f.repository("catalog")
	f.repository("edge01")
	c := f.cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.Approval = v1alpha1.ApprovalManual })
	f.deployment("edge01-nginx", "nginx-hello", "v2")
	g := f.g
	p := f.proposal(c, "+edge01-nginx nginx-hello/v2")

	f.update(c, func() { c.Annotations = map[string]string{v1alpha1.AnnotationApprove: "v1"} })
	cond := f.condition(c, func() []metav1.Condition { return c.Status.Conditions }, v1alpha1.ConditionStalled, metav1.ConditionTrue, "ApprovalInvalid")
	g.Expect(cond.Message).To(And(ContainSubstring("flotilla.dev/approve=v1 is refused"), ContainSubstring("full commit id"),
		ContainSubstring("flotilla approve edge01"), ContainSubstring("flotilla.dev/approve="+p.Commit)))
	g.Eventually(func() []string { return f.events("ApprovalInvalid") }, "30s", "100ms").Should(ConsistOf(cond.Message))
	g.Consistently(func() map[string]string { return gittest.Tags(t, f.edge) }, "2s").Should(BeEmpty(), "a refused approval publishes nothing")
}

// proposal waits until edge01's pending proposal has summary and returns it.
func (f *fixture) proposal(c *v1alpha1.WorkloadCluster, summary string) v1alpha1.ProposalStatus {
	f.t.Helper()
	f.g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		g.Expect(c.Status.Proposal).NotTo(BeNil())
		g.Expect(c.Status.Proposal.Summary).To(Equal(summary))
	}, "30s", "100ms").Should(Succeed())
	return *c.Status.Proposal
}

// events returns the notes of the events with reason in the test's namespace.
func (f *fixture) events(reason string) []string {
	var list eventsv1.EventList
	f.g.Expect(env.Client.List(f.ctx, &list, client.InNamespace(f.ns))).To(Succeed())
	var notes []string
	for _, e := range list.Items {
		if e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

// tree is the git tree id of deployed-packages at rev: equal ids, identical content.
func (f *fixture) tree(rev string) string {
	f.t.Helper()
	out, err := exec.Command("git", "-C", f.edge, "rev-parse", rev+":deployed-packages").Output()
	f.g.Expect(err).NotTo(HaveOccurred(), "rev-parse %s", rev)
	return strings.TrimSpace(string(out))
}
