package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/gittest"
)

// A rollout over three clusters (one canary) moves step by step only as Flux reports the previous
// step healthy, pauses after the canary until resumed, and halts when a revision cannot become
// healthy, touching nothing else.
func TestRollingUpdateFollowsFluxHealth(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := "e2e-rollout"
	g.Expect(namespace(ctx, ns)).To(Succeed())
	srv := gittest.NewServer(t)
	srv.CreateRepo(t, "catalog")
	catalog := srv.Dir("catalog")
	publish := func(n int, data string) {
		gittest.Commit(t, catalog, "app", map[string]string{
			"app/Kptfile":        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n",
			"app/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n" + data,
		}, fmt.Sprintf("app/v%d", n))
	}
	publish(1, "data:\n  revision: \"1\"\n")
	// v2 cannot be applied: a ConfigMap's data must be strings.
	publish(2, "data:\n  revision:\n    nested: not-a-string\n")

	create := func(obj client.Object) { g.Expect(env.Client.Create(ctx, obj)).To(Succeed()) }
	create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kubeconfig", Namespace: ns}, Data: map[string][]byte{"value": kubeconfig}})
	create(&v1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "catalog", Namespace: ns},
		Spec: v1alpha1.RepositorySpec{Git: &v1alpha1.GitRepository{URL: srv.URL + "/catalog.git"}, Interval: &metav1.Duration{Duration: 5 * time.Second}}})
	clusters := []string{"w1", "w2", "w3"}
	for _, name := range clusters {
		srv.CreateRepo(t, name)
		for _, n := range []string{"flux-" + name, "app-" + name} {
			g.Expect(workload.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})).To(Succeed())
		}
		create(&v1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: v1alpha1.RepositorySpec{Git: &v1alpha1.GitRepository{URL: srv.URL + "/" + name + ".git"}, Interval: &metav1.Duration{Duration: 5 * time.Second}}})
		labels := map[string]string{"site-type": "edge"}
		if name == "w1" {
			labels["wave"] = "canary"
		}
		create(&v1alpha1.WorkloadCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
			Spec: v1alpha1.WorkloadClusterSpec{
				Repository:          v1alpha1.LocalObjectReference{Name: name},
				Sync:                v1alpha1.ClusterSync{Engine: v1alpha1.EngineFlux, Flux: &v1alpha1.FluxSync{Namespace: "flux-" + name, Interval: &metav1.Duration{Duration: 2 * time.Second}}},
				KubeConfigSecretRef: &v1alpha1.SecretKeyReference{Name: "kubeconfig", Key: "value"},
			},
		})
	}
	one := intstr.FromInt32(1)
	set := &v1alpha1.PackageSet{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: v1alpha1.PackageSetSpec{
			Package:  v1alpha1.PackageReference{Repository: &v1alpha1.LocalObjectReference{Name: "catalog"}, Name: "app", Revision: "v1"},
			Targets:  v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{Clusters: &v1alpha1.ClusterGenerator{Selector: v1alpha1.LabelSelector{MatchLabels: map[string]string{"site-type": "edge"}}}}},
			Template: v1alpha1.DeploymentTemplate{NameExpr: "'app-' + target.name", NamespaceExpr: "'app-' + target.name"},
			Strategy: v1alpha1.RolloutStrategy{Type: v1alpha1.StrategyRollingUpdate, RollingUpdate: &v1alpha1.RollingUpdate{
				Steps: []v1alpha1.RolloutStep{
					{Selector: &v1alpha1.LabelSelector{MatchLabels: map[string]string{"wave": "canary"}}, MaxUnavailable: &one, Pause: true},
					{MaxUnavailable: &one},
				},
				HealthTimeout: &metav1.Duration{Duration: 45 * time.Second},
			}},
		},
	}
	create(set)

	revision := func(cluster string) string {
		cm := &corev1.ConfigMap{}
		err := workload.Client.Get(ctx, client.ObjectKey{Namespace: "app-" + cluster, Name: "app"}, cm)
		if apierrors.IsNotFound(err) {
			return ""
		}
		g.Expect(err).NotTo(HaveOccurred())
		return cm.Data["revision"]
	}
	revisions := func() []string { return []string{revision("w1"), revision("w2"), revision("w3")} }
	rollout := func() *v1alpha1.RolloutStatus {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(set), set)).To(Succeed())
		return set.Status.Rollout
	}

	// Step 1, the canary, then a pause: the others get nothing.
	g.Eventually(revisions, waitLong, time.Second).Should(Equal([]string{"1", "", ""}))
	g.Eventually(func() bool { r := rollout(); return r != nil && r.Paused }, waitLong, time.Second).Should(BeTrue())
	g.Consistently(revisions, 10*time.Second, time.Second).Should(Equal([]string{"1", "", ""}))

	// Resume: step 2 moves w2 and w3, one at a time.
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(set), set)).To(Succeed())
	set.Annotations = map[string]string{v1alpha1.AnnotationResume: "1"}
	g.Expect(env.Client.Update(ctx, set)).To(Succeed())
	g.Eventually(revisions, 2*waitLong, time.Second).Should(Equal([]string{"1", "1", "1"}))

	// v2 cannot become healthy: the canary takes it, the rollout halts and names it.
	g.Eventually(func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(set), set); err != nil {
			return err
		}
		set.Spec.Package.Revision = "v2"
		return env.Client.Update(ctx, set)
	}).Should(Succeed())
	g.Eventually(func(g Gomega) {
		r := rollout()
		g.Expect(r).NotTo(BeNil())
		g.Expect(r.Halted).To(BeTrue(), "rollout: %+v", r)
		g.Expect(r.FailedTargets).To(ConsistOf("app-w1"))
		g.Expect(meta.IsStatusConditionTrue(set.Status.Conditions, v1alpha1.ConditionStalled)).To(BeTrue())
	}, 3*waitLong, time.Second).Should(Succeed())
	w2 := &v1alpha1.PackageDeployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app-w2"}, w2)).To(Succeed())
	g.Expect(w2.Spec.Package.Revision).To(Equal("v1"), "a halted rollout touches nothing further")
	g.Consistently(func() []string { return revisions()[1:] }, 5*time.Second, time.Second).Should(Equal([]string{"1", "1"}))
}

// onFailure Rollback with the real Flux controllers: v2 applies on the first cluster but never
// becomes healthy (its Deployment has no kubelet to run it), so after the health timeout the
// rollout returns every moved target to v1, the last revision healthy there, records it, and
// halts on v2; the second cluster never gets v2.
func TestRollbackReturnsToTheLastHealthyRevision(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := "e2e-rollback"
	g.Expect(namespace(ctx, ns)).To(Succeed())
	srv := gittest.NewServer(t)
	srv.CreateRepo(t, "catalog")
	catalog := srv.Dir("catalog")
	kptfile := "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n"
	gittest.Commit(t, catalog, "app", map[string]string{
		"app/Kptfile":        kptfile,
		"app/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  revision: \"1\"\n",
	}, "app/v1")
	gittest.Commit(t, catalog, "app", map[string]string{
		"app/Kptfile":        kptfile,
		"app/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  revision: \"2\"\n",
		"app/deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  selector: {matchLabels: {app: app}}\n" +
			"  template:\n    metadata: {labels: {app: app}}\n    spec:\n      containers: [{name: app, image: app:2}]\n",
	}, "app/v2")

	create := func(obj client.Object) { g.Expect(env.Client.Create(ctx, obj)).To(Succeed()) }
	create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kubeconfig", Namespace: ns}, Data: map[string][]byte{"value": kubeconfig}})
	create(&v1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "catalog", Namespace: ns},
		Spec: v1alpha1.RepositorySpec{Git: &v1alpha1.GitRepository{URL: srv.URL + "/catalog.git"}, Interval: &metav1.Duration{Duration: 5 * time.Second}}})
	for _, name := range []string{"r1", "r2"} {
		srv.CreateRepo(t, name)
		for _, n := range []string{"flux-" + name, "app-" + name} {
			g.Expect(workload.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})).To(Succeed())
		}
		create(&v1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: v1alpha1.RepositorySpec{Git: &v1alpha1.GitRepository{URL: srv.URL + "/" + name + ".git"}, Interval: &metav1.Duration{Duration: 5 * time.Second}}})
		create(&v1alpha1.WorkloadCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"site-type": "edge"}},
			Spec: v1alpha1.WorkloadClusterSpec{
				Repository:          v1alpha1.LocalObjectReference{Name: name},
				Sync:                v1alpha1.ClusterSync{Engine: v1alpha1.EngineFlux, Flux: &v1alpha1.FluxSync{Namespace: "flux-" + name, Interval: &metav1.Duration{Duration: 2 * time.Second}}},
				KubeConfigSecretRef: &v1alpha1.SecretKeyReference{Name: "kubeconfig", Key: "value"},
			},
		})
	}
	one := intstr.FromInt32(1)
	set := &v1alpha1.PackageSet{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: v1alpha1.PackageSetSpec{
			Package:  v1alpha1.PackageReference{Repository: &v1alpha1.LocalObjectReference{Name: "catalog"}, Name: "app", Revision: "v1"},
			Targets:  v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{Clusters: &v1alpha1.ClusterGenerator{Selector: v1alpha1.LabelSelector{MatchLabels: map[string]string{"site-type": "edge"}}}}},
			Template: v1alpha1.DeploymentTemplate{NameExpr: "'app-' + target.name", NamespaceExpr: "'app-' + target.name"},
			Strategy: v1alpha1.RolloutStrategy{Type: v1alpha1.StrategyRollingUpdate, RollingUpdate: &v1alpha1.RollingUpdate{
				Steps: []v1alpha1.RolloutStep{{MaxUnavailable: &one}},
				// Long enough for a loaded CI machine to sync v1 (twice failed at 30 s in a
				// full make test); v2 never becomes healthy, so the rollback waits this long.
				HealthTimeout: &metav1.Duration{Duration: 60 * time.Second},
				OnFailure:     v1alpha1.OnFailureRollback,
				RollbackScope: v1alpha1.RollbackAll,
			}},
		},
	}
	create(set)
	// On failure: what the set, its deployments and the clusters said at the end.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		var cur v1alpha1.PackageSet
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(set), &cur)
		t.Logf("set status: %+v", cur.Status)
		var pds v1alpha1.PackageDeploymentList
		_ = env.Client.List(ctx, &pds, client.InNamespace(ns))
		for _, pd := range pds.Items {
			t.Logf("deployment %s: package %+v, status %+v", pd.Name, pd.Spec.Package, pd.Status)
		}
		var wcs v1alpha1.WorkloadClusterList
		_ = env.Client.List(ctx, &wcs, client.InNamespace(ns))
		for _, wc := range wcs.Items {
			t.Logf("cluster %s: status %+v", wc.Name, wc.Status)
		}
	})
	revision := func(cluster string) string {
		cm := &corev1.ConfigMap{}
		if err := workload.Client.Get(ctx, client.ObjectKey{Namespace: "app-" + cluster, Name: "app"}, cm); err != nil {
			return ""
		}
		return cm.Data["revision"]
	}
	revisions := func() []string { return []string{revision("r1"), revision("r2")} }
	g.Eventually(revisions, 2*waitLong, time.Second).Should(Equal([]string{"1", "1"}))
	// Both healthy at v1 (the rollout of v1 is done) before v2 is asked for.
	g.Eventually(func() bool {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(set), set)).To(Succeed())
		return meta.IsStatusConditionTrue(set.Status.Conditions, v1alpha1.ConditionReady)
	}, 2*waitLong, time.Second).Should(BeTrue())

	g.Eventually(func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(set), set); err != nil {
			return err
		}
		set.Spec.Package.Revision = "v2"
		return env.Client.Update(ctx, set)
	}).Should(Succeed())
	g.Eventually(revisions, waitLong, time.Second).Should(Equal([]string{"2", "1"}), "the first target takes v2, which applies")
	moved := &v1alpha1.PackageDeployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app-r1"}, moved)).To(Succeed())
	g.Expect(moved.Annotations).To(HaveKeyWithValue("flotilla.dev/last-healthy", "v1"), "moving it recorded the healthy revision it left")
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(set), set)).To(Succeed())
		r := set.Status.Rollout
		g.Expect(r).NotTo(BeNil())
		g.Expect(r.Halted).To(BeTrue(), "rollout: %+v", r)
		g.Expect(r.RolledBack).To(ConsistOf(v1alpha1.RolledBackTarget{Target: "app-r1", From: "app/v2", To: "app/v1"}))
		c := meta.FindStatusCondition(set.Status.Conditions, v1alpha1.ConditionStalled)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal("RolledBack"))
	}, 3*waitLong, time.Second).Should(Succeed())
	g.Eventually(revisions, waitLong, time.Second).Should(Equal([]string{"1", "1"}), "r1 runs v1 again")
	g.Consistently(func() string { return revision("r2") }, 10*time.Second, time.Second).Should(Equal("1"), "r2 never got v2")
	deployment := &unstructured.Unstructured{}
	deployment.SetAPIVersion("apps/v1")
	deployment.SetKind("Deployment")
	g.Eventually(func() bool {
		return apierrors.IsNotFound(workload.Client.Get(ctx, client.ObjectKey{Namespace: "app-r1", Name: "app"}, deployment))
	}, waitLong, time.Second).Should(BeTrue(), "v2's Deployment is pruned by the rollback")
}
