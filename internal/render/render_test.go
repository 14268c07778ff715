package render

import (
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func cluster(mutate func(*v1alpha1.WorkloadCluster)) *v1alpha1.WorkloadCluster {
	c := &v1alpha1.WorkloadCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "edge01", Namespace: "fleet"},
		Spec: v1alpha1.WorkloadClusterSpec{
			Repository: v1alpha1.LocalObjectReference{Name: "edge01"},
			Sync:       v1alpha1.ClusterSync{Engine: v1alpha1.EngineConfigSync, Package: "deployed-packages"},
		},
	}
	if mutate != nil {
		mutate(c)
	}
	return c
}

func pin(name, pkg string, n int, mutate func(*v1alpha1.PackageDeployment)) Pin {
	pd := &v1alpha1.PackageDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "fleet"},
		Spec: v1alpha1.PackageDeploymentSpec{
			Cluster:        v1alpha1.LocalObjectReference{Name: "edge01"},
			Package:        v1alpha1.PackageReference{Name: pkg, Revision: "v" + string(rune('0'+n))},
			DeletionPolicy: v1alpha1.DeletionPolicyDelete,
		},
	}
	if mutate != nil {
		mutate(pd)
	}
	tag := pkg + "/v" + string(rune('0'+n))
	return Pin{
		Deployment: pd,
		RepoURL:    "https://git.example/catalog.git",
		Branch:     "main",
		Resolved:   v1alpha1.ResolvedRevision{Repository: "catalog", Revision: n, Tag: tag, Commit: strings.Repeat("a", 40), Directory: "/" + pkg},
	}
}

func TestDeployedPackagesGolden(t *testing.T) {
	cases := map[string]struct {
		cluster *v1alpha1.WorkloadCluster
		pins    []Pin
	}{
		"empty": {cluster: cluster(nil)},
		"rootsync-and-reposync": {
			cluster: cluster(func(c *v1alpha1.WorkloadCluster) {
				c.Spec.Sync.Git = v1alpha1.ClusterGitAuth{Auth: "token", SecretRef: &v1alpha1.LocalObjectReference{Name: "git-creds"}}
			}),
			pins: []Pin{
				pin("edge01-upf", "free5gc-upf", 6, func(pd *v1alpha1.PackageDeployment) {
					pd.Spec.DependsOn = []v1alpha1.LocalObjectReference{{Name: "edge01-crds"}, {Name: "not-pinned"}}
				}),
				pin("edge01-crds", "network/crds", 2, nil),
				pin("edge01-smf", "free5gc-smf", 3, func(pd *v1alpha1.PackageDeployment) {
					pd.Spec.Namespace = "free5gc"
					pd.Spec.DeletionPolicy = v1alpha1.DeletionPolicyOrphan
				}),
			},
		},
	}
	for _, engine := range []v1alpha1.SyncEngine{v1alpha1.EngineArgoCD, v1alpha1.EngineFlux} {
		cases[strings.ToLower(string(engine))] = struct {
			cluster *v1alpha1.WorkloadCluster
			pins    []Pin
		}{
			cluster: cluster(func(c *v1alpha1.WorkloadCluster) {
				c.Spec.Sync.Engine = engine
				c.Spec.Sync.Git = v1alpha1.ClusterGitAuth{Auth: "token", SecretRef: &v1alpha1.LocalObjectReference{Name: "git-creds"}}
			}),
			pins: cases["rootsync-and-reposync"].pins,
		}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := DeployedPackages(tc.cluster, tc.pins)
			if err != nil {
				t.Fatal(err)
			}
			compareGolden(t, filepath.Join("testdata", name+".yaml"), concat(got.Files))
		})
	}
}

func TestDeployedPackagesIsDeterministic(t *testing.T) {
	pins := []Pin{pin("a", "pa", 1, nil), pin("b", "pb", 2, nil), pin("c", "pc", 3, nil)}
	first, err := DeployedPackages(cluster(nil), pins)
	if err != nil {
		t.Fatal(err)
	}
	reversed := []Pin{pins[2], pins[1], pins[0]}
	second, err := DeployedPackages(cluster(nil), reversed)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, second); diff != "" {
		t.Errorf("rendering depends on pin order (-first +second):\n%s", diff)
	}
}

func TestBootstrapGolden(t *testing.T) {
	src := Source{RepoURL: "https://git.example/edge01.git", Branch: "main", Directory: "/clusters/edge01"}
	for _, engine := range []v1alpha1.SyncEngine{v1alpha1.EngineConfigSync, v1alpha1.EngineArgoCD, v1alpha1.EngineFlux} {
		t.Run(string(engine), func(t *testing.T) {
			got, err := Bootstrap(cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.Sync.Engine = engine }), src, "")
			if err != nil {
				t.Fatal(err)
			}
			compareGolden(t, filepath.Join("testdata", "bootstrap-"+strings.ToLower(string(engine))+".yaml"), got)
		})
	}
}

func TestParsePinsReadsBackEveryEngine(t *testing.T) {
	pins := []Pin{pin("a", "pa", 1, nil), pin("b", "pb", 2, func(pd *v1alpha1.PackageDeployment) { pd.Spec.Namespace = "ns" })}
	for _, engine := range []v1alpha1.SyncEngine{v1alpha1.EngineConfigSync, v1alpha1.EngineArgoCD, v1alpha1.EngineFlux} {
		pkg, err := DeployedPackages(cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.Sync.Engine = engine }), pins)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(pkg.Pins, ParsePins(pkg.Files)); diff != "" {
			t.Errorf("%s: ParsePins differs from the rendered pins (-rendered +parsed):\n%s", engine, diff)
		}
	}
}

func TestDependencyWaves(t *testing.T) {
	dep := func(names ...string) func(*v1alpha1.PackageDeployment) {
		return func(pd *v1alpha1.PackageDeployment) {
			for _, n := range names {
				pd.Spec.DependsOn = append(pd.Spec.DependsOn, v1alpha1.LocalObjectReference{Name: n})
			}
		}
	}
	got, err := dependencyWaves([]Pin{pin("app", "p", 1, dep("db", "crds")), pin("db", "p", 1, dep("crds")), pin("crds", "p", 1, nil), pin("lone", "p", 1, dep("missing"))})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"app": 2, "db": 1, "crds": 0, "lone": 0}, got); diff != "" {
		t.Errorf("waves (-want +got):\n%s", diff)
	}
	_, err = DeployedPackages(cluster(nil), []Pin{pin("a", "p", 1, dep("b")), pin("b", "p", 1, dep("c")), pin("c", "p", 1, dep("a"))})
	if err == nil || !strings.Contains(err.Error(), "dependency cycle: a → b → c → a") {
		t.Errorf("want the cycle named, got %v", err)
	}
}

func TestUnsupportedEngineIsAnError(t *testing.T) {
	c := cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.Sync.Engine = "Helm" })
	if _, err := DeployedPackages(c, []Pin{pin("a", "pa", 1, nil)}); err == nil || !strings.Contains(err.Error(), "Helm") {
		t.Errorf("want an error naming the engine, got %v", err)
	}
}

func TestSyncObjectName(t *testing.T) {
	long := strings.Repeat("very-long-deployment-name-", 4)
	cases := []struct {
		ns, name, wantPrefix string
	}{
		{"fleet", "edge01-upf", "edge01-upf-"},
		{"fleet", long, "very-long-deployment-name-ver-"},
		{"fleet", "---", "pkg-"},
	}
	for _, tc := range cases {
		got := SyncObjectName(tc.ns, tc.name)
		if !strings.HasPrefix(got, tc.wantPrefix) || len(got) != len(tc.wantPrefix)+8 || len(got) > maxSyncObjectName {
			t.Errorf("SyncObjectName(%q, %q) = %q (%d chars), want prefix %q and an 8-character hash", tc.ns, tc.name, got, len(got), tc.wantPrefix)
		}
	}
	if SyncObjectName("fleet", long) == SyncObjectName("fleet", long+"x") {
		t.Error("names that share a truncated prefix must differ")
	}
	if SyncObjectName("a", "x") == SyncObjectName("b", "x") {
		t.Error("the same deployment name in two namespaces must give two names")
	}
	if got := SyncObjectName("fleet", "a.b.c"); strings.Contains(got, ".") {
		t.Errorf("name %q must be a DNS label", got)
	}
}

func TestDiff(t *testing.T) {
	old := []v1alpha1.PublishedPin{{Deployment: "a", Tag: "pa/v1"}, {Deployment: "b", Tag: "pb/v1"}, {Deployment: "c", Tag: "pc/v1"}}
	new := []v1alpha1.PublishedPin{{Deployment: "a", Tag: "pa/v1"}, {Deployment: "b", Tag: "pb/v2"}, {Deployment: "d", Tag: "pd/v4"}}
	got := Summary(Diff(old, new))
	if want := "~b pb/v1→pb/v2, -c, +d pd/v4"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
	if got := Summary(Diff(old, old)); got != "no change" {
		t.Errorf("Summary of no change = %q", got)
	}
}

func concat(files map[string][]byte) []byte {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString("# --- " + n + "\n")
		b.Write(files[n])
	}
	return []byte(b.String())
}

func compareGolden(t *testing.T, file string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", file, diff)
	}
}
