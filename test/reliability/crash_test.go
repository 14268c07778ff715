// Package reliability kills the flotilla controller (a real process, kill -9) at random points
// while it publishes to many clusters, takes the API server away from under it, with another
// writer pushing to the same branches, and checks the invariants after it restarts and converges.
package reliability

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/internal/testenv"
)

var long = flag.Bool("flotilla.long", false, "more clusters and more kills")

var env *testenv.Env

func TestMain(m *testing.M) {
	flag.Parse()
	var err error
	if env, err = testenv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

// controller runs `flotilla controller` as a process against the test API server.
type controller struct {
	bin, kubeconfig, cache, logDir string
	cmd                            *exec.Cmd
	runs                           int
}

func (c *controller) start(t *testing.T) {
	t.Helper()
	c.runs++
	log, err := os.Create(filepath.Join(c.logDir, fmt.Sprintf("controller-%d.log", c.runs)))
	if err != nil {
		t.Fatal(err)
	}
	c.cmd = exec.Command(c.bin, "controller", "--kubeconfig", c.kubeconfig, "--cache-dir", c.cache,
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0")
	c.cmd.Stdout, c.cmd.Stderr = log, log
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
}

func (c *controller) kill() {
	if c.cmd != nil && c.cmd.Process != nil {
		_ = c.cmd.Process.Kill() // SIGKILL: no cleanup, no graceful shutdown
		_ = c.cmd.Wait()
	}
}

func buildFlotilla(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "flotilla")
	out, err := exec.Command("go", "build", "-o", bin, filepath.Join(testenv.Root(), "cmd", "flotilla")).CombinedOutput()
	if err != nil {
		t.Fatalf("build flotilla: %v\n%s", err, out)
	}
	return bin
}

func TestKillNineWhilePublishing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	clusters, kills := 12, 6
	if *long {
		clusters, kills = 60, 25
	}
	kubeconfig, err := env.AdminKubeconfig("crash-test")
	g.Expect(err).NotTo(HaveOccurred())
	// The controller reaches the API server through a proxy that the test takes down and up
	// again, as a restarting API server looks to its clients.
	cfg, err := clientcmd.Load(kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	var proxy *apiProxy
	for _, cluster := range cfg.Clusters {
		u, err := url.Parse(cluster.Server)
		g.Expect(err).NotTo(HaveOccurred())
		proxy = newAPIProxy(t, u.Host)
		u.Host = proxy.addr
		cluster.Server = u.String()
	}
	g.Expect(proxy).NotTo(BeNil(), "the kubeconfig names the API server")
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(clientcmd.WriteToFile(*cfg, kc)).To(Succeed())
	logDir := os.Getenv("FLOTILLA_TEST_LOG_DIR") // kept after the test when set
	if logDir == "" {
		logDir = t.TempDir()
	}
	ctl := &controller{bin: buildFlotilla(t), kubeconfig: kc, cache: t.TempDir(), logDir: logDir}
	t.Cleanup(ctl.kill)

	ns := "crash"
	g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	srv := gittest.NewServer(t)
	srv.CreateRepo(t, "catalog")
	for _, pkg := range []string{"a", "b"} {
		for n := 1; n <= 2; n++ {
			gittest.Commit(t, srv.Dir("catalog"), pkg, map[string]string{pkg + "/Kptfile": "kind: Kptfile\n", pkg + "/cm.yaml": fmt.Sprintf("v: %d\n", n)}, fmt.Sprintf("%s/v%d", pkg, n))
		}
	}
	create := func(o client.Object) { g.Expect(env.Client.Create(ctx, o)).To(Succeed()) }
	repo := func(name string) *v1alpha1.Repository {
		return &v1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: v1alpha1.RepositorySpec{Git: &v1alpha1.GitRepository{URL: srv.URL + "/" + name + ".git"}, Interval: &metav1.Duration{Duration: 5 * time.Second}}}
	}
	create(repo("catalog"))
	names := make([]string, clusters)
	for i := range names {
		names[i] = fmt.Sprintf("c%02d", i)
		srv.CreateRepo(t, names[i])
		// Another writer's file on the same branch, which must survive.
		gittest.Commit(t, srv.Dir(names[i]), "", map[string]string{"README.md": "cluster " + names[i] + "\n"})
		create(repo(names[i]))
		create(&v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Name: names[i], Namespace: ns}, Spec: v1alpha1.WorkloadClusterSpec{Repository: v1alpha1.LocalObjectReference{Name: names[i]}}})
		for _, pkg := range []string{"a", "b"} {
			create(&v1alpha1.PackageDeployment{ObjectMeta: metav1.ObjectMeta{Name: names[i] + "-" + pkg, Namespace: ns},
				Spec: v1alpha1.PackageDeploymentSpec{Cluster: v1alpha1.LocalObjectReference{Name: names[i]},
					Package: v1alpha1.PackageReference{Repository: &v1alpha1.LocalObjectReference{Name: "catalog"}, Name: pkg, Revision: "v1"}}})
		}
	}

	seen := map[string]string{} // repo:tag → sha: a tag, once seen, never moves
	otherCommits := map[string]string{}
	checkTags := func() {
		for _, n := range names {
			for tag, sha := range gittest.Tags(t, srv.Dir(n)) {
				key := n + ":" + tag
				if old, ok := seen[key]; ok && old != sha {
					t.Fatalf("tag %s moved from %s to %s", key, old, sha)
				}
				seen[key] = sha
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	for k := 0; k < kills; k++ {
		ctl.start(t)
		time.Sleep(time.Duration(300+rng.IntN(1500)) * time.Millisecond)
		if k%2 == 1 {
			// The API server goes away under a running controller, and comes back.
			proxy.down()
			time.Sleep(time.Duration(500+rng.IntN(1500)) * time.Millisecond)
			proxy.up(t, proxy.addr)
			time.Sleep(time.Duration(300+rng.IntN(1000)) * time.Millisecond)
		}
		ctl.kill()
		checkTags()
		if k == kills/2 {
			// Halfway: move every "a" deployment to v2, and let the other writer push again.
			for _, n := range names {
				pd := &v1alpha1.PackageDeployment{}
				g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: n + "-a"}, pd)).To(Succeed())
				pd.Spec.Package.Revision = "v2"
				g.Expect(env.Client.Update(ctx, pd)).To(Succeed())
				otherCommits[n] = gittest.Commit(t, srv.Dir(n), "", map[string]string{"NOTES.md": "edited by someone else\n"})
			}
		}
	}

	// Restart for good: everything converges.
	ctl.start(t)
	for _, n := range names {
		g.Eventually(func(g Gomega) {
			c := &v1alpha1.WorkloadCluster{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, c)).To(Succeed())
			g.Expect(c.Status.DeployedPackages).NotTo(BeNil())
			g.Expect(c.Status.DeployedPackages.Packages).To(ConsistOf(
				v1alpha1.PublishedPin{Deployment: n + "-a", Tag: "a/v2"},
				v1alpha1.PublishedPin{Deployment: n + "-b", Tag: "b/v1"},
			))
		}, 2*time.Minute, 500*time.Millisecond).Should(Succeed(), func() string { return describe(ctx, ns, n) })
	}
	checkTags()
	for _, n := range names {
		dir := srv.Dir(n)
		head := gittest.Branches(t, dir)["main"]
		// Nothing of anyone else's is lost.
		g.Expect(gittest.IsAncestor(t, dir, otherCommits[n], head)).To(BeTrue(), "%s: the other writer's commit is kept", n)
		g.Expect(gittest.ReadFile(t, dir, "main", "README.md")).To(ContainSubstring("cluster " + n))
		// No stray proposal branch, and no two revisions with the same content.
		for b := range gittest.Branches(t, dir) {
			g.Expect(strings.HasPrefix(b, "proposed/")).To(BeFalse(), "%s: stray branch %s", n, b)
		}
		trees := map[string]string{}
		for tag := range gittest.Tags(t, dir) {
			tree := gittest.ReadCommit(t, dir, tag)[:46]
			g.Expect(trees).NotTo(HaveKey(tree), "%s: %s and %s have the same content", n, tag, trees[tree])
			trees[tree] = tag
		}
	}
	t.Logf("%d clusters, %d kills, %d tags checked", clusters, kills, len(seen))
}

// describe says what a cluster that did not converge and its deployments report.
func describe(ctx context.Context, ns, cluster string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cluster %s converges\n", cluster)
	c := &v1alpha1.WorkloadCluster{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, c); err == nil {
		y, _ := yaml.Marshal(c.Status)
		fmt.Fprintf(&b, "WorkloadCluster %s (generation %d) status:\n%s", cluster, c.Generation, y)
	}
	for _, pkg := range []string{"a", "b"} {
		pd := &v1alpha1.PackageDeployment{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster + "-" + pkg}, pd); err == nil {
			y, _ := yaml.Marshal(pd.Status)
			fmt.Fprintf(&b, "PackageDeployment %s (generation %d) status:\n%s", pd.Name, pd.Generation, y)
		}
	}
	return b.String()
}
