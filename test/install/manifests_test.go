package install

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/generate"
)

// fieldOwner is the server-side apply field manager of every object the tests apply.
const fieldOwner = client.FieldOwner("flotilla-install-test")

// kustomize builds a kustomization directory (relative to the repository root), as
// `kubectl kustomize` does.
func kustomize(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionLegacy // as `kubectl kustomize` and `kustomize build`: Namespaces and CRDs first
	m, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), filepath.Join(root(), dir))
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range m.Resources() {
		obj, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, &unstructured.Unstructured{Object: normalize(t, obj)})
	}
	return out
}

// apply server-side applies objs in order, waiting for each CRD to be served before going on,
// and fails the test for every object the API server rejects.
func apply(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		if err := k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), fieldOwner, client.ForceOwnership); err != nil {
			t.Errorf("%s rejected: %v", id(o), err)
			continue
		}
		if o.GetKind() == "CustomResourceDefinition" {
			waitEstablished(t, o.GetName())
		}
	}
}

func waitEstablished(t *testing.T, name string) {
	t.Helper()
	NewWithT(t).Eventually(func() string {
		crd := &unstructured.Unstructured{}
		crd.SetAPIVersion("apiextensions.k8s.io/v1")
		crd.SetKind("CustomResourceDefinition")
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, c := range conds {
			if m, _ := c.(map[string]any); m["type"] == "Established" {
				return m["status"].(string)
			}
		}
		return "no Established condition"
	}, 30*time.Second, 100*time.Millisecond).Should(Equal("True"), "CRD %s", name)
}

// installDefault applies config/default (idempotent: every test that needs the CRDs calls it).
func installDefault(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	objs := kustomize(t, "config/default")
	apply(t, objs)
	if t.Failed() {
		t.FailNow()
	}
	return objs
}

// inNamespace moves namespaced objects, and renames Namespace objects, to ns, so two sets of
// examples that reuse names do not meet.
func inNamespace(objs []*unstructured.Unstructured, ns string) []*unstructured.Unstructured {
	for _, o := range objs {
		switch {
		case o.GetKind() == "Namespace":
			o.SetName(ns)
		case o.GetNamespace() != "":
			o.SetNamespace(ns)
		}
	}
	return objs
}

func id(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetKind() + " " + o.GetName()
	}
	return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}

func ids(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, id(o))
	}
	slices.Sort(out)
	return out
}

// normalize round-trips obj through JSON, so objects decoded by kustomize and by a YAML decoder
// compare equal (numbers as float64).
func normalize(t *testing.T, obj map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// decodeYAML splits a multi-document YAML stream into objects, dropping empty documents.
func decodeYAML(t *testing.T, r io.Reader) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		if len(obj) > 0 {
			out = append(out, &unstructured.Unstructured{Object: normalize(t, obj)})
		}
	}
}

func TestDefaultIsAccepted(t *testing.T) {
	objs := installDefault(t)
	want := []string{
		"ClusterRole flotilla-manager",
		"ClusterRoleBinding flotilla-manager",
		"CustomResourceDefinition packagedeployments.flotilla.dev",
		"CustomResourceDefinition packagesets.flotilla.dev",
		"CustomResourceDefinition packagevariants.flotilla.dev",
		"CustomResourceDefinition repositories.flotilla.dev",
		"CustomResourceDefinition workloadclusters.flotilla.dev",
		"Deployment flotilla-system/flotilla-controller",
		"Namespace flotilla-system",
		"Role flotilla-system/flotilla-leader-election",
		"RoleBinding flotilla-system/flotilla-leader-election",
		"Service flotilla-system/flotilla-controller-metrics",
		"ServiceAccount flotilla-system/flotilla-controller",
	}
	if diff := cmp.Diff(want, ids(objs)); diff != "" {
		t.Errorf("config/default objects (-want +got):\n%s", diff)
	}
	// Every generated CRD is installed: config/crd/kustomization.yaml lists the files by hand.
	bases, err := os.ReadDir(filepath.Join(root(), "config", "crd", "bases"))
	if err != nil {
		t.Fatal(err)
	}
	crds := 0
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			crds++
		}
	}
	if crds != len(bases) {
		t.Errorf("config/default installs %d CRDs, config/crd/bases has %d files: list them all in config/crd/kustomization.yaml", crds, len(bases))
	}
}

func TestSamplesAreAccepted(t *testing.T) {
	installDefault(t)
	objs := inNamespace(kustomize(t, "config/samples"), "samples")
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
	}
	want := map[string]int{"Namespace": 1, "Repository": 3, "WorkloadCluster": 2, "PackageDeployment": 1, "PackageSet": 1}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("config/samples kinds (-want +got):\n%s", diff)
	}
	apply(t, objs)
	expandSets(t, objs)
}

func TestExamplesAreAccepted(t *testing.T) {
	installDefault(t)
	objs := inNamespace(kustomize(t, "examples"), "examples")
	if len(objs) < 10 {
		t.Errorf("examples/ yields %d objects, want the fleet and its PackageSets", len(objs))
	}
	apply(t, objs)
	expandSets(t, objs)
}

// expandSets runs every PackageSet's generator and template over the WorkloadClusters among objs,
// as the controller would, so a CEL expression the schema cannot check still has to work: each set
// must yield targets and no problem.
func expandSets(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	var clusters []generate.Cluster
	var sets []*v1alpha1.PackageSet
	for _, o := range objs {
		switch o.GetKind() {
		case "WorkloadCluster":
			var c v1alpha1.WorkloadCluster
			fromUnstructured(t, o, &c)
			clusters = append(clusters, generate.Cluster{Name: c.Name, Namespace: c.Namespace, Labels: c.Labels, Annotations: c.Annotations, Context: c.Spec.Context})
		case "PackageSet":
			set := &v1alpha1.PackageSet{}
			fromUnstructured(t, o, set)
			sets = append(sets, set)
		}
	}
	for _, set := range sets {
		p := set.Spec.Package
		up := generate.Upstream{Repository: p.Repository.Name, Name: p.Name, Revision: p.Revision, Tag: p.Name + "/" + p.Revision, Commit: strings.Repeat("0", 40), Number: 1}
		res, err := generate.Generate(generate.Inputs{Set: set, Clusters: clusters, Upstream: up})
		if err != nil {
			t.Errorf("PackageSet %s: %v", set.Name, err)
			continue
		}
		if len(res.Targets) == 0 || len(res.Problems) > 0 {
			t.Errorf("PackageSet %s: %d targets, problems %v", set.Name, len(res.Targets), res.Problems)
		}
	}
}

func fromUnstructured(t *testing.T, o *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
		t.Fatalf("%s: %v", id(o), err)
	}
}
