package fleet

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// dependsOn with scope Cluster over three API servers: the set app depends on the set base, whose
// canary rollout pauses after alpha. app then runs on alpha only, after base is healthy there,
// and waits on beta and gamma, where base has not arrived; resuming base brings base and then app
// to each of them. On every server app's objects appear only after base's.
func TestDependsOnWaitsForTheOtherSetOnEachCluster(t *testing.T) {
	s := newStory(t, map[string]map[string]string{"alpha": {"wave": "canary"}})
	s.publish("base", 1, nil)
	s.publish("app", 1, nil)
	one := intstr.FromInt32(1)
	base := s.packageSet("base", &v1alpha1.RollingUpdate{
		Steps: []v1alpha1.RolloutStep{
			{Selector: &v1alpha1.LabelSelector{MatchLabels: map[string]string{"wave": "canary"}}, MaxUnavailable: &one, Pause: true},
			{MaxUnavailable: &one},
		},
		HealthTimeout: &metav1.Duration{Duration: healthTimeout},
	})
	app := s.packageSet("app", nil)
	app.Spec.DependsOn = []v1alpha1.SetDependency{{Name: "base", Scope: v1alpha1.DependencyCluster}}

	var probes []probe
	for _, c := range clusters {
		probes = append(probes, append(on("app", c), on("base", c)...)...)
	}
	rec := s.record(probes...)
	s.create(base)
	s.create(app)
	s.g.Eventually(s.revisions("base"), wait, time.Second).Should(Equal([]string{"1", "", ""}))
	s.g.Eventually(func() bool { r := s.rollout(base); return r != nil && r.Paused }, wait, time.Second).Should(BeTrue())
	s.g.Eventually(s.revisions("app"), wait, time.Second).Should(Equal([]string{"1", "", ""}), "app follows base on alpha")
	s.g.Consistently(s.revisions("app"), 5*time.Second, time.Second).Should(Equal([]string{"1", "", ""}), "app waits on beta and gamma, where base is not")
	s.g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(s.getSet(app).Status.Conditions, v1alpha1.ConditionReady)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal("WaitingForDependency"))
		g.Expect(c.Message).To(ContainSubstring("2 of 3 targets"))
	}, wait, time.Second).Should(Succeed(), "app says what it waits for")
	s.logf("base and app on alpha only")

	s.resume(base, "after-canary")
	s.g.Eventually(s.revisions("app"), wait, time.Second).Should(Equal([]string{"1", "1", "1"}))
	s.expectReady(base)
	s.expectReady(app)
	rec.stop()
	for _, c := range clusters {
		s.expectBefore(rec, "1", on("base", c), on("app", c))
	}
	s.logf("base then app on every cluster")
}
