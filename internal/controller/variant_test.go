package controller_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/gittest"
)

const upfKptfile = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: upf\n"

func upfDeployment(grace string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: upf
  labels:
    region: none # kpt-set: ${region}
spec:
  replicas: 1 # kpt-set: ${replicas}
  template:
    spec:
      terminationGracePeriodSeconds: ` + grace + `
      containers:
      - name: upf
        image: upf:1.0 # kpt-set: ${image}
        ports:
        - containerPort: 8805
`
}

// Three clusters with different context get three variants whose values follow the hierarchy; a
// hand edit survives a blueprint bump; a conflicting edit is reported and publishes nothing.
func TestPackageSetVariants(t *testing.T) {
	f := newFixture(t)
	g := f.g
	gittest.Commit(t, f.catalog, "upf", map[string]string{"upf/Kptfile": upfKptfile, "upf/deployment.yaml": upfDeployment("30")}, "upf/v1")
	f.repository("catalog")
	env2 := map[string]string{"a": "dev", "b": "prod", "c": "prod"}
	for _, name := range []string{"a", "b", "c"} {
		f.git.CreateRepo(t, name)
		f.repository(name)
		f.create(&v1alpha1.WorkloadCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Labels: map[string]string{"site-type": "edge"}},
			Spec:       v1alpha1.WorkloadClusterSpec{Repository: v1alpha1.LocalObjectReference{Name: name}, Context: map[string]string{"env": env2[name]}, Suspend: true},
		})
	}
	for name, data := range map[string]map[string]string{
		"upf-defaults":  {"replicas": "1", "image": "upf:1.0", "region": "none"},
		"upf-env-prod":  {"replicas": "3"},
		"upf-cluster-c": {"region": "us-west"},
	} {
		f.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}, Data: data})
	}
	set := f.packageSet("upf", edge(map[string]string{"site-type": "edge"}), func(s *v1alpha1.PackageSet) {
		s.Spec.Package = v1alpha1.PackageReference{Repository: &v1alpha1.LocalObjectReference{Name: "catalog"}, Name: "upf", Revision: "v1"}
		s.Spec.Variant = &v1alpha1.VariantSpec{Values: v1alpha1.VariantValues{
			Hierarchy: []v1alpha1.ValuesLayer{
				{ConfigMap: "upf-defaults", Required: true},
				{ConfigMapExpr: "'upf-env-' + target.context.env"},
				{ConfigMapExpr: "'upf-cluster-' + target.name"},
			},
			Inline: map[string]string{"image": "upf:1.1"},
		}}
	})
	variant := func(cluster, rev string) string {
		return gittest.ReadFile(t, f.git.Dir(cluster), rev, "upf/deployment.yaml")
	}
	g.Eventually(func() []string { return f.deploymentsOf("upf") }, "30s").Should(Equal([]string{"upf-a→a", "upf-b→b", "upf-c→c"}))
	for name, want := range map[string][]string{
		"a": {"replicas: 1 ", "region: none", "image: upf:1.1"},
		"b": {"replicas: 3 ", "region: none", "image: upf:1.1"},
		"c": {"replicas: 3 ", "region: us-west", "image: upf:1.1"},
	} {
		got := variant(name, "upf/v1")
		for _, w := range want {
			g.Expect(got).To(ContainSubstring(w), "variant of %s", name)
		}
	}
	pd := &v1alpha1.PackageDeployment{}
	g.Expect(env.Client.Get(f.ctx, f.key("upf-c"), pd)).To(Succeed())
	g.Expect(pd.Spec.Package).To(Equal(v1alpha1.PackageReference{Name: "upf", Revision: "v1"}), "the deployment pins the variant in the cluster's repository")
	g.Expect(pd.Annotations[`flotilla.dev/values`]).To(ContainSubstring(`"region":["us-west","configmap upf-cluster-c"]`))
	g.Expect(gittest.ReadFile(t, f.git.Dir("c"), "upf/v1", "upf/Kptfile")).To(SatisfyAll(ContainSubstring("upstreamLock:"), ContainSubstring("ref: upf/v1")))

	// Hand edits: b gets a new label (no conflict), c changes the port the blueprint also changes.
	edit := func(cluster, from, to string) {
		gittest.Commit(t, f.git.Dir(cluster), "", map[string]string{"upf/deployment.yaml": strings.Replace(variant(cluster, "main"), from, to, 1)})
	}
	edit("b", "  labels:\n", "  labels:\n    team: core\n")
	edit("c", "terminationGracePeriodSeconds: 30", "terminationGracePeriodSeconds: 10")

	gittest.Commit(t, f.catalog, "upf", map[string]string{"upf/Kptfile": upfKptfile, "upf/deployment.yaml": upfDeployment("60")}, "upf/v2")
	f.update(set, func() { set.Spec.Package.Revision = "v2" })
	// b's deployment moves to a variant revision rendered from upf/v2 that keeps the hand edit.
	g.Eventually(func() string {
		g.Expect(env.Client.Get(f.ctx, f.key("upf-b"), pd)).To(Succeed())
		return variant("b", "upf/"+pd.Spec.Package.Revision)
	}, "30s").Should(SatisfyAll(ContainSubstring("team: core"), ContainSubstring("terminationGracePeriodSeconds: 60")), "the hand edit survives the bump")
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(set), set)).To(Succeed())
		g.Expect(set.Status.Problems).To(HaveLen(1))
		g.Expect(set.Status.Problems[0].Target).To(Equal("c"))
		g.Expect(set.Status.Problems[0].Message).To(SatisfyAll(ContainSubstring("deployment.yaml"), ContainSubstring("Deployment/upf"), ContainSubstring("terminationGracePeriodSeconds")))
	}, 30*time.Second).Should(Succeed())
	for tag := range gittest.Tags(t, f.git.Dir("c")) {
		g.Expect(variant("c", tag)).NotTo(ContainSubstring("terminationGracePeriodSeconds: 60"), "nothing from upf/v2 is published for the conflicting target (%s)", tag)
	}
	g.Expect(env.Client.Get(f.ctx, f.key("upf-c"), pd)).To(Succeed())
	// Its deployment keeps the last good variant: the first one, or the hand edit if flotilla
	// published it before the bump.
	g.Expect(variant("c", "upf/"+pd.Spec.Package.Revision)).NotTo(ContainSubstring("terminationGracePeriodSeconds: 60"), "its deployment keeps the last good variant")
}
