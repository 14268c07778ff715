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

// A canary rollout over three API servers: v1 reaches only the canary's server and pauses; a
// resume moves the other two, one at a time, each only once the one before is healthy; v2, whose
// Deployment never becomes available, reaches the canary, and halts there: the other two servers
// never see it and keep running v1.
func TestCanaryPausesThenHaltsOnUnhealthyRevision(t *testing.T) {
	s := newStory(t, map[string]map[string]string{"alpha": {"wave": "canary"}})
	s.publish("app", 1, nil)
	s.publish("app", 2, unavailable())
	one := intstr.FromInt32(1)
	set := s.packageSet("app", &v1alpha1.RollingUpdate{
		Steps: []v1alpha1.RolloutStep{
			{Selector: &v1alpha1.LabelSelector{MatchLabels: map[string]string{"wave": "canary"}}, MaxUnavailable: &one, Pause: true},
			{MaxUnavailable: &one},
		},
		HealthTimeout: &metav1.Duration{Duration: healthTimeout},
	})
	s.create(set)
	revisions := s.revisions("app")

	s.g.Eventually(revisions, wait, time.Second).Should(Equal([]string{"1", "", ""}), "v1 reaches the canary's server first")
	s.g.Eventually(func() bool { r := s.rollout(set); return r != nil && r.Paused }, wait, time.Second).Should(BeTrue(), "and the rollout pauses after it")
	s.logf("v1 on the canary, paused")
	s.g.Consistently(revisions, 5*time.Second, time.Second).Should(Equal([]string{"1", "", ""}), "a paused rollout moves nobody")

	rec := s.record(on("app", "gamma", "beta")...)
	s.resume(set, "after-canary")
	s.g.Eventually(revisions, wait, time.Second).Should(Equal([]string{"1", "1", "1"}), "the resume moves the rest")
	s.expectReady(set)
	rec.stop()
	s.expectBefore(rec, "1", on("app", "beta"), on("app", "gamma"))
	s.logf("v1 on every cluster, beta before gamma")

	rec = s.record(on("app", "alpha", "beta", "gamma")...)
	s.update(set, func() {
		set.Spec.Package.Revision = "v2"
		set.Spec.Strategy.RollingUpdate.HealthTimeout.Duration = failAfter
	})
	s.g.Eventually(revisions, wait, time.Second).Should(Equal([]string{"2", "1", "1"}), "v2 reaches the canary: Flux applies it")
	s.g.Eventually(func(g Gomega) {
		r := s.rollout(set)
		g.Expect(r).NotTo(BeNil())
		g.Expect(r.Halted).To(BeTrue(), "rollout: %+v", r)
		g.Expect(r.FailedTargets).To(ConsistOf("app-alpha"))
		g.Expect(meta.IsStatusConditionTrue(set.Status.Conditions, v1alpha1.ConditionStalled)).To(BeTrue())
	}, wait, time.Second).Should(Succeed(), "v2 never becomes healthy on the canary: the rollout halts naming it")
	s.logf("v2 halted on the canary")
	s.g.Consistently(revisions, 5*time.Second, time.Second).Should(Equal([]string{"2", "1", "1"}), "a halted rollout touches nothing further")
	rec.stop()
	s.expectNever(rec, "2", on("app", "beta", "gamma"))
	s.g.Expect(s.deployed("alpha")).To(BeTrue(), "Flux applied v2 on the canary's server: its Deployment is there, unavailable")
	for _, c := range []string{"beta", "gamma"} {
		s.g.Expect(s.deployed(c)).To(BeFalse(), "v2's Deployment never reaches %s", c)
		s.g.Expect(s.pinned(set, c)).To(Equal("v1"), "%s stays pinned to v1", c)
	}
}

// onFailure Rollback, rollbackScope All, over three API servers: v2 applies on the first cluster
// the rollout moves but never becomes healthy there; after the health timeout the set returns it
// to v1 and says so (status.rollout.rolledBack, Stalled RolledBack), Flux prunes v2's Deployment
// from that server, and the other two servers never see v2.
func TestRollbackReturnsTheFirstClusterToV1(t *testing.T) {
	s := newStory(t, nil)
	s.publish("app", 1, nil)
	s.publish("app", 2, unavailable())
	one := intstr.FromInt32(1)
	set := s.packageSet("app", &v1alpha1.RollingUpdate{
		Steps:         []v1alpha1.RolloutStep{{MaxUnavailable: &one}},
		HealthTimeout: &metav1.Duration{Duration: healthTimeout},
		OnFailure:     v1alpha1.OnFailureRollback,
		RollbackScope: v1alpha1.RollbackAll,
	})
	s.create(set)
	revisions := s.revisions("app")
	s.g.Eventually(revisions, wait, time.Second).Should(Equal([]string{"1", "1", "1"}))
	s.expectReady(set)
	s.logf("v1 on every cluster")

	rec := s.record(on("app", "alpha", "beta", "gamma")...)
	s.update(set, func() {
		set.Spec.Package.Revision = "v2"
		set.Spec.Strategy.RollingUpdate.HealthTimeout.Duration = failAfter
	})
	s.g.Eventually(revisions, wait, time.Second).Should(Equal([]string{"2", "1", "1"}), "alpha, first in name order, takes v2")
	// Flux applies a revision's objects one after another: the ConfigMap read above may be there
	// a moment before the Deployment (v2 stays failAfter, 90 s, before its rollback).
	s.g.Eventually(func() bool { return s.deployed("alpha") }, wait, time.Second).Should(BeTrue(), "v2's Deployment is applied on alpha's server")
	s.logf("v2 on alpha")
	s.g.Eventually(func(g Gomega) {
		r := s.rollout(set)
		g.Expect(r).NotTo(BeNil())
		g.Expect(r.Halted).To(BeTrue(), "rollout: %+v", r)
		g.Expect(r.RolledBack).To(ConsistOf(v1alpha1.RolledBackTarget{Target: "app-alpha", From: "app/v2", To: "app/v1"}))
		c := meta.FindStatusCondition(set.Status.Conditions, v1alpha1.ConditionStalled)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal("RolledBack"))
	}, wait, time.Second).Should(Succeed(), "the health timeout rolls alpha back")
	s.logf("alpha rolled back")
	s.g.Eventually(revisions, wait, time.Second).Should(Equal([]string{"1", "1", "1"}), "alpha runs v1 again")
	s.g.Eventually(func() bool { return s.deployed("alpha") }, wait, time.Second).Should(BeFalse(), "Flux prunes v2's Deployment from alpha")
	s.logf("alpha runs v1 again, v2's Deployment pruned")
	s.g.Consistently(revisions, 5*time.Second, time.Second).Should(Equal([]string{"1", "1", "1"}), "a rolled back rollout stays halted")
	rec.stop()
	s.expectNever(rec, "2", on("app", "beta", "gamma"))
	for _, c := range clusters {
		s.g.Expect(s.pinned(set, c)).To(Equal("v1"), "%s is pinned to v1", c)
	}
}

// partitionBy region over three API servers in two regions: each revision reaches one region at a
// time, in the sorted order of the region names (eu-central's beta before us-west's alpha and
// gamma, though alpha sorts first by name), the next region only once the previous one is
// healthy.
func TestPartitionByRegionMovesOneRegionAtATime(t *testing.T) {
	s := newStory(t, map[string]map[string]string{
		"alpha": {"region": "us-west"},
		"beta":  {"region": "eu-central"},
		"gamma": {"region": "us-west"},
	})
	s.publish("app", 1, nil)
	s.publish("app", 2, nil)
	all := intstr.FromString("100%")
	set := s.packageSet("app", &v1alpha1.RollingUpdate{
		PartitionBy:   "region",
		Steps:         []v1alpha1.RolloutStep{{MaxUnavailable: &all}},
		HealthTimeout: &metav1.Duration{Duration: healthTimeout},
	})
	eu, us := on("app", "beta"), on("app", "alpha", "gamma")
	revisions := s.revisions("app")
	for _, rev := range []string{"1", "2"} {
		rec := s.record(append(us, eu...)...)
		if rev == "1" {
			s.create(set)
		} else {
			s.update(set, func() { set.Spec.Package.Revision = "v2" })
		}
		s.g.Eventually(revisions, wait, time.Second).Should(Equal([]string{rev, rev, rev}), "v%s reaches every region", rev)
		s.expectReady(set)
		rec.stop()
		s.expectBefore(rec, rev, eu, us)
		s.logf("v%s on every cluster, eu-central before us-west", rev)
	}
}
