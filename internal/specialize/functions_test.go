package specialize

import (
	"context"
	"testing"
)

// TestBuiltinFunctions runs each built-in catalog function from a package's
// Kptfile pipeline; the golden output is what the function's documentation
// says it produces for that input.
func TestBuiltinFunctions(t *testing.T) {
	for _, name := range BuiltinFunctions() {
		t.Run(name, func(t *testing.T) {
			dir := "testdata/functions/" + name
			got, err := Render(context.Background(), Request{
				Blueprint:   readPackageDir(t, dir+"/in"),
				Name:        "example",
				PackagePath: "example",
			})
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, dir+"/out", got)
		})
	}
}

func TestLookupBuiltin(t *testing.T) {
	tests := []struct {
		image string
		want  bool
	}{
		{"gcr.io/kpt-fn/set-namespace:v0.4.1", true},
		{"ghcr.io/kptdev/krm-functions-catalog/set-namespace", true},
		{"ghcr.io/kptdev/krm-functions-catalog/starlark@sha256:0123", true},
		{"apply-setters:v0.2", true},
		{"gcr.io/kpt-fn/set-image:v0.1.1", false},
		{"registry.example/set-labels:v1", false},
		{"gcr.io/kpt-fn/nested/set-labels:v1", false},
	}
	for _, tt := range tests {
		if _, _, got := lookupBuiltin(tt.image); got != tt.want {
			t.Errorf("lookupBuiltin(%q) = %v, want %v", tt.image, got, tt.want)
		}
	}
}
