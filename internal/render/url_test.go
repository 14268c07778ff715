package render

import (
	"errors"
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/giturl"
)

// A URL carrying credentials is never written into a sync object, for any engine, in
// deployed-packages or in the root sync object; the error does not repeat the URL. Which URLs
// carry credentials is giturl's rule (its table test); this test checks that rendering asks it.
func TestURLsWithCredentialsAreNotRendered(t *testing.T) {
	const secret = "hunter2"
	refused := "https://bob:" + secret + "@git.example/catalog.git"
	for _, engine := range []v1alpha1.SyncEngine{v1alpha1.EngineConfigSync, v1alpha1.EngineArgoCD, v1alpha1.EngineFlux} {
		c := cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.Sync.Engine = engine })
		p := pin("a", "pa", 1, nil)
		p.RepoURL = refused
		_, err := DeployedPackages(c, []Pin{p})
		_, berr := Bootstrap(c, Source{RepoURL: refused, Branch: "main"}, "")
		for what, e := range map[string]error{"deployed-packages": err, "bootstrap": berr} {
			if !errors.Is(e, giturl.ErrCredentials) {
				t.Errorf("%s: %s: want giturl.ErrCredentials, got %v", engine, what, e)
			}
			if e != nil && strings.Contains(e.Error(), secret) {
				t.Errorf("%s: %s: the error repeats the credential: %v", engine, what, e)
			}
		}
		p.RepoURL = "ssh://git@git.example/catalog.git"
		if _, err := DeployedPackages(c, []Pin{p}); err != nil {
			t.Errorf("%s: an ssh URL naming its user is refused: %v", engine, err)
		}
	}
}
