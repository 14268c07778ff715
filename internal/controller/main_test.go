package controller_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	cache, err := os.MkdirTemp("", "flotilla-controller-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(cache)
	stop, err := env.StartManager(cache)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if err := stop(); err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		return 1
	}
	return code
}

// fixture is one test's namespace, git server and repositories: a catalog with published
// package revisions and one cluster repository.
type fixture struct {
	t       *testing.T
	g       Gomega
	ctx     context.Context
	ns      string
	git     *gittest.Server
	catalog string // bare directory
	edge    string // bare directory of the cluster repository
}

func newFixture(t *testing.T, opts ...gittest.Option) *fixture {
	t.Helper()
	f := &fixture{t: t, g: NewWithT(t), ctx: context.Background(), git: gittest.NewServer(t, opts...)}
	f.ns = strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(f.ns) > 50 {
		f.ns = f.ns[:50]
	}
	f.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}})
	t.Cleanup(f.dumpOnFailure)
	f.git.CreateRepo(t, "catalog")
	f.git.CreateRepo(t, "edge01")
	f.catalog, f.edge = f.git.Dir("catalog"), f.git.Dir("edge01")
	for i := 1; i <= 3; i++ {
		f.publish("nginx-hello", i)
	}
	f.publish("crds", 1)
	return f
}

// dumpOnFailure logs the status of the fixture's objects when the test failed: a wait that timed
// out says what it waited on, not why.
func (f *fixture) dumpOnFailure() {
	if !f.t.Failed() {
		return
	}
	for _, list := range []client.ObjectList{&v1alpha1.RepositoryList{}, &v1alpha1.WorkloadClusterList{}, &v1alpha1.PackageDeploymentList{}} {
		if err := env.Client.List(f.ctx, list, client.InNamespace(f.ns)); err != nil {
			f.t.Logf("list %T: %v", list, err)
			continue
		}
		items, _ := meta.ExtractList(list)
		for _, o := range items {
			obj := o.(client.Object)
			status, _ := yaml.Marshal(o)
			f.t.Logf("%T %s at generation %d:\n%s", o, obj.GetName(), obj.GetGeneration(), status)
		}
	}
}

// publish publishes revision n of a catalog package, as Porch would: a commit tagged pkg/vN.
func (f *fixture) publish(pkg string, n int) {
	gittest.Commit(f.t, f.catalog, pkg, map[string]string{
		pkg + "/Kptfile":        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: " + pkg + "\n",
		pkg + "/configmap.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  revision: \"%d\"\n", pkg, n),
	}, fmt.Sprintf("%s/v%d", pkg, n))
}

func (f *fixture) create(obj client.Object) {
	f.t.Helper()
	f.g.Expect(env.Client.Create(f.ctx, obj)).To(Succeed())
}

func (f *fixture) key(name string) client.ObjectKey {
	return client.ObjectKey{Namespace: f.ns, Name: name}
}

func (f *fixture) repository(name string, mutate ...func(*v1alpha1.Repository)) *v1alpha1.Repository {
	r := &v1alpha1.Repository{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
		Spec: v1alpha1.RepositorySpec{
			Git:      &v1alpha1.GitRepository{URL: f.git.URL + "/" + name + ".git"},
			Interval: &metav1.Duration{Duration: 5 * time.Second},
		},
	}
	for _, m := range mutate {
		m(r)
	}
	f.create(r)
	return r
}

// cluster creates the WorkloadCluster edge01, whose repository is edge01.
func (f *fixture) cluster(mutate ...func(*v1alpha1.WorkloadCluster)) *v1alpha1.WorkloadCluster {
	c := &v1alpha1.WorkloadCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "edge01", Namespace: f.ns},
		Spec:       v1alpha1.WorkloadClusterSpec{Repository: v1alpha1.LocalObjectReference{Name: "edge01"}},
	}
	for _, m := range mutate {
		m(c)
	}
	f.create(c)
	return c
}

func (f *fixture) deployment(name, pkg, rev string, mutate ...func(*v1alpha1.PackageDeployment)) *v1alpha1.PackageDeployment {
	pd := &v1alpha1.PackageDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
		Spec: v1alpha1.PackageDeploymentSpec{
			Cluster: v1alpha1.LocalObjectReference{Name: "edge01"},
			Package: v1alpha1.PackageReference{Repository: &v1alpha1.LocalObjectReference{Name: "catalog"}, Name: pkg, Revision: rev},
		},
	}
	for _, m := range mutate {
		m(pd)
	}
	f.create(pd)
	return pd
}

// update re-reads obj, applies mutate and writes it, retrying on conflicts.
func (f *fixture) update(obj client.Object, mutate func()) {
	f.t.Helper()
	f.g.Eventually(func() error {
		if err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate()
		return env.Client.Update(f.ctx, obj)
	}).Should(Succeed())
}

// updateStatus is update for obj's status subresource (the status a reconciler wrote, changed
// as a restore or a race would leave it).
func (f *fixture) updateStatus(obj client.Object, mutate func()) {
	f.t.Helper()
	f.g.Eventually(func() error {
		if err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate()
		return env.Client.Status().Update(f.ctx, obj)
	}).Should(Succeed())
}

// clusterAt waits until edge01's published deployed-packages is revision n and returns the
// cluster.
func (f *fixture) clusterAt(n int) *v1alpha1.WorkloadCluster {
	f.t.Helper()
	c := &v1alpha1.WorkloadCluster{}
	f.g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, f.key("edge01"), c)).To(Succeed())
		g.Expect(c.Status.DeployedPackages).NotTo(BeNil(), "no deployed-packages published yet; conditions: %v", c.Status.Conditions)
		g.Expect(c.Status.DeployedPackages.Revision).To(Equal(n), "conditions: %v", c.Status.Conditions)
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	return c
}

// clusterWith waits until edge01's published pins match and returns the cluster.
func (f *fixture) clusterWith(pins types.GomegaMatcher) *v1alpha1.WorkloadCluster {
	f.t.Helper()
	c := &v1alpha1.WorkloadCluster{}
	f.g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, f.key("edge01"), c)).To(Succeed())
		g.Expect(c.Status.DeployedPackages).NotTo(BeNil(), "no deployed-packages published yet; conditions: %v", c.Status.Conditions)
		g.Expect(c.Status.DeployedPackages.Packages).To(pins)
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	return c
}

// condition waits until obj has condition typ with status and reason.
func (f *fixture) condition(obj client.Object, conds func() []metav1.Condition, typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	f.t.Helper()
	var got metav1.Condition
	f.g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		c := meta.FindStatusCondition(conds(), typ)
		g.Expect(c).NotTo(BeNil(), "no %s condition in %v", typ, conds())
		g.Expect(c.Status).To(Equal(status), "condition %v", c)
		g.Expect(c.Reason).To(Equal(reason), "condition %v", c)
		got = *c
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	return got
}

// syncObject reads the sync object of a deployment from the cluster repository at rev.
func (f *fixture) syncObject(rev string, pd *v1alpha1.PackageDeployment) *unstructured.Unstructured {
	f.t.Helper()
	// The deployment reports its sync object once its cluster has published it.
	f.g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(pd), pd)).To(Succeed())
		g.Expect(pd.Status.SyncObject).NotTo(BeNil())
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	file := "deployed-packages/" + pd.Status.SyncObject.Name + ".yaml"
	u := &unstructured.Unstructured{}
	f.g.Expect(yaml.Unmarshal([]byte(gittest.ReadFile(f.t, f.edge, rev, file)), &u.Object)).To(Succeed())
	return u
}

// files lists the files of deployed-packages at rev.
func (f *fixture) files(rev string) []string {
	f.t.Helper()
	out, err := exec.Command("git", "-C", f.edge, "ls-tree", "--name-only", rev+":deployed-packages").Output()
	f.g.Expect(err).NotTo(HaveOccurred(), "ls-tree %s", rev)
	return strings.Fields(string(out))
}

// dryRun checks o against the API server's schema without storing it: a dry-run create, or, when
// an object of that name exists already (the root sync object of a test that bootstraps this API
// server as its workload cluster), a dry-run server-side apply, which validates the same way.
func dryRun(ctx context.Context, o *unstructured.Unstructured) error {
	err := env.Client.Create(ctx, o.DeepCopy(), client.DryRunAll)
	if apierrors.IsAlreadyExists(err) {
		return env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.DryRunAll, client.FieldOwner("dry-run-test"), client.ForceOwnership)
	}
	return err
}
