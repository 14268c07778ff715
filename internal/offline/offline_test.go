package offline

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/fleet"
	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
	"github.com/flotilla-dev/flotilla/internal/render"
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

// fleetServer is a git server with the repositories writeFleet names and the package app
// published at each of tags (app/v1 when none is given).
func fleetServer(t *testing.T, tags ...string) *gittest.Server {
	t.Helper()
	srv := gittest.NewServer(t, gittest.WithBasicAuth("flotilla", password))
	for _, r := range []string{"catalog", "edge01", "edge02"} {
		srv.CreateRepo(t, r)
	}
	if len(tags) == 0 {
		tags = []string{"app/v1"}
	}
	for _, tag := range tags {
		gittest.Commit(t, srv.Dir("catalog"), "app", map[string]string{"app/Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: app}\n", "app/rev": tag}, tag)
	}
	return srv
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
	srv := fleetServer(t)
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
	srv := fleetServer(t, "app/v1", "app/v2")
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
			`kind: Unsupported value: "PackageDeploymnt.v1alpha1": supported values: "PackageDeployment.v1alpha1", "PackageSet.v1alpha1", "PackageVariant.v1alpha1", "Repository.v1alpha1", "WorkloadCluster.v1alpha1"`},
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
	srv := fleetServer(t)
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

// render runs a PackageSet's variants through the controller's planning core: values from a
// ConfigMap layer and inline, a WorkloadCluster injected, the variant published as a revision in
// the cluster's repository and deployed from there; a second run changes nothing.
func TestRunPublishesVariants(t *testing.T) {
	srv := fleetServer(t)
	gittest.Commit(t, srv.Dir("catalog"), "upf", map[string]string{
		"upf/Kptfile":   "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: upf}\n",
		"upf/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: upf\ndata:\n  region: none # kpt-set: ${region}\n  tier: none # kpt-set: ${tier}\n",
		"upf/site.yaml": "apiVersion: flotilla.dev/v1alpha1\nkind: WorkloadCluster\nmetadata:\n  name: site\n  annotations:\n    kpt.dev/config-injection: required\nspec:\n  repository: {name: none}\n",
	}, "upf/v1")
	dir := t.TempDir()
	writeFleet(t, dir, srv.URL, `---
apiVersion: v1
kind: ConfigMap
metadata: {name: upf-values, namespace: fleet}
data: {region: us-west, tier: bronze}
---
apiVersion: flotilla.dev/v1alpha1
kind: PackageSet
metadata: {name: upf, namespace: fleet}
spec:
  package: {repository: {name: catalog}, name: upf, revision: v1}
  targets: {list: [{cluster: edge01}]}
  variant:
    values:
      hierarchy: [{configMap: upf-values}]
      inline: {tier: gold}
    injectors: [{kind: WorkloadCluster, nameExpr: target.name}]
`)
	f, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	store := pkgrepo.NewStore(t.TempDir())
	store.RefreshInterval = 1
	ctx := context.Background()
	results := Run(ctx, store, f)
	got := table(t, results)
	if Failed(results) != 0 || !strings.Contains(got, "upf/v1") {
		t.Fatalf("run:\n%s", got)
	}
	edge := srv.Dir("edge01")
	cm := gittest.ReadFile(t, edge, "upf/v1", "upf/cm.yaml")
	if !strings.Contains(cm, "region: us-west") || !strings.Contains(cm, "tier: gold") {
		t.Errorf("values did not reach the variant:\n%s", cm)
	}
	if site := gittest.ReadFile(t, edge, "upf/v1", "upf/site.yaml"); !strings.Contains(site, "name: edge01") {
		t.Errorf("the WorkloadCluster was not injected:\n%s", site)
	}
	out, err := exec.Command("git", "-C", edge, "grep", "-h", "-A3", "revision: upf/v1", "main", "--", "deployed-packages").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "upf/v1") {
		t.Errorf("the variant is not deployed: %v\n%s", err, out)
	}
	tags := gittest.Tags(t, edge)
	if got := table(t, Run(ctx, store, f)); strings.Contains(got, "published") {
		t.Errorf("second run published:\n%s", got)
	}
	if diff := cmp.Diff(tags, gittest.Tags(t, edge)); diff != "" {
		t.Errorf("second run changed tags:\n%s", diff)
	}
}

// lsDeployed names the sync object file of deployed-packages on main (the one not the Kptfile).
func lsDeployed(t *testing.T, bare string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", bare, "ls-tree", "--name-only", "main:deployed-packages").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range strings.Fields(string(out)) {
		if name != "Kptfile" {
			return name
		}
	}
	t.Fatal("no sync object in deployed-packages")
	return ""
}

// render refuses a set whose generator selects nothing unless allowEmpty says so, and keeps a
// suspended deployment on the pin it has published.
func TestRunEmptyGeneratorAndSuspend(t *testing.T) {
	srv := fleetServer(t, "app/v1", "app/v2")
	ctx := context.Background()
	store := pkgrepo.NewStore(t.TempDir())
	store.RefreshInterval = 1
	load := func(extra string, mutate func(string) string) *Fleet {
		t.Helper()
		dir := t.TempDir()
		writeFleet(t, dir, srv.URL, extra)
		if mutate != nil {
			p := filepath.Join(dir, "fleet.yaml")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(mutate(string(b))), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		f, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	empty := "---\napiVersion: flotilla.dev/v1alpha1\nkind: PackageSet\nmetadata: {name: none, namespace: fleet}\nspec:\n  package: {repository: {name: catalog}, name: app, revision: v1}\n  targets: {clusters: {selector: {matchLabels: {tier: nope}}}}\n"
	results := Run(ctx, store, load(empty, nil))
	if got := table(t, results); Failed(results) == 0 || !strings.Contains(got, "spec.allowEmpty") {
		t.Errorf("an empty generator was not refused:\n%s", got)
	}
	if tags := gittest.Tags(t, srv.Dir("edge01")); len(tags) != 0 {
		t.Errorf("a refused run pushed %v", tags)
	}
	results = Run(ctx, store, load(strings.Replace(empty, "targets:", "allowEmpty: true\n  targets:", 1), nil))
	if Failed(results) != 0 {
		t.Fatalf("allowEmpty: %s", table(t, results))
	}

	// edge01-app is published at v1; suspended and moved to v2, it stays at v1.
	suspended := load("", func(s string) string {
		return strings.Replace(s, "name: app, revision: v1}}", "name: app, revision: v2}, suspend: true}", 1)
	})
	if got := table(t, Run(ctx, store, suspended)); strings.Contains(got, "app/v2") {
		t.Errorf("a suspended deployment moved:\n%s", got)
	}
	sync := gittest.ReadFile(t, srv.Dir("edge01"), "main", "deployed-packages/"+lsDeployed(t, srv.Dir("edge01")))
	if !strings.Contains(sync, "revision: app/v1") {
		t.Errorf("the suspended deployment lost its pin:\n%s", sync)
	}
}

// A run through a Preview pushes nothing, lists each package it would write with a unified diff
// (variants and deployed-packages), and predicts the revisions the real run then makes.
func TestPreviewPushesNothingAndPredicts(t *testing.T) {
	srv, f := upfFleet(t, "{list: [{cluster: edge01}]}")
	ctx := context.Background()
	store := pkgrepo.NewStore(t.TempDir())
	store.RefreshInterval = 1
	preview := NewPreview(store)
	results := Run(ctx, preview, f)
	if Failed(results) != 0 {
		t.Fatalf("preview:\n%s", table(t, results))
	}
	for _, r := range []string{"edge01", "edge02"} {
		if tags := gittest.Tags(t, srv.Dir(r)); len(tags) != 0 {
			t.Fatalf("a preview pushed to %s: %v", r, tags)
		}
	}
	var b bytes.Buffer
	if err := WriteDiff(&b, preview.Changes()); err != nil {
		t.Fatal(err)
	}
	diff := b.String()
	for _, want := range []string{"--- /dev/null", "+++ b/upf/cm.yaml", "+  tier: gold", "+++ b/deployed-packages/Kptfile", "(upf/v1)", "(deployed-packages/v1)"} {
		if !strings.Contains(diff, want) {
			t.Errorf("diff misses %q:\n%s", want, diff)
		}
	}
	predicted := table(t, results)
	diffs, err := Diffs(preview.Changes())
	if err != nil || len(diffs) < 3 {
		t.Fatalf("Diffs = %d entries, %v", len(diffs), err)
	}
	if d := diffs[0]; d.Repository == "" || d.Package == "" || d.File == "" || !strings.HasPrefix(d.Diff, "---") {
		t.Errorf("first entry %+v", d)
	}

	// The real run makes what the preview said (commits aside: they carry their time and parent).
	commits := regexp.MustCompile(`\b[0-9a-f]{12}\b`)
	real := commits.ReplaceAllString(table(t, Run(ctx, store, f)), "COMMIT")
	if predicted = commits.ReplaceAllString(predicted, "COMMIT"); predicted != real {
		t.Errorf("the preview (-) and the run (+) differ:\n%s\n%s", predicted, real)
	}
	preview = NewPreview(store)
	Run(ctx, preview, f)
	if c := preview.Changes(); len(c) != 0 {
		t.Errorf("after the run, a preview still sees %d changes", len(c))
	}
}

// A Manual cluster proposes; render approves the proposal by the commit that was reviewed, with
// the controller's rule: another commit, or a vN, publishes nothing.
func TestRunApprovesByCommit(t *testing.T) {
	srv := fleetServer(t)
	dir := t.TempDir()
	writeFleet(t, dir, srv.URL, "")
	p := filepath.Join(dir, "fleet.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	manual := strings.Replace(string(b), "metadata: {name: edge01, namespace: fleet}\nspec: {repository: {name: edge01}}", "metadata: {name: edge01, namespace: fleet}\nspec: {repository: {name: edge01}, approval: Manual}", 1)
	if err := os.WriteFile(p, []byte(manual), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	store := pkgrepo.NewStore(t.TempDir())
	store.RefreshInterval = 1
	edge := srv.Dir("edge01")
	if got := table(t, Run(ctx, store, f)); !strings.Contains(got, "proposed/deployed-packages/v1") {
		t.Fatalf("a Manual cluster did not propose:\n%s", got)
	}
	proposal := gittest.Branches(t, edge)["proposed/deployed-packages/v1"]
	if proposal == "" || len(gittest.Tags(t, edge)) != 0 {
		t.Fatalf("branches %v, tags %v", gittest.Branches(t, edge), gittest.Tags(t, edge))
	}

	for _, bad := range []string{"v1", strings.Repeat("ab", 20)} {
		f.Approvals = map[string]string{"fleet/edge01": bad}
		results := Run(ctx, store, f)
		if got := table(t, results); Failed(results) != 1 || !strings.Contains(got, "nothing was published") {
			t.Errorf("approval %s was not refused:\n%s", bad, got)
		}
		if tags := gittest.Tags(t, edge); len(tags) != 0 {
			t.Errorf("approval %s published %v", bad, tags)
		}
	}

	f.Approvals = map[string]string{"fleet/edge01": proposal}
	results := Run(ctx, store, f)
	if got := table(t, results); Failed(results) != 0 || !strings.Contains(got, "deployed-packages/v1") {
		t.Fatalf("approving %s:\n%s", proposal, got)
	}
	if tag := gittest.Tags(t, edge)["deployed-packages/v1"]; tag == "" {
		t.Errorf("the approved proposal was not published: tags %v", gittest.Tags(t, edge))
	}
}

// -o yaml|json prints the rows of the table; Wrote counts the clusters a run changed.
func TestRowsAndWrote(t *testing.T) {
	results := []Result{
		{Cluster: "fleet/edge01", Outcome: fleet.Outcome{Wrote: true, Published: &v1alpha1.DeployedPackagesStatus{Tag: "deployed-packages/v2", Commit: strings.Repeat("a", 40)},
			Changes: []render.Change{{Deployment: "edge01-upf", Op: "+", To: "upf/v1"}}}},
		{Cluster: "fleet/edge02", Err: errors.New("boom")},
		{Cluster: "fleet/edge03", Suspended: true},
	}
	got := Rows(results, true)
	want := []Row{
		{Cluster: "fleet/edge01", Action: "would publish", Revision: "deployed-packages/v2", Commit: strings.Repeat("a", 12), Changes: "+edge01-upf upf/v1"},
		{Cluster: "fleet/edge02", Action: "error", Revision: "-", Commit: "-", Changes: "boom"},
		{Cluster: "fleet/edge03", Action: "suspended", Revision: "-", Commit: "-", Changes: "spec.suspend is true: nothing is published"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Rows (-want +got):\n%s", diff)
	}
	if n := Wrote(results); n != 1 {
		t.Errorf("Wrote = %d, want 1", n)
	}
	if n := Failed(results); n != 1 {
		t.Errorf("Failed = %d, want 1: a suspended cluster is no failure", n)
	}
}

// Only limits a run: the other clusters publish nothing and get no variant.
func TestRunOnlySomeClusters(t *testing.T) {
	srv, f := upfFleet(t, "{clusters: {selector: {}}}")
	f.Only = map[string]bool{"fleet/edge02": true}
	results := Run(context.Background(), pkgrepo.NewStore(t.TempDir()), f)
	if got := table(t, results); len(results) != 1 || results[0].Cluster != "fleet/edge02" || Failed(results) != 0 {
		t.Fatalf("want edge02 alone:\n%s", got)
	}
	if tags := gittest.Tags(t, srv.Dir("edge01")); len(tags) != 0 {
		t.Errorf("edge01 was written: %v", tags)
	}
	if tags := gittest.Tags(t, srv.Dir("edge02")); tags["upf/v1"] == "" || tags["deployed-packages/v1"] == "" {
		t.Errorf("edge02 tags %v", tags)
	}
}

// upfFleet is writeFleet's fleet on fleetServer with a PackageSet of the blueprint upf/v1 (a
// ConfigMap with a tier setter), a variant with tier gold, over targets.
func upfFleet(t *testing.T, targets string) (*gittest.Server, *Fleet) {
	t.Helper()
	srv := fleetServer(t)
	gittest.Commit(t, srv.Dir("catalog"), "upf", map[string]string{
		"upf/Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: upf}\n",
		"upf/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: upf\ndata:\n  tier: none # kpt-set: ${tier}\n",
	}, "upf/v1")
	dir := t.TempDir()
	writeFleet(t, dir, srv.URL, `---
apiVersion: flotilla.dev/v1alpha1
kind: PackageSet
metadata: {name: upf, namespace: fleet}
spec:
  package: {repository: {name: catalog}, name: upf, revision: v1}
  targets: `+targets+`
  variant: {values: {inline: {tier: gold}}}
`)
	f, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return srv, f
}
