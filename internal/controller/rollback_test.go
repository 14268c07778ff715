package controller_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// A rollback whose write of the pins fails (here an admission policy refuses it, as a conflict
// with another writer would) is decided again once the write can succeed: the set does not record
// a rollback whose pins it never wrote, and the target returns to the revision healthy on it.
func TestRollbackIsRetriedWhenItsWriteFails(t *testing.T) {
	f := newFixture(t)
	g := f.g
	f.repository("catalog")
	for _, name := range []string{"a", "b"} {
		f.git.CreateRepo(t, name)
		f.repository(name)
		f.create(&v1alpha1.WorkloadCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Labels: map[string]string{"site-type": "edge"}},
			Spec:       v1alpha1.WorkloadClusterSpec{Repository: v1alpha1.LocalObjectReference{Name: name}},
		})
	}
	// Refuse upf-a's return from v2 to v1 until the policy is deleted.
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: f.ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"flotilla.dev"}, APIVersions: []string{"v1alpha1"}, Resources: []string{"packagedeployments"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "!(object.metadata.namespace == '" + f.ns + "' && object.metadata.name == 'upf-a' && " +
					"oldObject.spec.package.revision == 'v2' && object.spec.package.revision == 'v1')",
				Message: "rollback of upf-a refused by the test",
			}},
		},
	}
	deny := admissionregistrationv1.Deny
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: f.ns},
		Spec:       admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: f.ns, ValidationActions: []admissionregistrationv1.ValidationAction{deny}},
	}
	f.create(policy)
	f.create(binding)
	t.Cleanup(func() {
		_ = env.Client.Delete(f.ctx, binding)
		_ = env.Client.Delete(f.ctx, policy)
	})

	one := intstr.FromInt32(1)
	set := f.packageSet("upf", edge(map[string]string{"site-type": "edge"}), func(s *v1alpha1.PackageSet) {
		s.Spec.Package.Revision = "v1"
		s.Spec.Strategy = v1alpha1.RolloutStrategy{Type: v1alpha1.StrategyRollingUpdate, RollingUpdate: &v1alpha1.RollingUpdate{
			Steps:         []v1alpha1.RolloutStep{{MaxUnavailable: &one}},
			HealthTimeout: &metav1.Duration{Duration: 4 * time.Second},
			OnFailure:     v1alpha1.OnFailureRollback,
		}}
	})
	pinned := func(name string) string {
		pd := &v1alpha1.PackageDeployment{}
		g.Expect(env.Client.Get(f.ctx, f.key(name), pd)).To(Succeed())
		return pd.Spec.Package.Revision
	}
	g.Eventually(func() bool {
		g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(set), set)).To(Succeed())
		return meta.IsStatusConditionTrue(set.Status.Conditions, v1alpha1.ConditionReady)
	}, "60s").Should(BeTrue())

	// a stops publishing, so v2 never becomes healthy there; a moves first (name order).
	a := &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: f.ns}}
	f.update(a, func() { a.Spec.Suspend = true })
	f.update(set, func() { set.Spec.Package.Revision = "v2" })
	g.Eventually(func() string { return pinned("upf-a") }, "30s").Should(Equal("v2"))
	// The health timeout runs out and the rollback is decided; its write is refused.
	g.Eventually(func() bool {
		g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(set), set)).To(Succeed())
		c := meta.FindStatusCondition(set.Status.Conditions, v1alpha1.ConditionReconciling)
		tried := c != nil && c.Reason == "ApplyFailed" && strings.Contains(c.Message, "rollback of upf-a refused by the test")
		return tried || (set.Status.Rollout != nil && len(set.Status.Rollout.RolledBack) > 0)
	}, "30s", "100ms").Should(BeTrue())
	g.Consistently(func() string { return pinned("upf-a") }, "2s").Should(Equal("v2"), "the policy refuses the rollback")

	// The write may succeed now: the rollback happens, and only now is it recorded.
	g.Expect(env.Client.Delete(f.ctx, binding)).To(Succeed())
	g.Eventually(func() string { return pinned("upf-a") }, "30s").Should(Equal("v1"), "the rollback is written once it can be")
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(set), set)).To(Succeed())
		r := set.Status.Rollout
		g.Expect(r).NotTo(BeNil())
		g.Expect(r.Halted).To(BeTrue())
		g.Expect(r.RolledBack).To(ConsistOf(v1alpha1.RolledBackTarget{Target: "upf-a", From: "nginx-hello/v2", To: "nginx-hello/v1"}))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	g.Expect(pinned("upf-b")).To(Equal("v1"), "b was never moved")
}
