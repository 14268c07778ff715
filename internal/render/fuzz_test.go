package render

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// FuzzDeployedPackagesRoundTrip: whatever the deployment names and tags, rendering is
// deterministic, sync object names stay ≤ 38 characters, and the pins read back from the YAML are
// the pins rendered, for every engine.
func FuzzDeployedPackagesRoundTrip(f *testing.F) {
	f.Add("edge01-upf", "free5gc-upf/v6", "edge01-smf", "free5gc-smf/v2", uint8(0))
	f.Add("a.b.c", "x: y/v1", "-", "'quoted'/v9", uint8(1))
	f.Add(strings.Repeat("long-name-", 10), "p/v1", "b", "#comment/v3", uint8(2))
	f.Fuzz(func(t *testing.T, name1, tag1, name2, tag2 string, engine uint8) {
		// Tags and names come from validated package paths and object names: valid UTF-8.
		for _, s := range []string{name1, name2, tag1, tag2} {
			if s == "" || !utf8.ValidString(s) {
				return
			}
		}
		if name1 == name2 {
			return
		}
		c := cluster(func(c *v1alpha1.WorkloadCluster) {
			c.Spec.Sync.Engine = []v1alpha1.SyncEngine{v1alpha1.EngineConfigSync, v1alpha1.EngineArgoCD, v1alpha1.EngineFlux}[engine%3]
		})
		pins := []Pin{pin(name1, "p1", 1, nil), pin(name2, "p2", 2, nil)}
		pins[0].Resolved.Tag, pins[1].Resolved.Tag = tag1, tag2
		pkg, err := DeployedPackages(c, pins)
		if err != nil {
			return // e.g. control characters YAML cannot carry: an error, never a panic or bad YAML
		}
		again, _ := DeployedPackages(c, []Pin{pins[1], pins[0]})
		if diff := cmp.Diff(pkg, again); diff != "" {
			t.Fatalf("not deterministic:\n%s", diff)
		}
		if diff := cmp.Diff(pkg.Pins, ParsePins(pkg.Files)); diff != "" {
			t.Fatalf("pins do not round-trip (-rendered +parsed):\n%s", diff)
		}
		for _, p := range pins {
			if n := SyncObjectName(p.Deployment.Namespace, p.Deployment.Name); len(n) > maxSyncObjectName {
				t.Fatalf("sync object name %q is %d characters", n, len(n))
			}
		}
	})
}
