package fleet_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/fleet"
)

// A deployment asks for the revision the published revision carries for it, from a git tag or an
// OCI tag; one it does not carry, or carries with a tag that names no revision, asks for nothing.
// The deployment itself is not changed.
func TestAtPublished(t *testing.T) {
	published := &v1alpha1.DeployedPackagesStatus{Packages: []v1alpha1.PublishedPin{
		{Deployment: "edge01-upf", Tag: "nfs/free5gc-upf/v12"},
		{Deployment: "edge01-smf", Tag: "smf:v3"},
		{Deployment: "edge01-odd", Tag: "not-a-revision"},
	}}
	for _, tc := range []struct {
		deployment string
		published  *v1alpha1.DeployedPackagesStatus
		want       string // "": nil
	}{
		{"edge01-upf", published, "v12"},
		{"edge01-smf", published, "v3"},
		{"edge01-odd", published, ""},
		{"edge01-new", published, ""},
		{"edge01-upf", nil, ""},
	} {
		pd := &v1alpha1.PackageDeployment{ObjectMeta: metav1.ObjectMeta{Name: tc.deployment}}
		pd.Spec.Package.Revision = "latest"
		got := fleet.AtPublished(pd, tc.published)
		switch {
		case tc.want == "" && got != nil:
			t.Errorf("%s: asks for %q, want nothing", tc.deployment, got.Spec.Package.Revision)
		case tc.want != "" && (got == nil || got.Spec.Package.Revision != tc.want):
			t.Errorf("%s: got %v, want revision %s", tc.deployment, got, tc.want)
		}
		if pd.Spec.Package.Revision != "latest" {
			t.Errorf("%s: the deployment itself was changed to %s", tc.deployment, pd.Spec.Package.Revision)
		}
	}
}
