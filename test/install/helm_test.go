package install

import (
	"fmt"
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
	manifest, err := helmRender(t, namespace, values)
	if err != nil {
		t.Fatalf("render the chart: %v", err)
	}
	return decodeYAML(t, strings.NewReader(manifest))
}

// helmRender renders charts/flotilla into namespace, as `helm template` would, returning the
// manifest or the error helm reports.
func helmRender(t *testing.T, namespace string, values map[string]any) (string, error) {
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
		return "", err
	}
	return rel.Manifest, nil
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

// TestHelmShards: the value shards makes one controller Deployment per shard, each selecting only
// its own pods and running the default args plus --watch-label-selector for its shard, and leaves
// every other object as the default install has it; names that are not DNS labels, a name given
// twice and an empty shardLabel fail the render with a message saying what to fix.
func TestHelmShards(t *testing.T) {
	defaults := map[string]*unstructured.Unstructured{}
	for _, o := range helmTemplate(t, nil) {
		defaults[id(o)] = o
	}
	def := find(t, helmTemplate(t, nil), "Deployment", "flotilla-controller")
	defaultArgs := containers(t, def)[0]["args"].([]any)

	for _, tc := range []struct {
		name   string
		values map[string]any
		label  string
		more   []any // args after the default ones, before the shard's
	}{
		{"shards [a, edge-2]", map[string]any{"shards": []any{"a", "edge-2"}}, "shard", nil},
		{"a number for a name", map[string]any{"shards": []any{"a", 2}}, "shard", nil},
		{"shardLabel tier", map[string]any{"shards": []any{"a", "edge-2"}, "shardLabel": "tier"}, "tier", nil},
		{"with watchNamespaces", map[string]any{"shards": []any{"a", "edge-2"}, "watchNamespaces": []any{"fleet"}}, "shard", []any{"--watch-namespaces=fleet"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := helmTemplate(t, tc.values)
			var deps []string
			for _, o := range objs {
				if o.GetKind() == "Deployment" {
					deps = append(deps, o.GetName())
					continue
				}
				if _, watched := tc.values["watchNamespaces"]; !watched && !cmp.Equal(o.Object, defaults[id(o)].Object) {
					t.Errorf("%s differs from the default install:\n%s", id(o), cmp.Diff(defaults[id(o)].Object, o.Object))
				}
			}
			var shards, want []string
			for _, s := range tc.values["shards"].([]any) {
				shards = append(shards, fmt.Sprint(s))
				want = append(want, "flotilla-controller-"+fmt.Sprint(s))
			}
			if diff := cmp.Diff(want, deps); diff != "" {
				t.Fatalf("Deployments (-want +got):\n%s", diff)
			}
			for _, shard := range shards {
				dep := find(t, objs, "Deployment", "flotilla-controller-"+shard)
				for _, field := range [][]string{{"metadata", "labels"}, {"spec", "selector", "matchLabels"}, {"spec", "template", "metadata", "labels"}} {
					labels, _, _ := unstructured.NestedStringMap(dep.Object, field...)
					if labels["flotilla.dev/shard"] != shard || labels["app.kubernetes.io/name"] != "flotilla" {
						t.Errorf("%s %s = %v; want flotilla.dev/shard=%s with the default labels", dep.GetName(), strings.Join(field, "."), labels, shard)
					}
				}
				want := append(append(append([]any{}, defaultArgs...), tc.more...), "--watch-label-selector="+tc.label+"="+shard)
				if diff := cmp.Diff(want, containers(t, dep)[0]["args"]); diff != "" {
					t.Errorf("%s args (-want +got):\n%s", dep.GetName(), diff)
				}
			}
		})
	}

	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"upper case", map[string]any{"shards": []any{"Edge"}}, `"Edge" is not a shard name`},
		{"empty name", map[string]any{"shards": []any{"a", ""}}, `"" is not a shard name`},
		{"too long", map[string]any{"shards": []any{strings.Repeat("a", 41)}}, "is not a shard name: use lower-case letters, digits and '-', at most 40"},
		{"twice", map[string]any{"shards": []any{"a", "b", "a"}}, "each shard may be named only once"},
		{"no label", map[string]any{"shards": []any{"a"}, "shardLabel": ""}, "shardLabel is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := helmRender(t, "flotilla-system", tc.values)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("render with %v: %v; want an error saying %q", tc.values, err, tc.want)
			}
		})
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
