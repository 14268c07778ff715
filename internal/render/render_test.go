package render

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

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

// Config Sync names its RepoSync reconciler ns-reconciler-<namespace>-<name>-<len(name)>: the
// name is shortened to fit, never renamed when it already fits, and stays unique.
func TestRepoSyncName(t *testing.T) {
	long := strings.Repeat("very-long-deployment-name-", 4)
	names := []string{"edge01-upf", "a.b.c", "---", long, long + "x", strings.Repeat("b", 29), strings.Repeat("b", 30), "x"}
	namespaces := []string{"apps", "namespace-of-20-char", strings.Repeat("n", 30), strings.Repeat("n", MaxRepoSyncNamespace)}
	seen := map[string]string{}
	for _, ns := range namespaces {
		for _, name := range names {
			pd := pin(name, "p", 1, func(pd *v1alpha1.PackageDeployment) { pd.Spec.Namespace = ns }).Deployment
			ref := SyncObjectRef(cluster(nil), pd)
			today := SyncObjectName(pd.Namespace, pd.Name)
			switch {
			case len(ref.Name)+len(ns) > maxRepoSyncNameAndNamespace || len(ref.Name) > maxSyncObjectName:
				t.Errorf("RepoSync %s/%s of %s is too long", ns, ref.Name, name)
			case len(today)+len(ns) <= maxRepoSyncNameAndNamespace && ref.Name != today:
				t.Errorf("RepoSync of %s in %s renamed from %s to %s although it fits", name, ns, today, ref.Name)
			case !strings.HasSuffix(ref.Name, today[len(today)-nameHash:]):
				t.Errorf("RepoSync %s of %s lost its hash (%s)", ref.Name, name, today)
			}
			if errs := validation.IsDNS1123Label(ref.Name); len(errs) > 0 {
				t.Errorf("RepoSync name %q: %v", ref.Name, errs)
			}
			if other, ok := seen[ns+"/"+ref.Name]; ok {
				t.Errorf("%s and %s share RepoSync %s/%s", other, name, ns, ref.Name)
			}
			seen[ns+"/"+ref.Name] = name
		}
	}
	if got := SyncObjectRef(cluster(nil), pin("edge01-upf", "p", 1, nil).Deployment); got.Kind != "RootSync" || got.Name != SyncObjectName("fleet", "edge01-upf") {
		t.Errorf("RootSync ref = %+v", got)
	}
}

func TestAccepts(t *testing.T) {
	cases := []struct {
		engine    v1alpha1.SyncEngine
		namespace string
		want      string // in the error, "" for none
	}{
		{v1alpha1.EngineConfigSync, "", ""},
		{v1alpha1.EngineConfigSync, "apps", ""},
		{v1alpha1.EngineConfigSync, strings.Repeat("n", MaxRepoSyncNamespace), ""},
		{v1alpha1.EngineConfigSync, strings.Repeat("n", MaxRepoSyncNamespace+1), "use a namespace of at most 37 characters"},
		{v1alpha1.EngineConfigSync, "config-management-system", "remove spec.namespace"},
		{v1alpha1.EngineFlux, "config-management-system", ""},
		{v1alpha1.EngineArgoCD, strings.Repeat("n", 63), ""},
	}
	for _, tc := range cases {
		pd := pin("a", "p", 1, func(pd *v1alpha1.PackageDeployment) { pd.Spec.Namespace = tc.namespace }).Deployment
		err := Accepts(cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.Sync.Engine = tc.engine }), pd)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s, namespace %q: %v", tc.engine, tc.namespace, err)
		case tc.want != "" && (!errors.Is(err, ErrNotAccepted) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s, namespace %q: got %v, want an error saying %q", tc.engine, tc.namespace, err, tc.want)
		}
	}
	// The deployment is left out, the others are rendered.
	pkg, err := DeployedPackages(cluster(nil), []Pin{pin("a", "pa", 1, nil), pin("b", "pb", 1, func(pd *v1alpha1.PackageDeployment) { pd.Spec.Namespace = configSyncNamespace })})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]v1alpha1.PublishedPin{{Deployment: "a", Tag: "pa/v1"}}, pkg.Pins); diff != "" {
		t.Errorf("pins (-want +got):\n%s", diff)
	}
}

func TestFluxURL(t *testing.T) {
	cases := []struct{ in, want, err string }{
		{in: "https://git.example/catalog.git", want: "https://git.example/catalog.git"},
		{in: "http://git.example:8080/catalog.git", want: "http://git.example:8080/catalog.git"},
		{in: "ssh://git@git.example:2222/org/catalog.git", want: "ssh://git@git.example:2222/org/catalog.git"},
		{in: "git@github.com:org/catalog.git", want: "ssh://git@github.com/org/catalog.git"},
		{in: "git@git.example:/srv/git/catalog.git", want: "ssh://git@git.example/srv/git/catalog.git"},
		{in: "git.example:org/catalog.git", want: "ssh://git.example/org/catalog.git"},
		{in: "git@[::1]:org/catalog.git", want: "ssh://git@[::1]/org/catalog.git"},
		{in: "git://git.example/catalog.git", err: "http://, https:// and ssh://"},
		{in: "file:///srv/git/catalog.git", err: "http://, https:// and ssh://"},
		{in: "HTTPS://git.example/catalog.git", err: "http://, https:// and ssh://"},
	}
	for _, tc := range cases {
		got, err := fluxURL(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("fluxURL(%q) = %q, %v; want an error saying %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("fluxURL(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	flux := cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.Sync.Engine = v1alpha1.EngineFlux })
	p := pin("a", "pa", 1, nil)
	p.RepoURL = "git://git.example/catalog.git"
	if _, err := DeployedPackages(flux, []Pin{p}); err == nil || !strings.Contains(err.Error(), "deployment a, repository catalog") {
		t.Errorf("want an error naming the deployment and repository, got %v", err)
	}
	if _, err := Bootstrap(flux, Source{RepoURL: "file:///srv/edge01.git", Branch: "main"}, ""); err == nil {
		t.Error("Bootstrap of a Flux cluster from a file:// URL must fail")
	}
	flux.Spec.Sync.Flux = &v1alpha1.FluxSync{Interval: &metav1.Duration{Duration: 500 * time.Microsecond}}
	if _, err := DeployedPackages(flux, []Pin{pin("a", "pa", 1, nil)}); err == nil || !strings.Contains(err.Error(), "at least 1ms") {
		t.Errorf("want an interval Flux refuses to be an error, got %v", err)
	}
}

// Awkward inputs for every engine: names too long for Config Sync or for a label, long
// namespaces, a dependsOn chain, Orphan, an scp-style URL. The same objects are dry-run created
// against the real CRDs in internal/controller (TestEngineObjectsForAwkwardInputs).
func TestAwkwardInputsGolden(t *testing.T) {
	long := strings.Repeat("very.long-deployment-name.", 10)[:240]
	ns37 := strings.Repeat("n", MaxRepoSyncNamespace)
	pins := []Pin{
		pin("crds", "crds", 1, nil),
		pin(long, "network/upf", 2, func(pd *v1alpha1.PackageDeployment) {
			pd.Spec.DeletionPolicy = v1alpha1.DeletionPolicyOrphan
			pd.Spec.DependsOn = []v1alpha1.LocalObjectReference{{Name: "crds"}}
		}),
		pin(long+"x", "network/smf", 3, func(pd *v1alpha1.PackageDeployment) {
			pd.Spec.Namespace = ns37
			pd.Spec.DependsOn = []v1alpha1.LocalObjectReference{{Name: long}}
		}),
		pin("in-cms", "p", 4, func(pd *v1alpha1.PackageDeployment) { pd.Spec.Namespace = configSyncNamespace }),
	}
	pins[1].RepoURL = "git@git.example:org/catalog.git"
	for _, engine := range []v1alpha1.SyncEngine{v1alpha1.EngineConfigSync, v1alpha1.EngineArgoCD, v1alpha1.EngineFlux} {
		t.Run(string(engine), func(t *testing.T) {
			got, err := DeployedPackages(cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.Sync.Engine = engine }), pins)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got.Pins, ParsePins(got.Files)); diff != "" {
				t.Errorf("ParsePins differs from the rendered pins (-rendered +parsed):\n%s", diff)
			}
			compareGolden(t, filepath.Join("testdata", "awkward-"+strings.ToLower(string(engine))+".yaml"), concat(got.Files))
		})
	}
}

// With one central Argo CD, the root Application applies the child Applications into Argo CD's
// own namespace and cluster, is named per cluster (many roots share that namespace), and only
// the child Applications carry the workload cluster's destination.
func TestArgoCDCentralInstance(t *testing.T) {
	central := func(ns, name string) *v1alpha1.WorkloadCluster {
		return &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1alpha1.WorkloadClusterSpec{Sync: v1alpha1.ClusterSync{
			Engine: v1alpha1.EngineArgoCD, ArgoCD: &v1alpha1.ArgoCDSync{Namespace: "argocd", Destination: v1alpha1.ArgoCDDestination{Server: "https://" + name + ".example:6443"}},
		}}}
	}
	a, b := central("team-a", "edge01"), central("team-b", "edge01")
	if RootName(a) == RootName(b) || RootName(a) == BootstrapName {
		t.Fatalf("root names %q and %q: want one per cluster", RootName(a), RootName(b))
	}
	if !strings.HasPrefix(RootName(a), "flotilla-edge01-") || len(RootName(a)) > 38 {
		t.Errorf("root name %q", RootName(a))
	}
	local := &v1alpha1.WorkloadCluster{Spec: v1alpha1.WorkloadClusterSpec{Sync: v1alpha1.ClusterSync{Engine: v1alpha1.EngineArgoCD}}}
	if RootName(local) != BootstrapName {
		t.Errorf("an in-cluster Argo CD keeps the root name %s, got %s", BootstrapName, RootName(local))
	}

	b1, err := Bootstrap(a, Source{RepoURL: "https://git.example/edge01.git", Branch: "main"}, "")
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := yaml.Unmarshal(b1, &root); err != nil {
		t.Fatal(err)
	}
	spec := root["spec"].(map[string]any)
	if diff := cmp.Diff(map[string]any{"server": "https://kubernetes.default.svc", "namespace": "argocd"}, spec["destination"]); diff != "" {
		t.Errorf("root destination (-want +got):\n%s", diff)
	}
	if got := root["metadata"].(map[string]any)["name"]; got != RootName(a) {
		t.Errorf("root name %v, want %s", got, RootName(a))
	}

	pd := &v1alpha1.PackageDeployment{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "team-a"}, Spec: v1alpha1.PackageDeploymentSpec{
		DependsOn: []v1alpha1.LocalObjectReference{{Name: "crds"}}}}
	crds := &v1alpha1.PackageDeployment{ObjectMeta: metav1.ObjectMeta{Name: "crds", Namespace: "team-a"}}
	pins := []Pin{
		{Deployment: pd, RepoURL: "https://git.example/catalog.git", Branch: "main", Resolved: v1alpha1.ResolvedRevision{Tag: "app/v1", Commit: strings.Repeat("a", 40), Directory: "/app"}},
		{Deployment: crds, RepoURL: "https://git.example/catalog.git", Branch: "main", Resolved: v1alpha1.ResolvedRevision{Tag: "crds/v1", Commit: strings.Repeat("b", 40), Directory: "/crds"}},
	}
	pkg, err := DeployedPackages(a, pins)
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range pkg.Files {
		if name == "Kptfile" {
			continue
		}
		var app map[string]any
		if err := yaml.Unmarshal(body, &app); err != nil {
			t.Fatal(err)
		}
		dest := app["spec"].(map[string]any)["destination"].(map[string]any)
		if dest["server"] != "https://edge01.example:6443" {
			t.Errorf("%s: child destination %v, want the workload cluster", name, dest)
		}
	}
	caveats := Caveats(a, pins)
	if len(caveats) != 1 || !strings.Contains(caveats[0], "app") || !strings.Contains(caveats[0], "health") {
		t.Errorf("Caveats = %q; want one naming app and the health check", caveats)
	}
	if c := Caveats(a, pins[1:]); c != nil {
		t.Errorf("Caveats without dependsOn = %q", c)
	}
}
