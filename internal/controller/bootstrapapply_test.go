package controller_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/apiproxy"
	"github.com/flotilla-dev/flotilla/internal/render"
)

// TestRootSyncObjectsAreAppliedOnce: a cluster reconcile that changes nothing does not apply its
// root sync objects again (at 1,000 clusters every reconcile was two applies to a workload
// cluster), nor does the periodic check (every 3 s here, 10 minutes by default) while they are as
// applied; an edit in the workload cluster is undone at the next check, and a change of what they
// say is applied at once. The workload cluster is the test API server behind a proxy that counts
// the applies.
func TestRootSyncObjectsAreAppliedOnce(t *testing.T) {
	f := newFixture(t)
	var applies atomic.Int32
	srv := apiproxy.Serve(t, env.Config, func(_ http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodPatch {
			applies.Add(1)
		}
		return false
	})
	kubeconfig := apiproxy.Kubeconfig(t, srv)

	f.repository("catalog")
	f.repository("edge01")
	f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kubeconfig", Namespace: f.ns}, Data: map[string][]byte{"value": kubeconfig}})
	c := f.cluster(func(c *v1alpha1.WorkloadCluster) {
		c.Spec.KubeConfigSecretRef = &v1alpha1.SecretKeyReference{Name: "kubeconfig", Key: "value"}
		// Flux objects in the test's own namespace: no other test applies them.
		c.Spec.Sync.Engine = v1alpha1.EngineFlux
		c.Spec.Sync.Flux = &v1alpha1.FluxSync{Namespace: f.ns}
	})
	f.deployment("edge01-nginx", "nginx-hello", "v1")
	f.condition(c, func() []metav1.Condition { return c.Status.Conditions }, v1alpha1.ConditionBootstrapped, metav1.ConditionTrue, "Applied")
	f.clusterWith(ConsistOf(HaveField("Deployment", "edge01-nginx")))
	time.Sleep(3 * time.Second) // let the reconciles of the publish play out
	applied := applies.Load()
	f.g.Expect(applied).To(BeNumerically(">=", 2), "the GitRepository and the Kustomization")

	// Reconciles that change nothing: the annotation brings the cluster back each time.
	for i := range 3 {
		f.g.Expect(env.Client.Get(f.ctx, f.key("edge01"), c)).To(Succeed())
		before := c.DeepCopy()
		c.SetAnnotations(map[string]string{"test/poke": string(rune('a' + i))})
		f.g.Expect(env.Client.Patch(f.ctx, c, client.MergeFrom(before))).To(Succeed())
		time.Sleep(2 * time.Second)
	}
	f.g.Expect(applies.Load()).To(Equal(applied), "root sync objects applied again with nothing changed (6 s: two checks)")

	// An edit in the workload cluster is undone by the next check.
	ks := &unstructured.Unstructured{}
	ks.SetGroupVersionKind(schema.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"})
	f.g.Expect(env.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: render.BootstrapName}, ks)).To(Succeed())
	path, _, _ := unstructured.NestedString(ks.Object, "spec", "path")
	f.g.Expect(path).NotTo(BeEmpty())
	edited := ks.DeepCopy()
	f.g.Expect(unstructured.SetNestedField(edited.Object, "./somewhere-else", "spec", "path")).To(Succeed())
	f.g.Expect(env.Client.Update(f.ctx, edited)).To(Succeed())
	f.g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: render.BootstrapName}, ks)).To(Succeed())
		got, _, _ := unstructured.NestedString(ks.Object, "spec", "path")
		g.Expect(got).To(Equal(path))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed(), "the edited root Kustomization restored")
	f.g.Expect(applies.Load()).To(BeNumerically(">", applied))
	applied = applies.Load()

	// A change of what they say is applied at once.
	f.g.Expect(env.Client.Get(f.ctx, f.key("edge01"), c)).To(Succeed())
	before := c.DeepCopy()
	c.Spec.Sync.Flux.Interval = &metav1.Duration{Duration: 5 * time.Minute}
	f.g.Expect(env.Client.Patch(f.ctx, c, client.MergeFrom(before))).To(Succeed())
	f.g.Eventually(applies.Load, time.Minute, 200*time.Millisecond).Should(BeNumerically(">", applied))
}
