package offline

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

const password = "planted-render-password"

func writeFleet(t *testing.T, dir, serverURL, extra string) {
	t.Helper()
	objects := strings.ReplaceAll(`apiVersion: v1
kind: Secret
metadata: {name: git, namespace: fleet}
stringData: {username: flotilla, password: PASSWORD}
---
apiVersion: flotilla.dev/v1alpha1
kind: Repository
metadata: {name: catalog, namespace: fleet}
spec: {git: {url: URL/catalog.git, secretRef: {name: git}}}
---
apiVersion: flotilla.dev/v1alpha1
kind: Repository
metadata: {name: edge01, namespace: fleet}
spec: {git: {url: URL/edge01.git, secretRef: {name: git}}}
---
apiVersion: flotilla.dev/v1alpha1
kind: Repository
metadata: {name: edge02, namespace: fleet}
spec: {git: {url: URL/edge02.git, secretRef: {name: git}}}
---
apiVersion: flotilla.dev/v1alpha1
kind: WorkloadCluster
metadata: {name: edge01, namespace: fleet}
spec: {repository: {name: edge01}}
---
apiVersion: flotilla.dev/v1alpha1
kind: WorkloadCluster
metadata: {name: edge02, namespace: fleet}
spec: {repository: {name: edge02}}
---
apiVersion: flotilla.dev/v1alpha1
kind: PackageDeployment
metadata: {name: edge01-app, namespace: fleet}
spec: {cluster: {name: edge01}, package: {repository: {name: catalog}, name: app, revision: v1}}
`, "URL", serverURL)
	objects = strings.ReplaceAll(objects, "PASSWORD", password)
	if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(objects+extra), 0o644); err != nil {
		t.Fatal(err)
	}
}

func table(t *testing.T, results []Result) string {
	t.Helper()
	var b bytes.Buffer
	if err := PrintTable(&b, results); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// render publishes over authenticated HTTP, publishes nothing the second time, and a cluster with
// a bad deployment publishes nothing while the others go on.
func TestRunPublishesEachCluster(t *testing.T) {
	srv := gittest.NewServer(t, gittest.WithBasicAuth("flotilla", password))
	catalog := srv.Dir("catalog")
	srv.CreateRepo(t, "catalog")
	srv.CreateRepo(t, "edge01")
	srv.CreateRepo(t, "edge02")
	gittest.Commit(t, catalog, "app", map[string]string{"app/Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: app}\n"}, "app/v1")
	dir := t.TempDir()
	writeFleet(t, dir, srv.URL, "")
	store := pkgrepo.NewStore(t.TempDir())
	ctx := context.Background()

	f, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	results := Run(ctx, store, f)
	got := table(t, results)
	for _, want := range []string{"fleet/edge01  published  deployed-packages/v1", "+edge01-app app/v1", "fleet/edge02  published  deployed-packages/v1"} {
		if !strings.Contains(got, want) {
			t.Errorf("table misses %q:\n%s", want, got)
		}
	}
	if Failed(results) != 0 {
		t.Fatalf("failures:\n%s", got)
	}

	// Second run: nothing changed, nothing written.
	tags := gittest.Tags(t, srv.Dir("edge01"))
	results = Run(ctx, store, f)
	if got := table(t, results); strings.Contains(got, "published") {
		t.Errorf("second run published:\n%s", got)
	}
	if diff := cmp.Diff(tags, gittest.Tags(t, srv.Dir("edge01"))); diff != "" {
		t.Errorf("tags changed (-before +after):\n%s", diff)
	}

	// A deployment of a revision that does not exist: edge02 publishes nothing, edge01 is untouched.
	writeFleet(t, dir, srv.URL, `---
apiVersion: flotilla.dev/v1alpha1
kind: PackageDeployment
metadata: {name: edge02-app, namespace: fleet}
spec: {cluster: {name: edge02}, package: {repository: {name: catalog}, name: app, revision: v7}}
`)
	f, err = Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	edge02 := gittest.Tags(t, srv.Dir("edge02"))
	results = Run(ctx, store, f)
	got = table(t, results)
	if Failed(results) != 1 || !strings.Contains(got, "fleet/edge02  error") || !strings.Contains(got, "revision not found") {
		t.Errorf("want edge02 to fail on the missing revision:\n%s", got)
	}
	if strings.Contains(got, password) {
		t.Errorf("the table shows the password:\n%s", got)
	}
	if diff := cmp.Diff(edge02, gittest.Tags(t, srv.Dir("edge02"))); diff != "" {
		t.Errorf("edge02 got a revision despite the error:\n%s", diff)
	}
}

// dependsOn naming a deployment that does not exist, or one on another cluster, fails that
// cluster (the same check as the controller's), and nothing is published for it.
func TestRunRefusesDependencyErrors(t *testing.T) {
	srv := gittest.NewServer(t, gittest.WithBasicAuth("flotilla", password))
	for _, r := range []string{"catalog", "edge01", "edge02"} {
		srv.CreateRepo(t, r)
	}
	gittest.Commit(t, srv.Dir("catalog"), "app", map[string]string{"app/Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: app}\n"}, "app/v1")
	dir := t.TempDir()
	writeFleet(t, dir, srv.URL, `---
apiVersion: flotilla.dev/v1alpha1
kind: PackageDeployment
metadata: {name: edge02-app, namespace: fleet}
spec: {cluster: {name: edge02}, package: {repository: {name: catalog}, name: app, revision: v1}, dependsOn: [{name: edge02-crds}]}
---
apiVersion: flotilla.dev/v1alpha1
kind: PackageDeployment
metadata: {name: edge01-top, namespace: fleet}
spec: {cluster: {name: edge01}, package: {repository: {name: catalog}, name: app, revision: v1}, dependsOn: [{name: edge02-app}]}
`)
	f, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	results := Run(context.Background(), pkgrepo.NewStore(t.TempDir()), f)
	got := table(t, results)
	for _, want := range []string{"edge02-crds, which does not exist in namespace fleet", "edge02-app, which deploys to cluster edge02, not edge01"} {
		if !strings.Contains(got, want) {
			t.Errorf("table misses %q:\n%s", want, got)
		}
	}
	if Failed(results) != 2 {
		t.Errorf("want both clusters to fail:\n%s", got)
	}
	for _, r := range []string{"edge01", "edge02"} {
		if tags := gittest.Tags(t, srv.Dir(r)); len(tags) != 0 {
			t.Errorf("%s got tags %v despite the error", r, tags)
		}
	}
}

// render has no status: the pin published in git is what latest must not go back from.
func TestRunLatestNeverGoesBack(t *testing.T) {
	srv := gittest.NewServer(t, gittest.WithBasicAuth("flotilla", password))
	for _, r := range []string{"catalog", "edge01", "edge02"} {
		srv.CreateRepo(t, r)
	}
	for _, tag := range []string{"app/v1", "app/v2"} {
		gittest.Commit(t, srv.Dir("catalog"), "app", map[string]string{"app/Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: app}\n", "app/rev": tag}, tag)
	}
	dir := t.TempDir()
	writeFleet(t, dir, srv.URL, "")
	fleetYAML := filepath.Join(dir, "fleet.yaml")
	b, err := os.ReadFile(fleetYAML)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fleetYAML, []byte(strings.Replace(string(b), "name: app, revision: v1", "name: app, revision: latest", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	store := pkgrepo.NewStore(t.TempDir())
	store.RefreshInterval = 1
	if got := table(t, Run(ctx, store, f)); !strings.Contains(got, "+edge01-app app/v2") {
		t.Fatalf("first run:\n%s", got)
	}
	gittest.DeleteTag(t, srv.Dir("catalog"), "app/v2")
	tags := gittest.Tags(t, srv.Dir("edge01"))
	results := Run(ctx, store, f)
	if got := table(t, results); Failed(results) != 1 || !strings.Contains(got, "latest never goes back") {
		t.Errorf("want edge01 to refuse going back to app/v1:\n%s", got)
	}
	if diff := cmp.Diff(tags, gittest.Tags(t, srv.Dir("edge01"))); diff != "" {
		t.Errorf("edge01 got a revision despite the error:\n%s", diff)
	}
}

func TestLoadRejectsBadInput(t *testing.T) {
	cases := map[string]struct {
		yaml string
		want string
	}{
		"unknown field": {`apiVersion: flotilla.dev/v1alpha1
kind: Repository
metadata: {name: r}
spec: {git: {url: file:///x, branchh: main}}
`, `unknown field "spec.git.branchh"`},
		"misspelled kind": {"apiVersion: flotilla.dev/v1alpha1\nkind: PackageDeploymnt\nmetadata: {name: d}\nspec: {cluster: {name: c}, package: {name: p, revision: v1}}\n",
			`kind: Unsupported value: "PackageDeploymnt.v1alpha1": supported values: "PackageDeployment.v1alpha1", "PackageSet.v1alpha1", "Repository.v1alpha1", "WorkloadCluster.v1alpha1"`},
		"unknown version": {"apiVersion: flotilla.dev/v1\nkind: Repository\nmetadata: {name: r}\nspec: {git: {url: https://git.example/x.git}}\n", `Unsupported value: "Repository.v1"`},
		"approval in lower case": {"apiVersion: flotilla.dev/v1alpha1\nkind: WorkloadCluster\nmetadata: {name: c}\nspec: {repository: {name: r}, approval: manual}\n",
			`spec.approval: Unsupported value: "manual": supported values: "Automatic", "Manual"`},
		"deletion policy in lower case": {"apiVersion: flotilla.dev/v1alpha1\nkind: PackageDeployment\nmetadata: {name: d}\nspec: {cluster: {name: c}, package: {name: p, revision: v1}, deletionPolicy: orphan}\n",
			`spec.deletionPolicy: Unsupported value: "orphan"`},
		"namespace that is no DNS label": {"apiVersion: flotilla.dev/v1alpha1\nkind: PackageDeployment\nmetadata: {name: d}\nspec: {cluster: {name: c}, package: {name: p, revision: v1}, namespace: ../Evil NS}\n",
			"namespace must be a DNS label"},
		"package escaping its directory": {"apiVersion: flotilla.dev/v1alpha1\nkind: PackageDeployment\nmetadata: {name: d}\nspec: {cluster: {name: c}, package: {name: nginx/../base, revision: v1}}\n",
			"must not contain '.' or '..' segments"},
		"invalid object name": {"apiVersion: flotilla.dev/v1alpha1\nkind: Repository\nmetadata: {name: Catalog_1}\nspec: {git: {url: https://git.example/x.git}}\n", "metadata.name: Invalid value"},
		"duplicate name": {"apiVersion: flotilla.dev/v1alpha1\nkind: Repository\nmetadata: {name: r}\nspec: {git: {url: https://git.example/x.git}}\n---\napiVersion: flotilla.dev/v1alpha1\nkind: Repository\nmetadata: {name: r}\nspec: {git: {url: https://git.example/y.git}}\n",
			"document 2: Repository default/r is defined twice: first in "},
		"missing cluster": {`apiVersion: flotilla.dev/v1alpha1
kind: PackageDeployment
metadata: {name: d}
spec: {cluster: {name: nope}, package: {name: p, revision: v1}}
`, "PackageDeployment.default/d.spec.cluster.name: Not found: \"nope\""},
		"missing repository": {`apiVersion: flotilla.dev/v1alpha1
kind: WorkloadCluster
metadata: {name: c}
spec: {repository: {name: nope}}
`, "WorkloadCluster.default/c.spec.repository.name: Not found"},
		"broken yaml": {"apiVersion: v1\nkind: [\n", "fleet.yaml"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load: got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// render expands a PackageSet into deployments, as the controller would.
func TestRunExpandsPackageSets(t *testing.T) {
	srv := gittest.NewServer(t, gittest.WithBasicAuth("flotilla", password))
	for _, r := range []string{"catalog", "edge01", "edge02"} {
		srv.CreateRepo(t, r)
	}
	gittest.Commit(t, srv.Dir("catalog"), "app", map[string]string{"app/Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: app}\n"}, "app/v1")
	dir := t.TempDir()
	writeFleet(t, dir, srv.URL, `---
apiVersion: flotilla.dev/v1alpha1
kind: PackageSet
metadata: {name: apps, namespace: fleet}
spec:
  package: {repository: {name: catalog}, name: app, revision: latest}
  targets: {clusters: {selector: {}}}
  template: {nameExpr: "'set-' + target.name + '-' + upstream.tag.replace('/', '-')"}
`)
	f, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	results := Run(context.Background(), pkgrepo.NewStore(t.TempDir()), f)
	got := table(t, results)
	for _, want := range []string{"+set-edge01-app-v1 app/v1", "+set-edge02-app-v1 app/v1", "+edge01-app app/v1"} {
		if !strings.Contains(got, want) {
			t.Errorf("table misses %q:\n%s", want, got)
		}
	}
	if len(f.Deployments) != 1 {
		t.Errorf("Run changed the loaded fleet: %d deployments", len(f.Deployments))
	}
}
