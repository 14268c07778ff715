package offline

import (
	"context"
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// flotilla render publishes a chain of PackageVariants with the controller's core, each layer
// after the one above, before the deployments that take the last layer's output; a cycle is an
// error that names it and publishes nothing.
func TestRunPublishesVariantChain(t *testing.T) {
	srv := fleetServer(t)
	dir := t.TempDir()
	chain := `---
apiVersion: v1
kind: ConfigMap
metadata: {name: telco, namespace: fleet}
data: {use: telco}
---
apiVersion: flotilla.dev/v1alpha1
kind: PackageVariant
metadata: {name: app-telco-prod, namespace: fleet}
spec:
  upstream: {variant: app-telco}
  downstream: {repository: {name: edge02}, package: app-telco-prod}
  values: {inline: {env: prod}}
---
apiVersion: flotilla.dev/v1alpha1
kind: PackageVariant
metadata: {name: app-telco, namespace: fleet}
spec:
  upstream: {repository: {name: catalog}, name: app}
  downstream: {repository: {name: edge02}, package: app-telco}
  values: {hierarchy: [{configMap: telco}]}
---
apiVersion: flotilla.dev/v1alpha1
kind: PackageDeployment
metadata: {name: edge01-prod, namespace: fleet}
spec: {cluster: {name: edge01}, package: {repository: {name: edge02}, name: app-telco-prod, revision: latest}}
`
	writeFleet(t, dir, srv.URL, chain)
	f, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	results := Run(context.Background(), pkgrepo.NewStore(t.TempDir()), f)
	got := table(t, results)
	if Failed(results) != 0 || !strings.Contains(got, "+edge01-prod app-telco-prod/v1") {
		t.Fatalf("want edge01 to deploy the last layer:\n%s", got)
	}
	edge02 := srv.Dir("edge02")
	tags := gittest.Tags(t, edge02)
	for _, tag := range []string{"app-telco/v1", "app-telco-prod/v1"} {
		if _, ok := tags[tag]; !ok {
			t.Errorf("no %s in edge02: %v", tag, tags)
		}
	}
	if k := gittest.ReadFile(t, edge02, "app-telco-prod/v1", "app-telco-prod/Kptfile"); !strings.Contains(k, "ref: app-telco/v1") {
		t.Errorf("the environment layer's Kptfile does not name its upstream:\n%s", k)
	}

	writeFleet(t, dir, srv.URL, strings.Replace(chain, "upstream: {repository: {name: catalog}, name: app}", "upstream: {variant: app-telco-prod}", 1))
	if f, err = Load(dir); err != nil {
		t.Fatal(err)
	}
	results = Run(context.Background(), pkgrepo.NewStore(t.TempDir()), f)
	if got := table(t, results); Failed(results) == 0 || !strings.Contains(got, "variant cycle") {
		t.Errorf("want the cycle refused:\n%s", got)
	}
}
