package specialize

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestInject(t *testing.T) {
	const cluster = `apiVersion: flotilla.dev/v1alpha1
kind: WorkloadCluster
metadata:
  name: target
  annotations:
    kpt.dev/config-injection: %s
spec:
  context: {env: default}
`
	const endpoints = `apiVersion: v1
kind: ConfigMap
metadata:
  name: endpoints
  annotations:
    kpt.dev/config-injection: optional
data:
  db: db.default.example
`
	edge01 := workloadCluster("edge01", "prod", "us-west")
	usEast := Injection{Kind: "ConfigMap", Name: "us-east1-endpoints", Object: map[string]any{
		"apiVersion": "v1", "data": map[string]any{"db": "db.us-east1.example"},
	}}

	tests := []struct {
		name       string
		file       string
		injections []Injection
		want       string // expected file, when no error
		wantErr    []string
	}{{
		name:       "required with a match takes its spec",
		file:       strings.Replace(cluster, "%s", "required", 1),
		injections: []Injection{usEast, edge01},
		want: `apiVersion: flotilla.dev/v1alpha1
kind: WorkloadCluster
metadata:
  name: target
  annotations:
    kpt.dev/config-injection: required
    kpt.dev/injected-resource: edge01
spec:
  context:
    env: prod
    region: us-west
  repository:
    name: edge01
`,
	}, {
		name:    "required without a match",
		file:    strings.Replace(cluster, "%s", "required", 1),
		wantErr: []string{"cluster.yaml", "WorkloadCluster/target", "requires config injection", "flotilla.dev/v1alpha1 WorkloadCluster"},
	}, {
		name: "required with only another apiVersion",
		file: strings.Replace(cluster, "%s", "required", 1),
		injections: []Injection{{Kind: "WorkloadCluster", Name: "edge01", Object: map[string]any{
			"apiVersion": "infra.nephio.org/v1alpha1", "spec": map[string]any{},
		}}},
		wantErr: []string{"WorkloadCluster/target", "requires config injection"},
	}, {
		name: "optional without a match keeps the blueprint's defaults",
		file: endpoints,
		want: endpoints,
	}, {
		name:       "optional ConfigMap with a match takes its data",
		file:       endpoints,
		injections: []Injection{edge01, usEast},
		want: `apiVersion: v1
kind: ConfigMap
metadata:
  name: endpoints
  annotations:
    kpt.dev/config-injection: optional
    kpt.dev/injected-resource: us-east1-endpoints
data:
  db: db.us-east1.example
`,
	}, {
		name:    "invalid annotation value",
		file:    strings.Replace(cluster, "%s", "always", 1),
		wantErr: []string{"cluster.yaml", "WorkloadCluster/target", `"always"`, "required or optional"},
	}, {
		name:       "two injection points of the same kind and name",
		file:       strings.Replace(cluster, "%s", "required", 1) + "---\n" + strings.Replace(cluster, "%s", "optional", 1),
		injections: []Injection{edge01},
		wantErr:    []string{"cluster.yaml", "second injection point named WorkloadCluster/target"},
	}, {
		name: "selected object without spec",
		file: strings.Replace(cluster, "%s", "required", 1),
		injections: []Injection{{Kind: "WorkloadCluster", Object: map[string]any{
			"metadata": map[string]any{"name": "bare"},
		}}},
		wantErr: []string{"WorkloadCluster/target", "WorkloadCluster bare has no spec"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items, ok, err := readKRMFile("cluster.yaml", []byte(tt.file))
			if err != nil || !ok {
				t.Fatalf("parse: ok=%v err=%v", ok, err)
			}
			err = inject(items, tt.injections)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatal("inject succeeded, want an error")
				}
				for _, want := range tt.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not mention %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := writeResources(items)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got["cluster.yaml"])); diff != "" {
				t.Errorf("cluster.yaml (-want +got):\n%s", diff)
			}
		})
	}
}
