package controller_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// Every kind follows kstatus: the cli-utils library computes Current for each kind when it is
// done, InProgress while work goes on or waits for a person's approval, and Failed on an error
// only a person can fix; observedGeneration is current in every state, failures included, and
// Ready=True exactly when kstatus says Current.
func TestKstatusOfEveryKind(t *testing.T) {
	f := newFixture(t)
	f.git.CreateRepo(t, "manual")
	f.repository("catalog")
	f.repository("edge01")
	f.repository("manual")
	down := f.repository("down", func(r *v1alpha1.Repository) { r.Spec.Git.URL = "http://127.0.0.1:1/down.git" })
	noSecret := f.repository("nosecret", func(r *v1alpha1.Repository) {
		r.Spec.Git.URL = f.git.URL + "/catalog.git"
		r.Spec.Git.SecretRef = &v1alpha1.LocalObjectReference{Name: "does-not-exist"}
	})

	ready := f.cluster()
	manual := &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Name: "manual", Namespace: f.ns},
		Spec: v1alpha1.WorkloadClusterSpec{Repository: v1alpha1.LocalObjectReference{Name: "manual"}, Approval: v1alpha1.ApprovalManual}}
	f.create(manual)
	lost := &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Name: "lost", Namespace: f.ns},
		Spec: v1alpha1.WorkloadClusterSpec{Repository: v1alpha1.LocalObjectReference{Name: "missing"}}}
	f.create(lost)

	published := f.deployment("edge01-nginx", "nginx-hello", "v1")
	waiting := f.deployment("manual-nginx", "nginx-hello", "v1", func(pd *v1alpha1.PackageDeployment) { pd.Spec.Cluster.Name = "manual" })
	missing := f.deployment("edge01-v99", "nginx-hello", "v99")

	on := func(cluster string) v1alpha1.Generator {
		return v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{List: []v1alpha1.ListElement{{Cluster: cluster}}}}
	}
	setReady := f.packageSet("crds", on("edge01"), func(s *v1alpha1.PackageSet) { s.Spec.Package.Name, s.Spec.Package.Revision = "crds", "v1" })
	setWaiting := f.packageSet("upf", on("manual"))
	setBroken := f.packageSet("broken", on("edge01"), func(s *v1alpha1.PackageSet) {
		s.Spec.Package.Repository = &v1alpha1.LocalObjectReference{Name: "missing"}
	})

	for _, tc := range []struct {
		obj  client.Object
		want status.Status
	}{
		{&v1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "catalog", Namespace: f.ns}}, status.CurrentStatus},
		{down, status.InProgressStatus},
		{noSecret, status.FailedStatus},
		{ready, status.CurrentStatus},
		{manual, status.InProgressStatus},
		{lost, status.FailedStatus},
		{published, status.CurrentStatus},
		{waiting, status.InProgressStatus},
		{missing, status.FailedStatus},
		{setReady, status.CurrentStatus},
		{setWaiting, status.InProgressStatus},
		{setBroken, status.FailedStatus},
	} {
		gvk, err := apiutil.GVKForObject(tc.obj, env.Client.Scheme())
		f.g.Expect(err).NotTo(HaveOccurred())
		kind := gvk.Kind
		f.g.Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(tc.obj), tc.obj)).To(Succeed())
			content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(tc.obj)
			g.Expect(err).NotTo(HaveOccurred())
			u := &unstructured.Unstructured{Object: content}
			res, err := status.Compute(u)
			g.Expect(err).NotTo(HaveOccurred())
			conds, _, _ := unstructured.NestedSlice(content, "status", "conditions")
			g.Expect(res.Status).To(Equal(tc.want), "%s %s: %s; conditions %v", kind, tc.obj.GetName(), res.Message, conds)
			observed, _, _ := unstructured.NestedInt64(content, "status", "observedGeneration")
			g.Expect(observed).To(Equal(tc.obj.GetGeneration()), "%s %s: observedGeneration", kind, tc.obj.GetName())
			var readyTrue bool
			for _, c := range conds {
				c := c.(map[string]any)
				if c["type"] == v1alpha1.ConditionReady {
					readyTrue = c["status"] == string(metav1.ConditionTrue)
				}
			}
			g.Expect(readyTrue).To(Equal(tc.want == status.CurrentStatus), "%s %s: Ready=True exactly when Current; conditions %v", kind, tc.obj.GetName(), conds)
		}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	}
}
