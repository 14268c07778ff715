package intern_test

import (
	"strings"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/intern"
	"github.com/flotilla-dev/flotilla/internal/scheme"
)

// decoded returns two PackageDeployments decoded from JSON as an informer does, differing in
// their own fields only.
func decoded(t *testing.T) (*v1alpha1.PackageDeployment, *v1alpha1.PackageDeployment) {
	t.Helper()
	const doc = `apiVersion: flotilla.dev/v1alpha1
kind: PackageDeployment
metadata:
  name: NAME
  namespace: fleet
  uid: UID
  resourceVersion: "RV"
  labels: {flotilla.dev/packageset: s-00, env: prod}
  annotations: {flotilla.dev/target: c-0001, flotilla.dev/blueprint: pkg/v1}
  ownerReferences:
  - {apiVersion: flotilla.dev/v1alpha1, kind: PackageSet, name: s-00, uid: 0b5d1c52-0000-4000-8000-000000000001, controller: true}
  finalizers: [flotilla.dev/packagedeployment]
spec:
  cluster: {name: c-0001}
  package: {repository: {name: catalog}, name: pkg-00, revision: v1}
status:
  observedGeneration: 1
  resolved: {repository: catalog, revision: 1, tag: pkg-00/v1, commit: 0a23456789012345678901234567890123456789, directory: pkg-00}
  conditions:
  - {type: Ready, status: "True", reason: Published, message: pkg-00/v1 pinned in deployed-packages/v1, lastTransitionTime: "2026-12-06T20:00:00Z", observedGeneration: 1}
`
	dec := serializer.NewCodecFactory(scheme.New()).UniversalDeserializer()
	one := func(name, uid, rv string) *v1alpha1.PackageDeployment {
		y := strings.NewReplacer("NAME", name, "UID", uid, "RV", rv).Replace(doc)
		j, err := yaml.YAMLToJSON([]byte(y))
		if err != nil {
			t.Fatal(err)
		}
		o, _, err := dec.Decode(j, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return o.(*v1alpha1.PackageDeployment)
	}
	return one("s-00-c-0001", "uid-1", "11"), one("s-00-c-0002", "uid-2", "12")
}

func same(a, b string) bool { return a == b && unsafe.StringData(a) == unsafe.StringData(b) }

func TestObjectSharesWhatObjectsRepeat(t *testing.T) {
	a, b := decoded(t)
	if same(a.Namespace, b.Namespace) || same(a.Status.Resolved.Commit, b.Status.Resolved.Commit) {
		t.Fatal("the decoder already shares strings: the test shows nothing")
	}
	wantA, wantB := a.DeepCopy(), b.DeepCopy()
	tab := intern.NewTable(0)
	tab.Object(a)
	tab.Object(b)

	if !equality.Semantic.DeepEqual(a, wantA) || !equality.Semantic.DeepEqual(b, wantB) {
		t.Fatalf("interning changed the objects:\n%+v\nwant\n%+v", a, wantA)
	}
	shared := map[string][2]string{
		"namespace":              {a.Namespace, b.Namespace},
		"label value":            {a.Labels[v1alpha1.LabelPackageSet], b.Labels[v1alpha1.LabelPackageSet]},
		"annotation value":       {a.Annotations["flotilla.dev/target"], b.Annotations["flotilla.dev/target"]},
		"owner name":             {a.OwnerReferences[0].Name, b.OwnerReferences[0].Name},
		"owner uid":              {string(a.OwnerReferences[0].UID), string(b.OwnerReferences[0].UID)},
		"finalizer":              {a.Finalizers[0], b.Finalizers[0]},
		"spec.cluster":           {a.Spec.Cluster.Name, b.Spec.Cluster.Name},
		"spec.package.name":      {a.Spec.Package.Name, b.Spec.Package.Name},
		"status commit":          {a.Status.Resolved.Commit, b.Status.Resolved.Commit},
		"condition message":      {a.Status.Conditions[0].Message, b.Status.Conditions[0].Message},
		"condition reason":       {a.Status.Conditions[0].Reason, b.Status.Conditions[0].Reason},
		"condition type (typed)": {a.Status.Conditions[0].Type, b.Status.Conditions[0].Type},
	}
	for what, s := range shared {
		if !same(s[0], s[1]) {
			t.Errorf("%s %q: two copies after interning", what, s[0])
		}
	}
	for k := range a.Labels {
		for k2 := range b.Labels {
			if k == k2 && !same(k, k2) {
				t.Errorf("label key %q: two copies after interning", k)
			}
		}
	}
	// What is each object's own is left out of the table.
	if n := tab.Len(); n == 0 {
		t.Fatal("the table keeps nothing")
	}
	before := tab.Len()
	tab.String(a.Name)
	tab.String(string(a.UID))
	tab.String(a.ResourceVersion)
	if tab.Len() != before+3 {
		t.Errorf("the table already held the objects' names, uids or resourceVersions (%d entries, %d after adding them)", before, tab.Len())
	}
}

// fresh returns a new copy of s: string literals share one copy, decoded strings do not.
func fresh(s string) string { return strings.Clone(s) }

func TestObjectUnstructuredAndBytes(t *testing.T) {
	const v = "shared value"
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "a", "namespace": "fleet"},
		"data":     map[string]any{"k": fresh(v), "n": int64(3), "b": true, "f": 1.5},
		"list":     []any{fresh(v), map[string]any{"x": fresh(v)}, []any{fresh(v), nil}},
	}}
	// A typed map in a spec (string values) and one of another element type.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "fleet"}, Data: map[string]string{fresh("key"): fresh(v)}}
	node := &corev1.Node{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceName(fresh("cpu")): resource.MustParse("2")}}}
	strs := func() []string {
		return []string{
			u.Object["data"].(map[string]any)["k"].(string),
			u.Object["list"].([]any)[0].(string),
			u.Object["list"].([]any)[1].(map[string]any)["x"].(string),
			u.Object["list"].([]any)[2].([]any)[0].(string),
			cm.Data["key"],
		}
	}
	for _, s := range strs()[1:] {
		if same(strs()[0], s) {
			t.Fatal("the test's strings already share one copy: the test shows nothing")
		}
	}
	want, wantCM, wantNode := u.DeepCopy(), cm.DeepCopy(), node.DeepCopy()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "fleet"}, Data: map[string][]byte{"kubeconfig": []byte("bytes")}}
	wantSecret := secret.DeepCopy()

	tab := intern.NewTable(0)
	for _, o := range []any{u, cm, node, secret} {
		tab.Object(o)
	}
	if !equality.Semantic.DeepEqual(u, want) {
		t.Fatalf("interning changed the object:\n%v\nwant\n%v", u.Object, want.Object)
	}
	if !equality.Semantic.DeepEqual(cm, wantCM) || !equality.Semantic.DeepEqual(node, wantNode) || !equality.Semantic.DeepEqual(secret, wantSecret) {
		t.Fatalf("interning changed a typed object: %v %v %v", cm, node, secret)
	}
	got := strs()
	for i, s := range got[1:] {
		if !same(got[0], s) {
			t.Errorf("string %d (in a map, a list, a map in a list, a list in a list, a ConfigMap's data): not the table's copy", i+1)
		}
	}
	for k := range node.Status.Capacity {
		if c := tab.String("cpu"); !same(string(k), c) {
			t.Error("a typed map's key of a named string type: not the table's copy")
		}
	}
	// Not a pointer, or nothing: left alone, no panic.
	tab.Object(*u)
	tab.Object((*v1alpha1.PackageDeployment)(nil))
	tab.Object(nil)
}

func TestTableBounds(t *testing.T) {
	tab := intern.NewTable(3)
	for _, s := range []string{"a", "b", "c"} {
		tab.String(s)
	}
	if tab.Len() != 3 {
		t.Fatalf("Len %d, want 3", tab.Len())
	}
	if got := tab.String("d"); got != "d" || tab.Len() != 1 {
		t.Errorf("a full table starts over: String(d) = %q, Len %d, want d and 1", got, tab.Len())
	}
	long := strings.Repeat("x", intern.MaxLen+1)
	if got := tab.String(long); got != long || tab.Len() != 1 {
		t.Errorf("a string longer than MaxLen is not kept: Len %d, want 1", tab.Len())
	}
	if tab.String("") != "" || tab.Len() != 1 {
		t.Error("the empty string is not kept")
	}
	// The table keeps its own copy: a string cut from a larger buffer does not keep it alive.
	buf := "prefix-shared-suffix"
	got := tab.String(buf[7:13])
	if got != "shared" || unsafe.StringData(got) == unsafe.StringData(buf[7:13]) {
		t.Error("the table keeps the caller's bytes, not a copy")
	}
}
