package specialize

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// edit returns a copy of files with old replaced by repl in file; it fails
// the test when old is not there, so edits cannot silently miss.
func edit(t *testing.T, files map[string][]byte, file, old, repl string) map[string][]byte {
	t.Helper()
	if !strings.Contains(string(files[file]), old) {
		t.Fatalf("%s does not contain %q:\n%s", file, old, files[file])
	}
	out := maps.Clone(files)
	out[file] = []byte(strings.ReplaceAll(string(files[file]), old, repl))
	return out
}

func without(files map[string][]byte, file string) map[string][]byte {
	out := maps.Clone(files)
	delete(out, file)
	return out
}

// TestMerge3BlueprintBump is the user story: a variant is rendered from
// blueprint v6, someone edits it in the cluster's repository, then the
// blueprint moves to v7 (new image registry, a new port, a new README).
func TestMerge3BlueprintBump(t *testing.T) {
	layers := []Layer{upfDefaults, upfEnvProd}
	v6 := upfRequest(t, "edge02", "prod", "us-east", layers...)
	base, err := Render(context.Background(), v6)
	if err != nil {
		t.Fatal(err)
	}
	v7 := upfRequest(t, "edge02", "prod", "us-east", layers...)
	v7.Upstream.Ref, v7.Upstream.Commit = "free5gc-upf/v7", "7777777777777777777777777777777777777777"
	v7.Blueprint = edit(t, v7.Blueprint, "deployment.yaml", "registry.example/free5gc/upf:", "registry.example/free5gc-ng/upf:")
	v7.Blueprint = edit(t, v7.Blueprint, "deployment.yaml", "        resources:", "        ports:\n        - containerPort: 8805\n        resources:")
	v7.Blueprint = edit(t, v7.Blueprint, "README.md", "The UPF blueprint.", "The UPF blueprint, now from free5gc-ng.")
	theirs, err := Render(context.Background(), v7)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("no local edits: the new render as is", func(t *testing.T) {
		got, err := Merge3(base, base, theirs)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(asText(theirs), asText(got)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})

	t.Run("hand edits survive", func(t *testing.T) {
		ours := edit(t, base, "deployment.yaml", "replicas: 3", "replicas: 7")
		ours = edit(t, ours, "deployment.yaml", "        resources:", "        env:\n        - name: GOMAXPROCS\n          value: \"2\"\n        resources:")
		ours = edit(t, ours, "deployment.yaml", "${namespace}\n  labels:\n", "${namespace}\n  labels:\n    team: core # added by hand\n")
		ours = edit(t, ours, "Kptfile", "resource-merge", "fast-forward") // flotilla's own file: reset
		got, err := Merge3(base, ours, theirs)
		if err != nil {
			t.Fatal(err)
		}
		// kyaml's merge appends fields new in the render (ports) after the
		// existing ones, and keeps the downstream's order otherwise.
		want := edit(t, theirs, "deployment.yaml", "replicas: 3", "replicas: 7")
		want = edit(t, want, "deployment.yaml", "        ports:\n        - containerPort: 8805\n", "")
		want = edit(t, want, "deployment.yaml", "        resources:", "        env:\n        - name: GOMAXPROCS\n          value: \"2\"\n        resources:")
		want = edit(t, want, "deployment.yaml", "${namespace}\n  labels:\n", "${namespace}\n  labels:\n    team: core # added by hand\n")
		want = edit(t, want, "deployment.yaml", "cpu: \"2\" # kpt-set: ${cpu}\n", "cpu: \"2\" # kpt-set: ${cpu}\n        ports:\n        - containerPort: 8805\n")
		if diff := cmp.Diff(asText(want), asText(got)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})

	t.Run("conflicting edit", func(t *testing.T) {
		ours := edit(t, base, "deployment.yaml", "registry.example/free5gc/upf:v3.4.0", "registry.example/free5gc/upf:v3.4.0-hotfix")
		ours = edit(t, ours, "README.md", "The UPF blueprint.", "Our UPF.")
		_, err := Merge3(base, ours, theirs)
		var c *Conflict
		if !errors.As(err, &c) {
			t.Fatalf("err = %v, want a *Conflict", err)
		}
		want := Conflict{
			File: "README.md", Ours: "(edited)", Theirs: "(edited)", More: 1,
		}
		if diff := cmp.Diff(want, *c); diff != "" {
			t.Errorf("first conflict (-want +got):\n%s", diff)
		}
		ours = edit(t, ours, "README.md", "Our UPF.", "The UPF blueprint.")
		_, err = Merge3(base, ours, theirs)
		if !errors.As(err, &c) {
			t.Fatalf("err = %v, want a *Conflict", err)
		}
		want = Conflict{
			File: "deployment.yaml", Resource: "Deployment/free5gc-prod/upf",
			Field: "spec.template.spec.containers[name=upf].image",
			Ours:  `"registry.example/free5gc/upf:v3.4.0-hotfix"`, Theirs: `"registry.example/free5gc-ng/upf:v3.4.0"`,
		}
		if diff := cmp.Diff(want, *c); diff != "" {
			t.Errorf("conflict (-want +got):\n%s", diff)
		}
		for _, s := range []string{"deployment.yaml", "Deployment/free5gc-prod/upf", "spec.template.spec.containers[name=upf].image"} {
			if !strings.Contains(c.Error(), s) {
				t.Errorf("message %q does not name %s", c.Error(), s)
			}
		}
	})

	t.Run("resource deleted downstream stays deleted", func(t *testing.T) {
		got, err := Merge3(base, without(base, "cluster.yaml"), theirs)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(asText(without(theirs, "cluster.yaml")), asText(got)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})

	t.Run("resource the new render removes", func(t *testing.T) {
		gone := without(theirs, "cluster.yaml")
		got, err := Merge3(base, base, gone)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := got["cluster.yaml"]; ok {
			t.Error("cluster.yaml kept though the new render removed it and nobody edited it")
		}
		ours := edit(t, base, "cluster.yaml", "name: edge02\n", "name: edge02\n  extra: true\n")
		_, err = Merge3(base, ours, gone)
		var c *Conflict
		if !errors.As(err, &c) || c.File != "cluster.yaml" || c.Resource != "WorkloadCluster/target" || c.Field != "" {
			t.Fatalf("err = %v, want a conflict on WorkloadCluster/target in cluster.yaml", err)
		}
	})
}

func TestMerge3Fields(t *testing.T) {
	const base = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  template:
    spec:
      containers:
      - name: web
        image: web:1
      - name: sidecar
        image: proxy:1
      tolerations:
      - key: a
`
	tests := []struct {
		name         string
		ours, theirs string
		want         string
		wantField    string
	}{{
		name:   "field deleted downstream stays deleted",
		ours:   strings.Replace(base, "  replicas: 1\n", "", 1),
		theirs: strings.Replace(base, "web:1", "web:2", 1),
		want:   strings.Replace(strings.Replace(base, "  replicas: 1\n", "", 1), "web:1", "web:2", 1),
	}, {
		name:      "field deleted downstream, changed by the render",
		ours:      strings.Replace(base, "  replicas: 1\n", "", 1),
		theirs:    strings.Replace(base, "replicas: 1", "replicas: 2", 1),
		wantField: "spec.replicas",
	}, {
		name:   "element removed by the render, untouched downstream",
		ours:   strings.Replace(base, "replicas: 1", "replicas: 4", 1),
		theirs: strings.Replace(base, "      - name: sidecar\n        image: proxy:1\n", "", 1),
		want:   strings.Replace(strings.Replace(base, "      - name: sidecar\n        image: proxy:1\n", "", 1), "replicas: 1", "replicas: 4", 1),
	}, {
		name:      "element removed by the render, edited downstream",
		ours:      strings.Replace(base, "proxy:1", "proxy:2", 1),
		theirs:    strings.Replace(base, "      - name: sidecar\n        image: proxy:1\n", "", 1),
		wantField: "spec.template.spec.containers[name=sidecar].image",
	}, {
		name:      "list without merge key changed on both sides",
		ours:      strings.Replace(base, "key: a", "key: b", 1),
		theirs:    strings.Replace(base, "key: a", "key: c", 1),
		wantField: "spec.template.spec.tolerations",
	}, {
		name:   "same change on both sides",
		ours:   strings.Replace(base, "web:1", "web:2", 1),
		theirs: strings.Replace(base, "web:1", "web:2", 1),
		want:   strings.Replace(base, "web:1", "web:2", 1),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Merge3(
				map[string][]byte{"d.yaml": []byte(base)},
				map[string][]byte{"d.yaml": []byte(tt.ours)},
				map[string][]byte{"d.yaml": []byte(tt.theirs)})
			if tt.wantField != "" {
				var c *Conflict
				if !errors.As(err, &c) {
					t.Fatalf("err = %v, want a conflict on %s", err, tt.wantField)
				}
				if c.File != "d.yaml" || c.Resource != "Deployment/web" || c.Field != tt.wantField {
					t.Errorf("conflict on %s %s %s, want d.yaml Deployment/web %s", c.File, c.Resource, c.Field, tt.wantField)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got["d.yaml"])); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestMerge3Files(t *testing.T) {
	b, o, t2 := []byte("base\n"), []byte("ours\n"), []byte("theirs\n")
	tests := []struct {
		name               string
		base, ours, theirs map[string][]byte
		want               map[string][]byte
		wantConflictOnFile string
	}{
		{"only ours changed", map[string][]byte{"R": b}, map[string][]byte{"R": o}, map[string][]byte{"R": b}, map[string][]byte{"R": o}, ""},
		{"only theirs changed", map[string][]byte{"R": b}, map[string][]byte{"R": b, "x": b}, map[string][]byte{"R": t2}, map[string][]byte{"R": t2, "x": b}, ""},
		{"deleted downstream", map[string][]byte{"R": b}, map[string][]byte{"x": b}, map[string][]byte{"R": b}, map[string][]byte{"x": b}, ""},
		{"deleted by the render", map[string][]byte{"R": b}, map[string][]byte{"R": b, "x": b}, map[string][]byte{}, map[string][]byte{"x": b}, ""},
		{"both changed", map[string][]byte{"R": b}, map[string][]byte{"R": o}, map[string][]byte{"R": t2}, nil, "R"},
		{"edited downstream, deleted by the render", map[string][]byte{"R": b}, map[string][]byte{"R": o}, map[string][]byte{}, nil, "R"},
		{"Kptfile is flotilla's", map[string][]byte{"Kptfile": b}, map[string][]byte{"Kptfile": o}, map[string][]byte{"Kptfile": t2}, map[string][]byte{"Kptfile": t2}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Merge3(tt.base, tt.ours, tt.theirs)
			if tt.wantConflictOnFile != "" {
				var c *Conflict
				if !errors.As(err, &c) || c.File != tt.wantConflictOnFile {
					t.Fatalf("err = %v, want a conflict on %s", err, tt.wantConflictOnFile)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(asText(tt.want), asText(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
