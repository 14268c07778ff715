package render

import (
	"errors"
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/giturl"
)

// A URL carrying credentials is never written into a sync object, for any engine, in
// deployed-packages or in the root sync object; the error does not repeat the URL.
func TestURLsWithCredentialsAreNotRendered(t *testing.T) {
	const secret = "hunter2"
	refused := []string{
		"https://bob:" + secret + "@git.example/catalog.git",
		"https://" + secret + "@git.example/catalog.git",
		"http://x-token:" + secret + "@git.example/catalog.git",
		"ssh://git:" + secret + "@git.example/catalog.git",
		"file://bob:" + secret + "@/srv/git/catalog.git",
		"git:" + secret + "@git.example:fleet/catalog.git",
		"https://git.example/catalog.git?private_token=" + secret,
	}
	accepted := []string{"https://git.example/catalog.git", "ssh://git@git.example/catalog.git", "git@git.example:fleet/catalog.git", "https://git.example/a@b.git"}
	for _, engine := range []v1alpha1.SyncEngine{v1alpha1.EngineConfigSync, v1alpha1.EngineArgoCD, v1alpha1.EngineFlux} {
		c := cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.Sync.Engine = engine })
		for _, u := range refused {
			p := pin("a", "pa", 1, nil)
			p.RepoURL = u
			_, err := DeployedPackages(c, []Pin{p})
			if !errors.Is(err, giturl.ErrCredentials) {
				t.Errorf("%s: deployed-packages with %s: want giturl.ErrCredentials, got %v", engine, u, err)
			}
			_, berr := Bootstrap(c, Source{RepoURL: u, Branch: "main"}, "")
			if !errors.Is(berr, giturl.ErrCredentials) {
				t.Errorf("%s: bootstrap with %s: want giturl.ErrCredentials, got %v", engine, u, berr)
			}
			for _, e := range []error{err, berr} {
				if e != nil && strings.Contains(e.Error(), secret) {
					t.Errorf("%s: error repeats the credential: %v", engine, e)
				}
			}
		}
		for _, u := range accepted {
			p := pin("a", "pa", 1, nil)
			p.RepoURL = u
			if _, err := DeployedPackages(c, []Pin{p}); err != nil {
				t.Errorf("%s: %s refused: %v", engine, u, err)
			}
		}
	}
}
