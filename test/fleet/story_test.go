package fleet

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/gittest"
)

// wait bounds every Eventually, also one that spans several rollout steps: generous, since four
// API servers, six Flux controllers and the manager share two cores with whatever else runs
// there (with a load of 40 a step took up to a minute); idle, a step takes seconds.
const wait = 4 * time.Minute

// Health timeouts. Revisions that become healthy roll out with healthTimeout, which no healthy
// step reaches, so a loaded machine cannot halt them. A revision meant to fail gets failAfter,
// set with the revision: long enough for Flux to apply it first (6 s idle, 30 s and more with a
// load of 30 on two cores), and each failure costs that long.
const (
	healthTimeout = wait
	failAfter     = 90 * time.Second
)

// story is one story's world: a namespace of its own on all four API servers (flotilla's objects
// in the management server; Flux's objects and the applied packages in each workload server), a
// git server with a catalog and one repository per cluster, and the three WorkloadClusters,
// bootstrapped, each on its own workload server.
type story struct {
	t       *testing.T
	g       Gomega
	ctx     context.Context
	ns      string
	catalog string
	start   time.Time
}

// newStory creates the story's world; labels gives each cluster's labels by name.
func newStory(t *testing.T, labels map[string]map[string]string) *story {
	t.Parallel()
	s := &story{t: t, g: NewWithT(t), ctx: context.Background(), start: time.Now()}
	s.ns = "fleet-" + strings.ToLower(strings.TrimPrefix(t.Name(), "Test"))
	for _, c := range append([]client.Client{env.Client}, workloadClients()...) {
		s.g.Expect(c.Create(s.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}})).To(Succeed())
	}
	t.Cleanup(s.retire)
	srv := gittest.NewServer(t)
	srv.CreateRepo(t, "catalog")
	s.catalog = srv.Dir("catalog")
	repository := func(name string) {
		s.create(&v1alpha1.Repository{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
			Spec:       v1alpha1.RepositorySpec{Git: &v1alpha1.GitRepository{URL: srv.URL + "/" + name + ".git"}, Interval: &metav1.Duration{Duration: 5 * time.Second}},
		})
	}
	repository("catalog")
	for i, name := range clusters {
		srv.CreateRepo(t, name)
		repository(name)
		secret := "kubeconfig-" + name
		s.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: s.ns}, Data: map[string][]byte{"value": workloads[i].Kubeconfig}})
		s.create(&v1alpha1.WorkloadCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns, Labels: labels[name]},
			Spec: v1alpha1.WorkloadClusterSpec{
				Repository:          v1alpha1.LocalObjectReference{Name: name},
				Sync:                v1alpha1.ClusterSync{Engine: v1alpha1.EngineFlux, Flux: &v1alpha1.FluxSync{Namespace: s.ns, Interval: &metav1.Duration{Duration: 2 * time.Second}}},
				KubeConfigSecretRef: &v1alpha1.SecretKeyReference{Name: secret, Key: "value"},
			},
		})
	}
	for _, name := range clusters {
		cluster := &v1alpha1.WorkloadCluster{}
		s.g.Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: name}, cluster)).To(Succeed())
			c := meta.FindStatusCondition(cluster.Status.Conditions, v1alpha1.ConditionBootstrapped)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
		}, wait, time.Second).Should(Succeed(), "cluster %s bootstraps on its own API server", name)
	}
	s.logf("the three clusters are bootstrapped")
	return s
}

// logf logs a milestone of the story with the time since it started, to see where time goes.
func (s *story) logf(format string, args ...any) {
	s.t.Helper()
	s.t.Logf("%5.1fs %s", time.Since(s.start).Seconds(), fmt.Sprintf(format, args...))
}

// retire stops the story's load on the shared servers once it is over: its clusters are
// suspended (flotilla stops applying to them) and its Flux objects are deleted from the workload
// servers, so Flux stops polling its git server every 2 s while the other stories run. (Deleting
// the namespace would not do: envtest runs no namespace controller.)
func (s *story) retire() {
	for _, name := range clusters {
		c := &v1alpha1.WorkloadCluster{}
		if err := env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: name}, c); err != nil {
			continue
		}
		before := c.DeepCopy()
		c.Spec.Suspend = true
		if err := env.Client.Patch(s.ctx, c, client.MergeFrom(before)); err != nil {
			s.t.Logf("suspend cluster %s: %v", name, err)
		}
	}
	for _, c := range workloadClients() {
		for _, gvk := range []schema.GroupVersionKind{
			{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"},
			{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"},
		} {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			if err := c.DeleteAllOf(s.ctx, u, client.InNamespace(s.ns)); err != nil {
				s.t.Logf("delete the %ss of %s: %v", gvk.Kind, s.ns, err)
			}
		}
	}
}

func workloadClients() []client.Client {
	out := make([]client.Client, len(workloads))
	for i, w := range workloads {
		out[i] = w.Client
	}
	return out
}

func (s *story) create(obj client.Object) {
	s.t.Helper()
	s.g.Expect(env.Client.Create(s.ctx, obj)).To(Succeed())
}

const kptfile = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: %s\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n"

// publish publishes revision n of the catalog package pkg: a ConfigMap named pkg whose data says
// n, and extra files.
func (s *story) publish(pkg string, n int, extra map[string]string) {
	files := map[string]string{
		pkg + "/Kptfile":        fmt.Sprintf(kptfile, pkg),
		pkg + "/configmap.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  revision: \"%d\"\n", pkg, n),
	}
	for name, content := range extra {
		files[pkg+"/"+name] = content
	}
	gittest.Commit(s.t, s.catalog, pkg, files, fmt.Sprintf("%s/v%d", pkg, n))
}

// unavailable is a Deployment app that never becomes available: envtest runs no kubelet, so Flux
// applies it and then waits for its health in vain.
func unavailable() map[string]string {
	return map[string]string{"deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  selector: {matchLabels: {app: app}}\n" +
		"  template:\n    metadata: {labels: {app: app}}\n    spec:\n      containers: [{name: app, image: app:never}]\n"}
}

// packageSet is a PackageSet named pkg of the catalog package pkg at v1 over every cluster of the
// story, one deployment per cluster named pkg-<cluster>, rolled out with ru (nil: AllAtOnce).
func (s *story) packageSet(pkg string, ru *v1alpha1.RollingUpdate) *v1alpha1.PackageSet {
	set := &v1alpha1.PackageSet{
		ObjectMeta: metav1.ObjectMeta{Name: pkg, Namespace: s.ns},
		Spec: v1alpha1.PackageSetSpec{
			Package:  v1alpha1.PackageReference{Repository: &v1alpha1.LocalObjectReference{Name: "catalog"}, Name: pkg, Revision: "v1"},
			Targets:  v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{Clusters: &v1alpha1.ClusterGenerator{}}},
			Template: v1alpha1.DeploymentTemplate{NameExpr: fmt.Sprintf("'%s-' + target.name", pkg), Namespace: s.ns},
		},
	}
	if ru != nil {
		set.Spec.Strategy = v1alpha1.RolloutStrategy{Type: v1alpha1.StrategyRollingUpdate, RollingUpdate: ru}
	}
	return set
}

// update changes obj with mutate, retrying on conflicts with the controller's writes.
func (s *story) update(obj client.Object, mutate func()) {
	s.t.Helper()
	s.g.Eventually(func() error {
		if err := env.Client.Get(s.ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate()
		return env.Client.Update(s.ctx, obj)
	}, wait, 200*time.Millisecond).Should(Succeed())
}

// resume releases a paused rollout, as `flotilla rollout resume` does: a new value of the
// flotilla.dev/resume annotation.
func (s *story) resume(set *v1alpha1.PackageSet, value string) {
	s.update(set, func() { set.Annotations = map[string]string{v1alpha1.AnnotationResume: value} })
}

// getSet reads set again.
func (s *story) getSet(set *v1alpha1.PackageSet) *v1alpha1.PackageSet {
	s.g.Expect(env.Client.Get(s.ctx, client.ObjectKeyFromObject(set), set)).To(Succeed())
	return set
}

// rollout reads the set's rollout status.
func (s *story) rollout(set *v1alpha1.PackageSet) *v1alpha1.RolloutStatus {
	return s.getSet(set).Status.Rollout
}

// expectReady waits until the set is Ready at its current generation: its rollout is complete.
func (s *story) expectReady(set *v1alpha1.PackageSet) {
	s.t.Helper()
	s.g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(s.ctx, client.ObjectKeyFromObject(set), set)).To(Succeed())
		c := meta.FindStatusCondition(set.Status.Conditions, v1alpha1.ConditionReady)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
		g.Expect(c.ObservedGeneration).To(Equal(set.Generation))
	}, wait, time.Second).Should(Succeed(), "PackageSet %s becomes Ready", set.Name)
}

// pinned is the revision the set's deployment on cluster pins.
func (s *story) pinned(set *v1alpha1.PackageSet, cluster string) string {
	pd := &v1alpha1.PackageDeployment{}
	s.g.Expect(env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: set.Name + "-" + cluster}, pd)).To(Succeed())
	return pd.Spec.Package.Revision
}

// probe names the ConfigMap of a package on one cluster's workload server.
type probe struct {
	cluster int // index into clusters and workloads
	pkg     string
}

func (p probe) String() string { return p.pkg + "@" + clusters[p.cluster] }

// on is the probes of pkg's ConfigMap on the named clusters.
func on(pkg string, names ...string) []probe {
	out := make([]probe, 0, len(names))
	for _, n := range names {
		for i, c := range clusters {
			if c == n {
				out = append(out, probe{cluster: i, pkg: pkg})
			}
		}
	}
	return out
}

// revision is what the ConfigMap of p says on its workload server: its revision, "" when it does
// not exist.
func (s *story) revision(p probe) string {
	cm := &corev1.ConfigMap{}
	err := workloads[p.cluster].Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: p.pkg}, cm)
	switch {
	case apierrors.IsNotFound(err):
		return ""
	case err != nil:
		return "error: " + err.Error()
	}
	return cm.Data["revision"]
}

// revisions is the revision of pkg on every cluster, in the order of clusters.
func (s *story) revisions(pkg string) func() []string {
	return func() []string {
		out := make([]string, len(clusters))
		for i := range clusters {
			out[i] = s.revision(probe{cluster: i, pkg: pkg})
		}
		return out
	}
}

// deployed reports whether the Deployment app (see unavailable) exists on the cluster's workload
// server.
func (s *story) deployed(cluster string) bool {
	for i, c := range clusters {
		if c == cluster {
			err := workloads[i].Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "app"}, &appsv1.Deployment{})
			s.g.Expect(client.IgnoreNotFound(err)).To(Succeed())
			return err == nil
		}
	}
	s.t.Fatalf("no cluster %s", cluster)
	return false
}

// recording is what the workload servers showed over time: a sample of every probe every
// 200 ms, from record until stop. Orders are asserted on it, not on flotilla's objects: what
// counts is when Flux really applied a revision to a server.
type recording struct {
	probes  []probe
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	samples []map[probe]string
}

// record starts sampling probes in the order given. List the probes expected to change last
// first: a sample then never shows a later probe changed and an earlier one not when they
// changed in the expected order, however close together, so order assertions cannot flake.
func (s *story) record(probes ...probe) *recording {
	ctx, cancel := context.WithCancel(s.ctx)
	r := &recording{probes: probes, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			sample := map[probe]string{}
			for _, p := range probes {
				sample[p] = s.revision(p)
			}
			r.mu.Lock()
			r.samples = append(r.samples, sample)
			r.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	s.t.Cleanup(r.stop)
	return r
}

// stop ends the recording (after one last sample).
func (r *recording) stop() {
	r.cancel()
	<-r.done
}

// expectBefore asserts, on a stopped recording, that every probe of earlier showed rev before
// any probe of later did: no sample shows one of later at rev while one of earlier is not, and
// some sample shows all of earlier at rev and none of later (they did not move in one instant).
func (s *story) expectBefore(r *recording, rev string, earlier, later []probe) {
	s.t.Helper()
	apart := false
	for k, sample := range r.samples {
		allEarlier, anyLater := true, false
		for _, p := range earlier {
			allEarlier = allEarlier && sample[p] == rev
		}
		for _, p := range later {
			anyLater = anyLater || sample[p] == rev
		}
		if anyLater && !allEarlier {
			s.t.Fatalf("revision %s reached %v before %v: sample %d of %d shows %v", rev, later, earlier, k, len(r.samples), sample)
		}
		apart = apart || (allEarlier && !anyLater)
	}
	if !apart {
		s.t.Fatalf("revision %s never reached %v without %v: it moved them at once (%d samples)", rev, earlier, later, len(r.samples))
	}
}

// expectNever asserts, on a stopped recording, that no sample showed any of probes at rev.
func (s *story) expectNever(r *recording, rev string, probes []probe) {
	s.t.Helper()
	for k, sample := range r.samples {
		for _, p := range probes {
			if sample[p] == rev {
				s.t.Fatalf("%v showed revision %s in sample %d of %d: %v", p, rev, k, len(r.samples), sample)
			}
		}
	}
}
