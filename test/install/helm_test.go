package install

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// helmTemplate renders charts/flotilla as `helm template --include-crds -n flotilla-system`.
func helmTemplate(t *testing.T, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	return helmTemplateIn(t, "flotilla-system", values)
}

// helmTemplateIn renders charts/flotilla as `helm template --include-crds -n NAMESPACE`.
func helmTemplateIn(t *testing.T, namespace string, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	chart, err := loader.Load(filepath.Join(root(), "charts", "flotilla"))
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	install.DryRun, install.ClientOnly, install.IncludeCRDs = true, true, true
	install.ReleaseName, install.Namespace = "flotilla", namespace
	rel, err := install.Run(chart, values)
	if err != nil {
		t.Fatalf("render the chart: %v", err)
	}
	return decodeYAML(t, strings.NewReader(rel.Manifest))
}

// TestHelmChartMatchesKustomize: with default values the chart yields config/default's objects,
// field for field, except the Namespace (helm install --create-namespace makes it).
func TestHelmChartMatchesKustomize(t *testing.T) {
	sameObjects(t, "config/default", nil)
}

// sameObjects checks that the chart rendered with values yields the kustomize build of dir,
// field for field, except the Namespace.
func sameObjects(t *testing.T, dir string, values map[string]any) {
	t.Helper()
	want := map[string]*unstructured.Unstructured{}
	for _, o := range kustomize(t, dir) {
		if o.GetKind() != "Namespace" {
			want[id(o)] = o
		}
	}
	got := map[string]*unstructured.Unstructured{}
	for _, o := range helmTemplate(t, values) {
		got[id(o)] = o
	}
	if diff := cmp.Diff(keys(want), keys(got)); diff != "" {
		t.Fatalf("objects (-kustomize %s +helm):\n%s", dir, diff)
	}
	for k, w := range want {
		if diff := cmp.Diff(w.Object, got[k].Object); diff != "" {
			if len(diff) > 4000 {
				diff = diff[:4000] + "\n..."
			}
			t.Errorf("%s differs (-kustomize %s +helm); run `make helm`:\n%s", k, dir, diff)
		}
	}
}

func TestHelmValues(t *testing.T) {
	objs := helmTemplate(t, map[string]any{
		"image":     map[string]any{"repository": "registry.example.com/flotilla", "tag": "v1.2.3"},
		"replicas":  2,
		"args":      []any{"controller", "--leader-elect", "--zap-log-level=debug"},
		"resources": map[string]any{"limits": map[string]any{"memory": "1Gi"}},
	})
	var dep *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			dep = o
		}
	}
	if dep == nil {
		t.Fatal("the chart has no Deployment")
	}
	replicas, _, _ := unstructured.NestedFloat64(dep.Object, "spec", "replicas")
	c := containers(t, dep)[0]
	got := map[string]any{"replicas": replicas, "image": c["image"], "args": c["args"], "resources": c["resources"]}
	want := map[string]any{
		"replicas": float64(2),
		"image":    "registry.example.com/flotilla:v1.2.3",
		"args":     []any{"controller", "--leader-elect", "--zap-log-level=debug"},
		// Helm merges maps into the defaults (lists it replaces).
		"resources": map[string]any{
			"limits":   map[string]any{"cpu": "1", "memory": "1Gi"},
			"requests": map[string]any{"cpu": "100m", "memory": "128Mi"},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Deployment with values (-want +got):\n%s", diff)
	}
}

func keys(m map[string]*unstructured.Unstructured) []string {
	return slices.Sorted(maps.Keys(m))
}

func containers(t *testing.T, dep *unstructured.Unstructured) []map[string]any {
	t.Helper()
	cs, _, err := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	if err != nil || len(cs) == 0 {
		t.Fatalf("%s has no containers: %v", id(dep), err)
	}
	var out []map[string]any
	for _, c := range cs {
		out = append(out, c.(map[string]any))
	}
	return out
}
