package controller_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/internal/testenv"
)

// greetBlueprint publishes revision 1 of a catalog package whose ConfigMap says hello, with the
// given Kptfile pipeline.
func (f *fixture) greetBlueprint(pkg, pipeline string) {
	gittest.Commit(f.t, f.catalog, pkg, map[string]string{
		pkg + "/Kptfile":        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: " + pkg + "\n" + pipeline,
		pkg + "/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: greeting\ndata:\n  greeting: hello\n",
	}, pkg+"/v1")
}

func variantSet(blueprint string, mutators ...v1alpha1.KptFunction) func(*v1alpha1.PackageSet) {
	return func(s *v1alpha1.PackageSet) {
		s.Spec.Package = v1alpha1.PackageReference{Repository: &v1alpha1.LocalObjectReference{Name: "catalog"}, Name: blueprint, Revision: "v1"}
		s.Spec.Variant = &v1alpha1.VariantSpec{}
		if len(mutators) > 0 {
			s.Spec.Variant.Pipeline = &v1alpha1.VariantPipeline{Mutators: mutators}
		}
	}
}

// The controller runs the one exec function it allows (testenv.ExecFunction), from a blueprint's
// Kptfile; a set whose variant pipeline names another one gets a target problem naming it and
// publishes nothing, even when that other one is the same script at another path.
func TestPackageSetExecFunctionAllowlist(t *testing.T) {
	f := newFixture(t)
	g := f.g
	f.greetBlueprint("greet", "pipeline:\n  mutators:\n  - exec: "+testenv.ExecFunction()+"\n")
	f.greetBlueprint("plain", "")
	f.repository("catalog")
	f.repository("edge01")
	f.clusters(map[string]map[string]string{"a": {"site-type": "edge"}})

	copied := filepath.Join(t.TempDir(), "exec-function.sh")
	script, err := os.ReadFile(testenv.ExecFunction())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(copied, script, 0o755)).To(Succeed())

	f.packageSet("allowed", edge(map[string]string{"site-type": "edge"}), variantSet("greet"))
	refused := f.packageSet("refused", edge(map[string]string{"site-type": "edge"}), variantSet("plain", v1alpha1.KptFunction{Exec: copied}))

	g.Eventually(func() []string { return f.deploymentsOf("allowed") }, "30s").Should(Equal([]string{"allowed-a→a"}))
	g.Expect(gittest.ReadFile(t, f.edge, "greet/v1", "greet/configmap.yaml")).To(ContainSubstring("greeting: hello-from-exec"), "the allowed function ran")

	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(refused), refused)).To(Succeed())
		g.Expect(refused.Status.Problems).To(HaveLen(1))
		g.Expect(refused.Status.Problems[0].Target).To(Equal("a"))
		g.Expect(refused.Status.Problems[0].Message).To(SatisfyAll(ContainSubstring(copied), ContainSubstring("not allowed"), ContainSubstring("--allow-exec-functions")))
	}, 30*time.Second).Should(Succeed())
	cond := f.condition(refused, func() []metav1.Condition { return refused.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionFalse, "TargetProblems")
	g.Expect(cond.Message).To(ContainSubstring(copied))
	g.Consistently(func() []string { return f.deploymentsOf("refused") }, "2s").Should(BeEmpty())
	for tag := range gittest.Tags(t, f.edge) {
		g.Expect(tag).NotTo(HavePrefix("plain/"), "nothing is published for the refused set")
	}
}

var nephioClusterGVK = testenv.GVK("infra.nephio.org", "v1alpha1", "WorkloadCluster")

// installCRDs installs small namespaced CRDs that accept any fields, each served as v1alpha1 and
// v1beta1: nephio's WorkloadCluster
// (the kind the test controller allows objects generators to read) and a Machine it does not.
func installCRDs(t *testing.T) {
	t.Helper()
	crd := func(group, kind, plural string) *apiextensionsv1.CustomResourceDefinition {
		yes := true
		schema := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &yes}}
		return &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: group,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind)},
				Scope: apiextensionsv1.NamespaceScoped,
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
					{Name: "v1alpha1", Served: true, Storage: true, Schema: schema},
					{Name: "v1beta1", Served: true, Schema: schema},
				},
			},
		}
	}
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{
		crd("infra.nephio.org", "WorkloadCluster", "workloadclusters"),
		crd("infra.example.com", "Machine", "machines"),
	}}); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) nephioCluster(namespace, name string) {
	f.t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(nephioClusterGVK)
	u.SetNamespace(namespace)
	u.SetName(name)
	f.create(u)
}

// watches returns how many WATCH requests on the resource of group are open at the API server
// (its apiserver_longrunning_requests metric): the controller's informers.
func watches(g Gomega, group, resource string) int {
	cs, err := kubernetes.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "apiserver_longrunning_requests{") && strings.Contains(line, `group="`+group+`"`) &&
			strings.Contains(line, `resource="`+resource+`"`) && strings.Contains(line, `verb="WATCH"`) && !strings.HasSuffix(line, " 0") {
			n++
		}
	}
	g.Expect(sc.Err()).NotTo(HaveOccurred())
	return n
}

// An objects generator over the allowed kind reads the objects of the set's own namespace only and
// follows them through a watch; switched to a kind the operator has not allowed, the set is
// refused in its status, starts no watch and deletes nothing.
func TestPackageSetObjectsGeneratorKinds(t *testing.T) {
	installCRDs(t)
	f := newFixture(t)
	g := f.g
	f.repository("catalog")
	f.repository("edge01")
	f.clusters(map[string]map[string]string{"a": nil, "b": nil, "c": nil})
	other := f.ns + "-other"
	f.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}})
	f.nephioCluster(f.ns, "a")
	f.nephioCluster(other, "b") // names cluster b, but from another tenant's namespace

	set := f.packageSet("objs", v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{Objects: &v1alpha1.ObjectGenerator{
		APIVersion: "infra.nephio.org/v1alpha1", Kind: "WorkloadCluster",
	}}})
	g.Eventually(func() []string { return f.deploymentsOf("objs") }, "30s").Should(Equal([]string{"objs-a→a"}))
	g.Consistently(func() []string { return f.deploymentsOf("objs") }, "2s").Should(Equal([]string{"objs-a→a"}), "an object of another namespace is not read")
	g.Eventually(func(g Gomega) int { return watches(g, "infra.nephio.org", "workloadclusters") }, "10s").Should(Equal(1))

	// A new object reaches the set through the watch.
	f.nephioCluster(f.ns, "c")
	g.Eventually(func() []string { return f.deploymentsOf("objs") }, "30s").Should(Equal([]string{"objs-a→a", "objs-c→c"}))

	// More sets, over another version of the kind: still one watch.
	for _, name := range []string{"beta1", "beta2", "beta3"} {
		f.packageSet(name, v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{Objects: &v1alpha1.ObjectGenerator{
			APIVersion: "infra.nephio.org/v1beta1", Kind: "WorkloadCluster",
		}}})
	}
	g.Eventually(func() []string { return f.deploymentsOf("beta3") }, "30s").Should(Equal([]string{"beta3-a→a", "beta3-c→c"}))
	g.Expect(watches(g, "infra.nephio.org", "workloadclusters")).To(Equal(1), "one watch per allowed kind, whatever versions and however many sets")

	f.update(set, func() {
		set.Spec.Targets.Objects = &v1alpha1.ObjectGenerator{APIVersion: "infra.example.com/v1alpha1", Kind: "Machine"}
	})
	cond := f.condition(set, func() []metav1.Condition { return set.Status.Conditions }, v1alpha1.ConditionStalled, metav1.ConditionTrue, "KindNotAllowed")
	g.Expect(cond.Message).To(SatisfyAll(
		ContainSubstring("Machine.infra.example.com"), ContainSubstring("--objects-generator-kinds"),
		ContainSubstring("allowed now: WorkloadCluster.infra.nephio.org"), ContainSubstring("keeping the 2 existing deployments")))
	// The refusal is this generation's outcome (kstatus: Failed, not still in progress).
	g.Expect(set.Status.ObservedGeneration).To(Equal(set.Generation), "a refused generation is observed, and reported Stalled")
	g.Consistently(func() []string { return f.deploymentsOf("objs") }, "2s").Should(Equal([]string{"objs-a→a", "objs-c→c"}))
	g.Consistently(func(g Gomega) int { return watches(g, "infra.example.com", "machines") }, "2s").Should(BeZero())
	g.Expect(watches(g, "infra.nephio.org", "workloadclusters")).To(Equal(1), "the allowed kind is still watched once")
}
