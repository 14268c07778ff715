package generate

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// FuzzDeploymentName: any name comes out at most 63 characters, the same every time, unchanged
// when short, and valid whenever the input was a valid name.
func FuzzDeploymentName(f *testing.F) {
	for _, s := range []string{"upf-edge01", "", "a.b", "UPPER", string(make([]byte, 100))} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := DeploymentName(s)
		if len(got) > 63 || got != DeploymentName(s) {
			t.Fatalf("DeploymentName(%q) = %q", s, got)
		}
		if len(s) <= 63 && got != s {
			t.Fatalf("short name changed: %q → %q", s, got)
		}
		if len(validation.IsDNS1123Subdomain(s)) == 0 && len(validation.IsDNS1123Subdomain(got)) > 0 {
			t.Fatalf("valid %q became invalid %q", s, got)
		}
	})
}
