package controller_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/gittest"
)

// TestRepositoryFollowsThePublish: a cluster's Repository shows what flotilla pushed to it at
// once (from the mirror the publish updated, without a fetch of its own), not a poll interval
// later. (That a poll still sees another writer's push: pkgrepo's TestRefreshWithinAnswersFromAFreshMirror.)
func TestRepositoryFollowsThePublish(t *testing.T) {
	f := newFixture(t)
	f.repository("catalog")
	repo := f.repository("edge01", func(r *v1alpha1.Repository) {
		r.Spec.Interval = &metav1.Duration{Duration: time.Hour} // no poll within the test
	})
	f.g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, f.key("edge01"), repo)).To(Succeed())
		g.Expect(repo.Status.ObservedGeneration).To(Equal(repo.Generation))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	f.cluster()
	f.deployment("edge01-nginx", "nginx-hello", "v1")
	c := f.clusterWith(ConsistOf(v1alpha1.PublishedPin{Deployment: "edge01-nginx", Tag: "nginx-hello/v1"}))
	f.g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, f.key("edge01"), repo)).To(Succeed())
		g.Expect(repo.Status.Head).To(Equal(c.Status.DeployedPackages.Commit))
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed(), "the Repository does not show the published commit")
	f.g.Expect(gittest.Branches(t, f.edge)["main"]).To(Equal(c.Status.DeployedPackages.Commit))
}
