package controller_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/internal/testenv"
)

// node creates a Node in a workload cluster with the well-known region label and allocatable.
func node(t *testing.T, e *testenv.Env, name, region, cpu, memory string) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"topology.kubernetes.io/region": region}}}
	if err := e.Client.Create(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
	if err := e.Client.Status().Update(t.Context(), n); err != nil {
		t.Fatal(err)
	}
}

// Two real API servers as workload clusters: flotilla reads their facts (version, nodes,
// allocatable, region labels, the site's own ConfigMap) into status.facts; a PackageSet uses them
// in CEL and as a values layer, and a changed fact re-renders the variant of that cluster only.
func TestClusterFacts(t *testing.T) {
	f := newFixture(t)
	g := f.g
	workloads := map[string]*testenv.Env{}
	for _, name := range []string{"a", "b"} {
		e, err := testenv.Start()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Stop() })
		workloads[name] = e
		kc, err := e.AdminKubeconfig("facts-" + name)
		g.Expect(err).NotTo(HaveOccurred())
		f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kubeconfig-" + name, Namespace: f.ns}, Data: map[string][]byte{"value": kc}})
	}
	node(t, workloads["a"], "a1", "eu-west", "4", "8Gi")
	node(t, workloads["a"], "a2", "eu-west", "4", "8Gi")
	node(t, workloads["b"], "b1", "us-east", "16", "64Gi")
	g.Expect(workloads["a"].Client.Create(f.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "flotilla-facts", Namespace: "kube-system"},
		Data: map[string]string{"site": "madrid"}})).To(Succeed())

	gittest.Commit(t, f.catalog, "upf", map[string]string{"upf/Kptfile": upfKptfile, "upf/deployment.yaml": upfDeployment("30")}, "upf/v1")
	f.repository("catalog")
	for _, name := range []string{"a", "b"} {
		f.git.CreateRepo(t, name)
		f.repository(name)
		f.create(&v1alpha1.WorkloadCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Labels: map[string]string{"site-type": "edge"}},
			Spec: v1alpha1.WorkloadClusterSpec{Repository: v1alpha1.LocalObjectReference{Name: name},
				KubeConfigSecretRef: &v1alpha1.SecretKeyReference{Name: "kubeconfig-" + name, Key: "value"}},
		})
	}
	a := &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: f.ns}}
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(a), a)).To(Succeed())
		g.Expect(a.Status.Facts).NotTo(BeNil(), "conditions %v", a.Status.Conditions)
		fa := a.Status.Facts
		g.Expect(fa.KubernetesVersion).To(HavePrefix("v1."))
		g.Expect(fa.Nodes).To(BeEquivalentTo(2))
		g.Expect(fa.CPU.String()).To(Equal("8"))
		g.Expect(fa.Memory.String()).To(Equal("16Gi"))
		g.Expect(fa.Regions).To(Equal([]string{"eu-west"}))
		g.Expect(fa.Site).To(Equal(map[string]string{"site": "madrid"}))
	}, 60*time.Second, 200*time.Millisecond).Should(Succeed())

	f.packageSet("upf", edge(map[string]string{"site-type": "edge"}), func(s *v1alpha1.PackageSet) {
		s.Spec.Package = v1alpha1.PackageReference{Repository: &v1alpha1.LocalObjectReference{Name: "catalog"}, Name: "upf", Revision: "v1"}
		s.Spec.Template.Labels = map[string]string{"site": "'site' in target.facts.site ? target.facts.site['site'] : 'unknown'"}
		s.Spec.Variant = &v1alpha1.VariantSpec{Values: v1alpha1.VariantValues{Hierarchy: []v1alpha1.ValuesLayer{{Facts: true}}}}
	})
	g.Eventually(func() []string { return f.deploymentsOf("upf") }, "60s").Should(Equal([]string{"upf-a→a", "upf-b→b"}))
	variant := func(cluster, rev string) string {
		return gittest.ReadFile(t, f.git.Dir(cluster), rev, "upf/deployment.yaml")
	}
	g.Eventually(func() string { return variant("b", "main") }, "30s").Should(ContainSubstring("region: us-east"))
	g.Expect(variant("a", "upf/v1")).To(ContainSubstring("region: eu-west"))
	pd := &v1alpha1.PackageDeployment{}
	g.Expect(env.Client.Get(f.ctx, f.key("upf-a"), pd)).To(Succeed())
	g.Expect(pd.Labels).To(HaveKeyWithValue("site", "madrid"))
	g.Expect(env.Client.Get(f.ctx, f.key("upf-b"), pd)).To(Succeed())
	g.Expect(pd.Labels).To(HaveKeyWithValue("site", "unknown"))

	// b's nodes move to another region: only b's variant gets a new revision.
	variantTags := func(cluster string) map[string]string {
		out := map[string]string{}
		for tag, commit := range gittest.Tags(t, f.git.Dir(cluster)) {
			if strings.HasPrefix(tag, "upf/") {
				out[tag] = commit
			}
		}
		return out
	}
	aTags := variantTags("a")
	b1 := &corev1.Node{}
	g.Expect(workloads["b"].Client.Get(f.ctx, client.ObjectKey{Name: "b1"}, b1)).To(Succeed())
	b1.Labels["topology.kubernetes.io/region"] = "us-west"
	g.Expect(workloads["b"].Client.Update(f.ctx, b1)).To(Succeed())
	g.Eventually(func() string { return variant("b", "main") }, "60s").Should(ContainSubstring("region: us-west"))
	g.Expect(gittest.Tags(t, f.git.Dir("b"))).To(HaveKey("upf/v2"))
	g.Expect(variantTags("a")).To(Equal(aTags), "a's facts did not change: a's variant is not re-published")
}
