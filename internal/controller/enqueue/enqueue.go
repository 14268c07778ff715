// Package enqueue has the event handlers the reconcilers share beyond controller-runtime's own.
package enqueue

import (
	"context"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Coalesced maps each event with fn, like handler.EnqueueRequestsFromMapFunc, but adds the
// requests after delay. A request already waiting keeps its earlier time, so a burst of events
// for one object (a cluster's deployments resolving one after another, say) becomes one reconcile
// at most delay after the first event, instead of one reconcile per event.
func Coalesced(fn handler.MapFunc, delay time.Duration) handler.EventHandler {
	return &coalesced{fn: fn, delay: delay}
}

type coalesced struct {
	fn    handler.MapFunc
	delay time.Duration
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func (c *coalesced) add(ctx context.Context, q queue, objs ...client.Object) {
	seen := map[reconcile.Request]bool{}
	for _, o := range objs {
		if o == nil {
			continue
		}
		for _, req := range c.fn(ctx, o) {
			if !seen[req] {
				seen[req] = true
				q.AddAfter(req, c.delay)
			}
		}
	}
}

// Create implements handler.EventHandler.
func (c *coalesced) Create(ctx context.Context, e event.CreateEvent, q queue) {
	c.add(ctx, q, e.Object)
}

// Update implements handler.EventHandler: both the old and the new object are mapped.
func (c *coalesced) Update(ctx context.Context, e event.UpdateEvent, q queue) {
	c.add(ctx, q, e.ObjectOld, e.ObjectNew)
}

// Delete implements handler.EventHandler.
func (c *coalesced) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	c.add(ctx, q, e.Object)
}

// Generic implements handler.EventHandler.
func (c *coalesced) Generic(ctx context.Context, e event.GenericEvent, q queue) {
	c.add(ctx, q, e.Object)
}

// NotStatusOnly drops update events that change nothing but status (and the metadata every write
// changes): a reconciler that writes its own object's status must not run again for that write.
// Spec changes (generation), labels, annotations, finalizers, owners and deletion still pass.
func NotStatusOnly() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		if o == nil || n == nil {
			return true
		}
		return o.GetGeneration() != n.GetGeneration() ||
			!maps.Equal(o.GetLabels(), n.GetLabels()) ||
			!maps.Equal(o.GetAnnotations(), n.GetAnnotations()) ||
			!slices.Equal(o.GetFinalizers(), n.GetFinalizers()) ||
			!equality.Semantic.DeepEqual(o.GetOwnerReferences(), n.GetOwnerReferences()) ||
			!o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp())
	}}
}
