package controller_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/gittest"
	rolloutpkg "github.com/flotilla-dev/flotilla/internal/rollout"
)

// A RollingUpdate of a set with a variant: each step renders and publishes the new blueprint
// revision's variant only in the repositories of the clusters it moves; a target that fails its
// health check is rolled back to the variant revision last healthy on it, and the targets the
// rollout had not reached keep their variant revision, nothing rendered for them.
func TestVariantRollingUpdate(t *testing.T) {
	f := newFixture(t)
	g := f.g
	gittest.Commit(t, f.catalog, "upf", map[string]string{"upf/Kptfile": upfKptfile, "upf/deployment.yaml": upfDeployment("30")}, "upf/v1")
	f.repository("catalog")
	for _, name := range []string{"a", "b", "c"} {
		f.git.CreateRepo(t, name)
		f.repository(name)
		labels := map[string]string{"site-type": "edge"}
		if name == "a" {
			labels["wave"] = "canary"
		}
		f.create(&v1alpha1.WorkloadCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Labels: labels},
			Spec:       v1alpha1.WorkloadClusterSpec{Repository: v1alpha1.LocalObjectReference{Name: name}, Context: map[string]string{"region": "r-" + name}},
		})
	}
	one := intstr.FromInt32(1)
	set := f.packageSet("upf", edge(map[string]string{"site-type": "edge"}), func(s *v1alpha1.PackageSet) {
		s.Spec.Package = v1alpha1.PackageReference{Repository: &v1alpha1.LocalObjectReference{Name: "catalog"}, Name: "upf", Revision: "v1"}
		s.Spec.Variant = &v1alpha1.VariantSpec{Values: v1alpha1.VariantValues{
			Inline: map[string]string{"replicas": "2", "image": "upf:1.0", "region": "none"},
		}}
		s.Spec.Strategy = v1alpha1.RolloutStrategy{Type: v1alpha1.StrategyRollingUpdate, RollingUpdate: &v1alpha1.RollingUpdate{
			Steps: []v1alpha1.RolloutStep{
				{Selector: &v1alpha1.LabelSelector{MatchLabels: map[string]string{"wave": "canary"}}, Pause: true},
				{MaxUnavailable: &one},
			},
			HealthTimeout: &metav1.Duration{Duration: 4 * time.Second},
			OnFailure:     v1alpha1.OnFailureRollback,
		}}
	})
	pd := func(name string) *v1alpha1.PackageDeployment {
		d := &v1alpha1.PackageDeployment{}
		g.Expect(env.Client.Get(f.ctx, f.key(name), d)).To(Succeed())
		return d
	}
	progress := func() *v1alpha1.RolloutStatus {
		g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(set), set)).To(Succeed())
		return set.Status.Rollout
	}
	tags := func(cluster string) []string {
		var out []string
		for tag := range gittest.Tags(t, f.git.Dir(cluster)) {
			if len(tag) > 4 && tag[:4] == "upf/" {
				out = append(out, tag)
			}
		}
		return out
	}
	resume := func(value string) {
		f.update(set, func() { set.Annotations = map[string]string{v1alpha1.AnnotationResume: value} })
	}

	// The canary step: only a's variant is rendered and deployed, then the rollout pauses.
	g.Eventually(func() []string { return f.deploymentsOf("upf") }, "30s").Should(Equal([]string{"upf-a→a"}))
	g.Eventually(func() bool { r := progress(); return r != nil && r.Paused }, "30s").Should(BeTrue())
	g.Expect(tags("b")).To(BeEmpty(), "no variant is rendered for a target the rollout has not reached")
	g.Expect(pd("upf-a").Annotations).To(HaveKeyWithValue("flotilla.dev/blueprint", "upf/v1"))
	resume("1")
	g.Eventually(func() []string { return f.deploymentsOf("upf") }, "60s").Should(Equal([]string{"upf-a→a", "upf-b→b", "upf-c→c"}))
	g.Eventually(func() bool { r := progress(); return rolloutpkg.Done(r) }, "60s").Should(BeTrue())

	// upf/v2; cluster b stops publishing, so what it is asked to deploy never becomes healthy.
	gittest.Commit(t, f.catalog, "upf", map[string]string{"upf/Kptfile": upfKptfile, "upf/deployment.yaml": upfDeployment("60")}, "upf/v2")
	b := &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: f.ns}}
	f.update(b, func() { b.Spec.Suspend = true })
	f.update(set, func() { set.Spec.Package.Revision = "v2" })
	g.Eventually(func() string { return pd("upf-a").Annotations["flotilla.dev/blueprint"] }, "30s").Should(Equal("upf/v2"))
	g.Eventually(func() bool { r := progress(); return r != nil && r.Paused && r.Revision == "upf/v2" }, "30s").Should(BeTrue())
	g.Expect(gittest.ReadFile(t, f.git.Dir("a"), "upf/"+pd("upf-a").Spec.Package.Revision, "upf/deployment.yaml")).To(ContainSubstring("terminationGracePeriodSeconds: 60"))
	g.Expect(tags("c")).To(Equal([]string{"upf/v1"}), "the paused rollout renders nothing for c")
	g.Expect(pd("upf-c").Spec.Package.Revision).To(Equal("v1"))

	// Step 2 moves b first (name order), which fails its health check: b returns to the variant
	// revision last healthy on it, the rollout halts on upf/v2, and c is never moved.
	resume("2")
	g.Eventually(func(g Gomega) {
		r := progress()
		g.Expect(r).NotTo(BeNil())
		g.Expect(r.Halted).To(BeTrue(), "rollout: %+v", r)
		g.Expect(r.RolledBack).To(ConsistOf(v1alpha1.RolledBackTarget{Target: "upf-b", From: "upf/v2", To: "upf/v1"}))
	}, 60*time.Second, 200*time.Millisecond).Should(Succeed())
	g.Expect(tags("b")).To(ContainElement("upf/v2"), "b's variant of upf/v2 was published when the step moved it")
	back := pd("upf-b")
	g.Expect(back.Spec.Package.Revision).To(Equal("v1"), "b pins the variant revision healthy before")
	g.Expect(back.Annotations).To(SatisfyAll(HaveKeyWithValue("flotilla.dev/blueprint", "upf/v1"),
		HaveKeyWithValue("flotilla.dev/last-healthy", "v1"), HaveKeyWithValue("flotilla.dev/last-healthy-blueprint", "upf/v1")))
	g.Expect(pd("upf-a").Annotations).To(SatisfyAll(HaveKeyWithValue("flotilla.dev/last-healthy", "v1"), HaveKeyWithValue("flotilla.dev/last-healthy-blueprint", "upf/v1")))
	g.Consistently(func() []string { return tags("c") }, 3*time.Second, 500*time.Millisecond).Should(Equal([]string{"upf/v1"}), "a halted rollout renders nothing for the targets it did not reach")
	g.Expect(pd("upf-c").Spec.Package.Revision).To(Equal("v1"))
	g.Expect(pd("upf-c").Annotations).To(HaveKeyWithValue("flotilla.dev/blueprint", "upf/v1"))

	// Each decision is an event on the set.
	g.Eventually(func(g Gomega) {
		g.Expect(f.events("RolloutStarted")).To(ContainElement(ContainSubstring("rolling out upf/v2")))
		g.Expect(f.events("RolloutPaused")).To(ContainElement(ContainSubstring("paused after step 1 of 2")))
		g.Expect(f.events("RolloutResumed")).NotTo(BeEmpty())
		g.Expect(f.events("RolloutComplete")).To(ContainElement(ContainSubstring("upf/v1")))
		g.Expect(f.events("RolledBack")).To(ContainElement(ContainSubstring("upf-b")))
	}, 10*time.Second, 200*time.Millisecond).Should(Succeed())
}
