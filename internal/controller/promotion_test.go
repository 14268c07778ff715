package controller_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// Promotion: the production set takes the revision the staging set deploys once staging has been
// Ready at it for healthyFor; hold keeps it where it is, force promotes at once.
func TestPackageSetPromotion(t *testing.T) {
	f := newFixture(t)
	g := f.g
	f.repository("catalog")
	for _, name := range []string{"staging", "prod"} {
		f.git.CreateRepo(t, name)
		f.repository(name)
		f.create(&v1alpha1.WorkloadCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Labels: map[string]string{"env": name}},
			Spec:       v1alpha1.WorkloadClusterSpec{Repository: v1alpha1.LocalObjectReference{Name: name}},
		})
	}
	staging := f.packageSet("staging-app", edge(map[string]string{"env": "staging"}), func(s *v1alpha1.PackageSet) { s.Spec.Package.Revision = "v1" })
	prod := f.packageSet("prod-app", edge(map[string]string{"env": "prod"}), func(s *v1alpha1.PackageSet) {
		s.Spec.Package.Revision = "v1"
		s.Spec.Package.RevisionFrom = &v1alpha1.RevisionFrom{PackageSet: "staging-app", HealthyFor: &metav1.Duration{Duration: 3 * time.Second}}
	})
	revision := func(name string) string {
		pd := &v1alpha1.PackageDeployment{}
		if err := env.Client.Get(f.ctx, f.key(name), pd); err != nil {
			return ""
		}
		return pd.Spec.Package.Revision
	}
	g.Eventually(func() string { return revision("prod-app-prod") }, "30s").Should(Equal("v1"))

	// Staging moves to v2; production follows once staging has been Ready at v2 for 3s.
	f.update(staging, func() { staging.Spec.Package.Revision = "v2" })
	g.Eventually(func() string { return revision("staging-app-staging") }, "30s").Should(Equal("v2"))
	g.Eventually(func() string { return revision("prod-app-prod") }, "30s").Should(Equal("v2"))
	g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(prod), prod)).To(Succeed())
	g.Expect(prod.Status.Promotion).NotTo(BeNil())
	g.Expect(prod.Status.Promotion.From).To(Equal("staging-app"))

	// Held: staging moves to v3, production stays.
	f.update(prod, func() { prod.Annotations = map[string]string{v1alpha1.AnnotationPromotion: "hold"} })
	f.update(staging, func() { staging.Spec.Package.Revision = "v3" })
	g.Eventually(func() string { return revision("staging-app-staging") }, "30s").Should(Equal("v3"))
	g.Consistently(func() string { return revision("prod-app-prod") }, 5*time.Second, 500*time.Millisecond).Should(Equal("v2"))
	g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(prod), prod)).To(Succeed())
	g.Expect(prod.Status.Promotion.Message).To(ContainSubstring("held by flotilla.dev/promotion: hold"))

	// A long healthyFor waits and says so; force promotes at once.
	f.update(prod, func() {
		prod.Annotations = nil
		prod.Spec.Package.RevisionFrom.HealthyFor = &metav1.Duration{Duration: time.Hour}
	})
	g.Eventually(func() string {
		g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(prod), prod)).To(Succeed())
		if prod.Status.Promotion == nil {
			return ""
		}
		return prod.Status.Promotion.Message
	}, "30s").Should(ContainSubstring("to stay Ready at v3 for 1h0m0s"))
	g.Expect(revision("prod-app-prod")).To(Equal("v2"))
	f.update(prod, func() { prod.Annotations = map[string]string{v1alpha1.AnnotationPromotion: "force"} })
	g.Eventually(func() string { return revision("prod-app-prod") }, "30s").Should(Equal("v3"))

	// A deployment cannot use revisionFrom.
	err := env.Client.Create(f.ctx, &v1alpha1.PackageDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "direct", Namespace: f.ns},
		Spec: v1alpha1.PackageDeploymentSpec{Cluster: v1alpha1.LocalObjectReference{Name: "prod"},
			Package: v1alpha1.PackageReference{Name: "nginx-hello", Revision: "v1", RevisionFrom: &v1alpha1.RevisionFrom{PackageSet: "staging-app"}}},
	})
	g.Expect(err).To(MatchError(ContainSubstring("spec.package.revisionFrom is for PackageSets")))
}
