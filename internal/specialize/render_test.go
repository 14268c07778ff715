package specialize

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// workloadCluster is the in-cluster object injected into the blueprint's
// WorkloadCluster injection point.
func workloadCluster(name, env, region string) Injection {
	return Injection{Kind: "WorkloadCluster", Name: name, Object: map[string]any{
		"apiVersion": "flotilla.dev/v1alpha1",
		"kind":       "WorkloadCluster",
		"metadata":   map[string]any{"name": name, "namespace": "fleet"},
		"spec": map[string]any{
			"repository": map[string]any{"name": name},
			"context":    map[string]any{"env": env, "region": region},
		},
	}}
}

// upfRequest renders the upf blueprint for one target cluster.
func upfRequest(t *testing.T, cluster, env, region string, layers ...Layer) Request {
	values, _ := MergeValues(layers)
	return Request{
		Blueprint: readPackageDir(t, "testdata/upf"),
		Upstream: Upstream{
			Repo: "http://git.example/catalog.git", Directory: "/free5gc-upf",
			Ref: "free5gc-upf/v6", Commit: "2f0c1e5d9a7b3c4d5e6f708192a3b4c5d6e7f809",
		},
		Name:        "free5gc-upf",
		PackagePath: "free5gc-upf",
		Values:      values,
		Injections:  []Injection{workloadCluster(cluster, env, region)},
	}
}

// TestRenderTargets renders the blueprint for three clusters whose values
// come from different environment and region layers: each variant follows
// its hierarchy, and rendering is byte-for-byte repeatable.
func TestRenderTargets(t *testing.T) {
	targets := []struct {
		cluster, env, region string
		layers               []Layer
		want                 []string // in deployment.yaml, besides the golden
	}{
		{"edge01", "dev", "us-west", []Layer{upfDefaults, upfEnvDev, upfRegionUSW},
			[]string{"namespace: free5gc ", "replicas: 1 ", "upf:v3.4.1", "- --pprof"}},
		{"edge02", "prod", "us-east", []Layer{upfDefaults, upfEnvProd}, // no us-east layer: skipped
			[]string{"namespace: free5gc-prod ", "replicas: 3 ", "upf:v3.4.0", "- --log-level=info"}},
		{"edge03", "prod", "us-west", []Layer{upfDefaults, upfEnvProd, upfRegionUSW,
			{Source: "inline", Values: map[string]string{"replicas": "5"}}},
			[]string{"namespace: free5gc-prod ", "replicas: 5 ", "upf:v3.4.1", `cpu: "2"`}},
	}
	rendered := map[string]map[string][]byte{}
	for _, tt := range targets {
		t.Run(tt.cluster, func(t *testing.T) {
			req := upfRequest(t, tt.cluster, tt.env, tt.region, tt.layers...)
			got, err := Render(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			again, err := Render(context.Background(), upfRequest(t, tt.cluster, tt.env, tt.region, tt.layers...))
			if err != nil {
				t.Fatal(err)
			}
			for name := range got {
				if !bytes.Equal(got[name], again[name]) {
					t.Errorf("%s differs between two renders of the same request", name)
				}
			}
			for _, want := range tt.want {
				if !strings.Contains(string(got["deployment.yaml"]), want) {
					t.Errorf("deployment.yaml lacks %q:\n%s", want, got["deployment.yaml"])
				}
			}
			checkGolden(t, "testdata/render/"+tt.cluster, got)
			rendered[tt.cluster] = got
		})
	}
	if len(rendered) == 3 {
		a, b, c := rendered["edge01"]["deployment.yaml"], rendered["edge02"]["deployment.yaml"], rendered["edge03"]["deployment.yaml"]
		if bytes.Equal(a, b) || bytes.Equal(b, c) || bytes.Equal(a, c) {
			t.Error("the three targets should get three different deployments")
		}
	}
}

func TestRenderErrors(t *testing.T) {
	kptfile := func(mutator string) string {
		return "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: bp\npipeline:\n  mutators:\n" + mutator
	}
	tests := []struct {
		name    string
		files   map[string]string
		values  map[string]string
		exec    ExecPolicy
		wantErr []string
	}{{
		name:    "no Kptfile",
		files:   map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"},
		wantErr: []string{"no Kptfile at the package root"},
	}, {
		name:    "image function that is not built in",
		files:   map[string]string{"Kptfile": kptfile("  - image: gcr.io/kpt-fn/set-image:v0.1.1\n")},
		wantErr: []string{`"gcr.io/kpt-fn/set-image:v0.1.1"`, "no container runtime is configured", "set-namespace"},
	}, {
		name:    "catalog name from another registry is not the built-in",
		files:   map[string]string{"Kptfile": kptfile("  - image: registry.example/fns/set-labels:v1\n    name: labels\n")},
		wantErr: []string{`"labels" (registry.example/fns/set-labels:v1)`, "no container runtime is configured"},
	}, {
		name:    "exec functions refused by default",
		files:   map[string]string{"Kptfile": kptfile("  - exec: /bin/cat\n")},
		wantErr: []string{`"/bin/cat"`, "not allowed"},
	}, {
		name:    "relative exec path",
		files:   map[string]string{"Kptfile": kptfile("  - exec: ./fn\n")},
		exec:    ExecPolicy{Allowed: []string{"/fn"}},
		wantErr: []string{`"./fn"`, "must be absolute"},
	}, {
		name:    "reserved value name",
		files:   map[string]string{"Kptfile": kptfile("")},
		values:  map[string]string{"package-path": "x"},
		wantErr: []string{`value "package-path" is reserved`},
	}, {
		name: "failing starlark validator",
		files: map[string]string{
			"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: bp\npipeline:\n  validators:\n" +
				"  - image: ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5\n    configMap:\n      source: fail('no replicas set')\n",
		},
		wantErr: []string{"validator", "no replicas set"},
	}, {
		// A few anchors, each aliased ten times by the next: 10^9 values once expanded.
		name: "starlark over YAML aliases that expand without end",
		files: map[string]string{
			"Kptfile": kptfile(starlarkFn("pass")),
			"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n" + aliasLevels(9),
		},
		wantErr: []string{"more than 4000000 values"},
	}, {
		name:    "starlark output holding itself",
		files:   map[string]string{"Kptfile": kptfile(starlarkFn("l = []", "l.append(l)", `ctx.resource_list["items"].append({"l": l})`))},
		wantErr: []string{"nested more than 1000 deep"},
	}, {
		name:    "starlark output doubling at each level",
		files:   map[string]string{"Kptfile": kptfile(starlarkFn("l = [1]", "for i in range(40):", "  l = [l, l]", `ctx.resource_list["items"].append({"l": l})`))},
		wantErr: []string{"more than 4000000 values"},
	}, {
		name:    "starlark printing without end",
		files:   map[string]string{"Kptfile": kptfile(starlarkFn("for i in range(100000):", `  print("x" * 100)`, `fail("stop")`))},
		wantErr: []string{"stop", "bytes more)"},
	}, {
		name: "setter without a value to derive",
		files: map[string]string{
			"Kptfile": kptfile(""),
			"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  url: unset # kpt-set: ${scheme}://${host}\n",
		},
		values:  map[string]string{"host": "a.example"},
		wantErr: []string{"cm.yaml", "ConfigMap/x", "${scheme}", "must be provided"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string][]byte{}
			for k, v := range tt.files {
				files[k] = []byte(v)
			}
			_, err := Render(context.Background(), Request{Blueprint: files, Name: "pkg", Values: tt.values, Exec: tt.exec})
			if err == nil {
				t.Fatal("Render succeeded, want an error")
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %.2000q does not mention %q", err, want)
				}
			}
			if len(err.Error()) > 8<<10 {
				t.Errorf("error of %d bytes, want at most 8 KiB", len(err.Error()))
			}
		})
	}
}

// starlarkFn is a Kptfile mutator running the source lines with the built-in starlark.
func starlarkFn(lines ...string) string {
	return "  - image: ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5\n    configMap:\n      source: |\n        " + strings.Join(lines, "\n        ") + "\n"
}

// aliasLevels is YAML data keys l1..ln, each a list aliasing the one before ten times.
func aliasLevels(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 10), ", "))
	}
	return b.String()
}

// TestRenderKptfile checks the files flotilla owns when the blueprint
// already has them: a Kptfile that records its own upstream (the blueprint
// was itself cloned) and a package-context.yaml from kpt pkg init.
func TestRenderKptfile(t *testing.T) {
	blueprint := map[string][]byte{
		"Kptfile": []byte(`apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: base-upf # the blueprint's own name
upstream:
  type: git
  git:
    repo: http://git.example/upstream.git
    directory: /upf
    ref: main
  updateStrategy: fast-forward
info:
  description: UPF
`),
		"package-context.yaml": []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: kptfile.kpt.dev
  annotations:
    config.kubernetes.io/local-config: "true"
data:
  name: example
`),
	}
	got, err := Render(context.Background(), Request{
		Blueprint: blueprint,
		Upstream:  Upstream{Repo: "http://git.example/catalog.git", Directory: "/free5gc-upf", Ref: "free5gc-upf/v6", Commit: "abc123"},
		Name:      "upf-edge01", PackagePath: "clusters/edge01/upf-edge01",
		Values: map[string]string{"replicas": "2", "enabled": "true"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"Kptfile": `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: upf-edge01 # the blueprint's own name
upstream:
  type: git
  git:
    repo: http://git.example/catalog.git
    directory: /free5gc-upf
    ref: free5gc-upf/v6
  updateStrategy: resource-merge
upstreamLock:
  type: git
  git:
    repo: http://git.example/catalog.git
    directory: /free5gc-upf
    ref: free5gc-upf/v6
    commit: abc123
info:
  description: UPF
`,
		"package-context.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: kptfile.kpt.dev
  annotations:
    config.kubernetes.io/local-config: "true"
data:
  enabled: "true"
  name: upf-edge01
  package-path: clusters/edge01/upf-edge01
  replicas: "2"
`,
	}
	if diff := cmp.Diff(want, asText(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// An upstream URL carrying credentials is refused, not written into the committed Kptfile (nor
// quietly rewritten: the Repository that holds it must be fixed).
func TestRenderRefusesUpstreamWithCredentials(t *testing.T) {
	blueprint := map[string][]byte{"Kptfile": []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: example\n")}
	for _, repo := range []string{"http://flotilla:s3cret@git.example/catalog.git", "git:s3cret@git.example:catalog.git", "https://git.example/catalog.git?token=s3cret"} {
		_, err := Render(context.Background(), Request{
			Blueprint: blueprint, Name: "upf-edge01", PackagePath: "upf-edge01",
			Upstream: Upstream{Repo: repo, Directory: "/free5gc-upf", Ref: "free5gc-upf/v6", Commit: "abc123"},
		})
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: want a refusal that does not repeat the credential, got %v", repo, err)
		}
	}
}
