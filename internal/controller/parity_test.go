package controller_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/internal/offline"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// parityFleet is one fleet as files: a PackageSet with variants (a values hierarchy, a
// WorkloadCluster injected, a function), a deployment with dependsOn, an Orphan deployment, an
// Automatic and a Manual cluster. @NS@ and @SERVER@ are replaced; agents read git.example (syncURL), so
// two git servers give the same content.
const parityFleet = `apiVersion: flotilla.dev/v1alpha1
kind: Repository
metadata: {name: catalog, namespace: @NS@}
spec: {git: {url: @SERVER@/catalog.git, syncURL: https://git.example/catalog.git}}
---
apiVersion: flotilla.dev/v1alpha1
kind: Repository
metadata: {name: edge01, namespace: @NS@}
spec: {git: {url: @SERVER@/edge01.git, syncURL: https://git.example/edge01.git}}
---
apiVersion: flotilla.dev/v1alpha1
kind: Repository
metadata: {name: edge02, namespace: @NS@}
spec: {git: {url: @SERVER@/edge02.git, syncURL: https://git.example/edge02.git}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: upf-values, namespace: @NS@}
data: {region: us-west, tier: bronze}
---
apiVersion: flotilla.dev/v1alpha1
kind: WorkloadCluster
metadata: {name: edge01, namespace: @NS@, labels: {tier: edge}}
spec: {repository: {name: edge01}}
---
apiVersion: flotilla.dev/v1alpha1
kind: WorkloadCluster
metadata: {name: edge02, namespace: @NS@, labels: {tier: edge}}
spec: {repository: {name: edge02}, approval: Manual}
---
apiVersion: flotilla.dev/v1alpha1
kind: PackageSet
metadata: {name: upf, namespace: @NS@}
spec:
  package: {repository: {name: catalog}, name: upf, revision: v1}
  targets: {clusters: {selector: {matchLabels: {tier: edge}}}}
  variant:
    values:
      hierarchy: [{configMap: upf-values}]
      inline: {tier: gold}
    injectors: [{kind: WorkloadCluster, nameExpr: target.name}]
    pipeline: {mutators: [{image: gcr.io/kpt-fn/set-labels:v0.2, configMap: {team: core}}]}
---
apiVersion: flotilla.dev/v1alpha1
kind: PackageDeployment
metadata: {name: edge01-crds, namespace: @NS@}
spec: {cluster: {name: edge01}, package: {repository: {name: catalog}, name: crds, revision: v1}}
---
apiVersion: flotilla.dev/v1alpha1
kind: PackageDeployment
metadata: {name: edge01-app, namespace: @NS@}
spec:
  cluster: {name: edge01}
  package: {repository: {name: catalog}, name: nginx-hello, revision: v2}
  dependsOn: [{name: edge01-crds}]
  deletionPolicy: Orphan
`

// The controller on the real API server and flotilla render on the same files, into two copies of
// the same repositories, write the same trees: the same deployed-packages, the same variants, the
// same proposal for the Manual cluster.
func TestRenderMatchesTheController(t *testing.T) {
	f := newFixture(t)
	f.git.CreateRepo(t, "edge02")
	gittest.Commit(t, f.catalog, "upf", map[string]string{
		"upf/Kptfile":   "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: upf}\n",
		"upf/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: upf\ndata:\n  region: none # kpt-set: ${region}\n  tier: none # kpt-set: ${tier}\n",
		"upf/site.yaml": "apiVersion: flotilla.dev/v1alpha1\nkind: WorkloadCluster\nmetadata:\n  name: site\n  annotations:\n    kpt.dev/config-injection: required\nspec:\n  repository: {name: none}\n",
	}, "upf/v1")
	// The second server starts with an exact copy of the catalog: same commits, same tags.
	// The cluster repositories start empty on both.
	other := gittest.NewServer(t)
	for _, r := range []string{"catalog", "edge01", "edge02"} {
		other.CreateRepo(t, r)
	}
	if out, err := exec.Command("git", "-C", f.catalog, "push", "-q", "--mirror", other.Dir("catalog")).CombinedOutput(); err != nil {
		t.Fatalf("mirror the catalog: %v\n%s", err, out)
	}
	fleetFor := func(url string) string {
		return strings.NewReplacer("@NS@", f.ns, "@SERVER@", url).Replace(parityFleet)
	}

	// The controller.
	for _, o := range decode(f.g, []byte(fleetFor(f.git.URL))) {
		f.g.Expect(env.Client.Create(f.ctx, o)).To(Succeed(), "%s %s", o.GetKind(), o.GetName())
	}
	f.g.Eventually(func(g Gomega) {
		edge01, edge02 := &v1alpha1.WorkloadCluster{}, &v1alpha1.WorkloadCluster{}
		g.Expect(env.Client.Get(f.ctx, f.key("edge01"), edge01)).To(Succeed())
		g.Expect(env.Client.Get(f.ctx, f.key("edge02"), edge02)).To(Succeed())
		g.Expect(edge01.Status.DeployedPackages).NotTo(BeNil(), "edge01: %v", edge01.Status.Conditions)
		g.Expect(edge01.Status.DeployedPackages.Packages).To(HaveLen(3), "edge01: %v", edge01.Status.Conditions)
		g.Expect(edge02.Status.Proposal).NotTo(BeNil(), "edge02: %v", edge02.Status.Conditions)
		g.Expect(edge02.Status.Proposal.Packages).To(HaveLen(1))
	}, 60*time.Second, 200*time.Millisecond).Should(Succeed())

	// render, on the same files naming the other server.
	dir := t.TempDir()
	f.g.Expect(os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(fleetFor(other.URL)), 0o644)).To(Succeed())
	fl, err := offline.Load(dir)
	f.g.Expect(err).NotTo(HaveOccurred())
	store := pkgrepo.NewStore(t.TempDir())
	results := offline.Run(context.Background(), store, fl)
	var table strings.Builder
	f.g.Expect(offline.PrintTable(&table, results)).To(Succeed())
	f.g.Expect(offline.Failed(results)).To(BeZero(), table.String())

	tree := func(bare, rev string) string {
		out, err := exec.Command("git", "-C", bare, "rev-parse", rev+"^{tree}").Output()
		f.g.Expect(err).NotTo(HaveOccurred(), "%s %s", bare, rev)
		return strings.TrimSpace(string(out))
	}
	for _, r := range []string{"edge01", "edge02"} {
		a, b := f.git.Dir(r), other.Dir(r)
		f.g.Expect(tree(b, "main")).To(Equal(tree(a, "main")), "%s: the branch the controller wrote (-) and the one render wrote (+) differ:\n%s\n%s",
			r, treeDiff(t, a, b, "main"), table.String())
		// The same package revisions with the same content. (The controller may publish
		// deployed-packages more than once while the objects arrive one by one; its last revision
		// is the main branch compared above.)
		f.g.Expect(packageTags(t, b)).To(Equal(packageTags(t, a)), "%s: package revisions", r)
	}
	proposal := func(bare string) string {
		for b := range gittest.Branches(t, bare) {
			if strings.HasPrefix(b, "proposed/") {
				return b
			}
		}
		return ""
	}
	pa, pb := proposal(f.git.Dir("edge02")), proposal(other.Dir("edge02"))
	f.g.Expect(pb).To(Equal(pa))
	f.g.Expect(tree(other.Dir("edge02"), pb)).To(Equal(tree(f.git.Dir("edge02"), pa)), "the Manual cluster's proposals differ")
}

// packageTags lists a repository's package revision tags (deployed-packages aside) with the tree
// of the package each one names.
func packageTags(t *testing.T, bare string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for tag := range gittest.Tags(t, bare) {
		pkg := tag[:strings.LastIndex(tag, "/")]
		if pkg == "deployed-packages" {
			continue
		}
		b, err := exec.Command("git", "-C", bare, "rev-parse", tag+":"+pkg).Output()
		if err != nil {
			t.Fatal(err)
		}
		out[tag] = strings.TrimSpace(string(b))
	}
	return out
}

// treeDiff is the diff from rev of bare repository a to rev of b.
func treeDiff(t *testing.T, a, b, rev string) string {
	t.Helper()
	if out, err := exec.Command("git", "-C", a, "fetch", "-q", b, "+"+rev+":refs/parity/other").CombinedOutput(); err != nil {
		return string(out)
	}
	out, _ := exec.Command("git", "-C", a, "diff", rev, "refs/parity/other").CombinedOutput()
	return string(out)
}

// diff --live: the fleet of a namespace read from the API server, with a changed deployment given
// as a file, shows the change to deployed-packages and pushes nothing.
func TestDiffAgainstTheLiveFleet(t *testing.T) {
	f := newFixture(t)
	f.repository("catalog")
	f.repository("edge01")
	f.cluster()
	f.deployment("edge01-nginx", "nginx-hello", "v1")
	f.clusterWith(ConsistOf(v1alpha1.PublishedPin{Deployment: "edge01-nginx", Tag: "nginx-hello/v1"}))
	tags, head := gittest.Tags(t, f.edge), gittest.Branches(t, f.edge)["main"]

	base, err := offline.FromAPI(f.ctx, env.Client, f.ns)
	f.g.Expect(err).NotTo(HaveOccurred())
	dir := t.TempDir()
	change := "apiVersion: flotilla.dev/v1alpha1\nkind: PackageDeployment\nmetadata: {name: edge01-nginx, namespace: " + f.ns + "}\n" +
		"spec: {cluster: {name: edge01}, package: {repository: {name: catalog}, name: nginx-hello, revision: v2}}\n"
	f.g.Expect(os.WriteFile(filepath.Join(dir, "change.yaml"), []byte(change), 0o644)).To(Succeed())
	files, err := offline.LoadChanges(dir)
	f.g.Expect(err).NotTo(HaveOccurred())
	fl, err := files.Over(base)
	f.g.Expect(err).NotTo(HaveOccurred())

	preview := offline.NewPreview(pkgrepo.NewStore(t.TempDir()))
	results := offline.Run(context.Background(), preview, fl)
	f.g.Expect(offline.Failed(results)).To(BeZero())
	var diff strings.Builder
	f.g.Expect(offline.WriteDiff(&diff, preview.Changes())).To(Succeed())
	f.g.Expect(diff.String()).To(SatisfyAll(
		ContainSubstring("-    flotilla.dev/pinned-tag: nginx-hello/v1"),
		ContainSubstring("+    flotilla.dev/pinned-tag: nginx-hello/v2"),
		MatchRegexp(`\(deployed-packages/v[0-9]+\)`)))
	f.g.Expect(gittest.Tags(t, f.edge)).To(Equal(tags), "nothing is pushed")
	f.g.Expect(gittest.Branches(t, f.edge)["main"]).To(Equal(head))
}
