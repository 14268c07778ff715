package generate_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/flotilla-dev/flotilla/internal/generate"
)

func TestDeploymentName(t *testing.T) {
	exactly63 := strings.Repeat("a", 63)
	long := "upf-" + strings.Repeat("x", 60) + "-edge01"
	tests := []struct {
		name, in, want string
	}{
		{"short names are kept", "upf-edge01", "upf-edge01"},
		{"63 characters are kept", exactly63, exactly63},
		{"longer names are cut and hashed", long, "upf-" + strings.Repeat("x", 50) + "-5c13842a"},
		{"64 characters are cut", strings.Repeat("a", 64), strings.Repeat("a", 54) + "-ffe054fe"},
		{"no separator before the hash", strings.Repeat("a", 50) + "-..-" + strings.Repeat("b", 20), strings.Repeat("a", 50) + "-d52f9ba5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := generate.DeploymentName(tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DeploymentName(%q) (-want +got):\n%s", tt.in, diff)
			}
			if len(got) > 63 {
				t.Errorf("DeploymentName(%q) = %q: %d characters, want at most 63", tt.in, got, len(got))
			}
			if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
				t.Errorf("DeploymentName(%q) = %q: invalid: %v", tt.in, got, errs)
			}
			if again := generate.DeploymentName(tt.in); again != got {
				t.Errorf("DeploymentName(%q) is not stable: %q, then %q", tt.in, got, again)
			}
		})
	}
}

// TestDeploymentNameDistinct: long names that differ only after the cut stay distinct.
func TestDeploymentNameDistinct(t *testing.T) {
	prefix := strings.Repeat("p", 70) + "-"
	seen := map[string]string{}
	for _, suffix := range []string{"edge01", "edge02", "edge03", "core01", "a", "b"} {
		in := prefix + suffix
		got := generate.DeploymentName(in)
		if other, ok := seen[got]; ok {
			t.Errorf("DeploymentName(%q) = DeploymentName(%q) = %q", in, other, got)
		}
		seen[got] = in
	}
}
