package enqueue

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

func deployment(name, cluster string) *v1alpha1.PackageDeployment {
	return &v1alpha1.PackageDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "fleet"},
		Spec:       v1alpha1.PackageDeploymentSpec{Cluster: v1alpha1.LocalObjectReference{Name: cluster}},
	}
}

func toCluster(_ context.Context, o client.Object) []reconcile.Request {
	pd := o.(*v1alpha1.PackageDeployment)
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: pd.Namespace, Name: pd.Spec.Cluster.Name}}}
}

// A burst of events for deployments of one cluster is one request, ready after the delay; a
// cluster of its own is another request.
func TestCoalescedMakesOneRequestPerBurst(t *testing.T) {
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	h := Coalesced(toCluster, 200*time.Millisecond)
	ctx := context.Background()
	start := time.Now()
	for _, name := range []string{"a", "b", "c"} {
		h.Create(ctx, event.CreateEvent{Object: deployment(name, "edge01")}, q)
	}
	h.Update(ctx, event.UpdateEvent{ObjectOld: deployment("a", "edge01"), ObjectNew: deployment("a", "edge01")}, q)
	h.Delete(ctx, event.DeleteEvent{Object: deployment("d", "edge02")}, q)

	if n := q.Len(); n != 0 {
		t.Fatalf("%d requests ready before the delay, want 0", n)
	}
	got := map[string]bool{}
	for range 2 {
		req, _ := q.Get()
		got[req.Name] = true
		q.Done(req)
	}
	if waited := time.Since(start); waited < 200*time.Millisecond {
		t.Errorf("requests ready after %s, want at least the 200ms delay", waited)
	}
	if !got["edge01"] || !got["edge02"] {
		t.Errorf("got requests for %v, want edge01 and edge02", got)
	}
	if n := q.Len(); n != 0 {
		t.Errorf("%d more requests after the burst, want none (one per cluster)", n)
	}
}

// An update that moves a deployment to another cluster reaches both clusters.
func TestCoalescedMapsOldAndNewObject(t *testing.T) {
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	Coalesced(toCluster, time.Millisecond).Update(context.Background(),
		event.UpdateEvent{ObjectOld: deployment("a", "edge01"), ObjectNew: deployment("a", "edge02")}, q)
	got := map[string]bool{}
	for range 2 {
		req, _ := q.Get()
		got[req.Name] = true
		q.Done(req)
	}
	if !got["edge01"] || !got["edge02"] {
		t.Errorf("got requests for %v, want edge01 and edge02", got)
	}
}

func TestNotStatusOnly(t *testing.T) {
	base := deployment("a", "edge01")
	base.Generation = 1
	now := metav1.Now()
	cases := map[string]struct {
		change func(pd *v1alpha1.PackageDeployment)
		want   bool
	}{
		"status only": {func(pd *v1alpha1.PackageDeployment) {
			pd.Status.DeployedPackagesRevision = 3
			pd.ResourceVersion = "2"
		}, false},
		"spec (generation)":  {func(pd *v1alpha1.PackageDeployment) { pd.Generation = 2 }, true},
		"label":              {func(pd *v1alpha1.PackageDeployment) { pd.Labels = map[string]string{"a": "b"} }, true},
		"annotation":         {func(pd *v1alpha1.PackageDeployment) { pd.Annotations = map[string]string{"flotilla.dev/resume": "1"} }, true},
		"finalizer":          {func(pd *v1alpha1.PackageDeployment) { pd.Finalizers = []string{"x"} }, true},
		"deletion timestamp": {func(pd *v1alpha1.PackageDeployment) { pd.DeletionTimestamp = &now }, true},
		"owner":              {func(pd *v1alpha1.PackageDeployment) { pd.OwnerReferences = []metav1.OwnerReference{{Name: "s"}} }, true},
	}
	p := NotStatusOnly()
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			updated := base.DeepCopy()
			c.change(updated)
			if got := p.Update(event.UpdateEvent{ObjectOld: base, ObjectNew: updated}); got != c.want {
				t.Errorf("Update passes = %v, want %v", got, c.want)
			}
		})
	}
	if !p.Create(event.CreateEvent{Object: base}) || !p.Delete(event.DeleteEvent{Object: base}) {
		t.Error("create and delete events must pass")
	}
}
