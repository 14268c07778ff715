package specialize

import (
	"bytes"
	"context"
	"testing"
)

// FuzzMergeValues: the last layer that sets a key wins, and origin names it.
func FuzzMergeValues(f *testing.F) {
	f.Add("replicas", "1", "3", true)
	f.Add("", "", "x", false)
	f.Fuzz(func(t *testing.T, key, low, high string, both bool) {
		layers := []Layer{{Source: "low", Values: map[string]string{key: low}}}
		if both {
			layers = append(layers, Layer{Source: "high", Values: map[string]string{key: high}})
		}
		values, origin := MergeValues(layers)
		want, from := low, "low"
		if both {
			want, from = high, "high"
		}
		if values[key] != want || origin[key] != from {
			t.Fatalf("MergeValues: %q=%q from %q, want %q from %q", key, values[key], origin[key], want, from)
		}
	})
}

// FuzzSetters: any setter value renders (or fails with an error) deterministically.
func FuzzSetters(f *testing.F) {
	f.Add("3", "upf:1.0")
	f.Add("[a, b]", "x: y")
	f.Add("", "'quoted'")
	f.Fuzz(func(t *testing.T, replicas, image string) {
		req := Request{
			Blueprint: map[string][]byte{
				"Kptfile":         []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: upf\n"),
				"deployment.yaml": []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: upf\nspec:\n  replicas: 1 # kpt-set: ${replicas}\n  template:\n    spec:\n      containers:\n      - name: upf\n        image: upf:1.0 # kpt-set: ${image}\n"),
			},
			Upstream:    Upstream{Repo: "https://git.example/catalog.git", Directory: "/upf", Ref: "upf/v1", Commit: "0123456789abcdef0123456789abcdef01234567"},
			Name:        "upf",
			PackagePath: "upf",
			Values:      map[string]string{"replicas": replicas, "image": image},
		}
		first, err1 := Render(context.Background(), req)
		second, err2 := Render(context.Background(), req)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("errors differ: %v / %v", err1, err2)
		}
		for name, b := range first {
			if !bytes.Equal(b, second[name]) {
				t.Fatalf("%s differs between two renders", name)
			}
		}
	})
}
