// Package patch is the one write path of a reconciler for its object: it remembers the object as
// read and, at the end of the reconcile, patches metadata (finalizers) and status only where they
// changed.
package patch

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// patchTimeout bounds the final patch of a reconcile.
const patchTimeout = 15 * time.Second

// Helper patches one object.
type Helper struct {
	client client.Client
	before client.Object
}

// New remembers obj as read from the API server.
func New(c client.Client, obj client.Object) *Helper {
	return &Helper{client: c, before: obj.DeepCopyObject().(client.Object)}
}

// Patch writes the changes made to obj since New: finalizers and other metadata with an
// optimistic lock (so another writer's finalizer is never dropped), status through the status
// subresource. An object that is gone after its last finalizer was removed is not an error.
func (h *Helper) Patch(ctx context.Context, obj client.Object) error {
	// The reconcile may have run out of time (a hanging git server): the status saying so must
	// still be written.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), patchTimeout)
	defer cancel()
	statusChanged, err := statusChanged(h.before, obj)
	if err != nil {
		return err
	}
	// The metadata patch overwrites obj with the server's answer: the status to write is kept.
	var desired client.Object
	if statusChanged {
		desired = obj.DeepCopyObject().(client.Object)
	}
	if !equality.Semantic.DeepEqual(h.before.GetFinalizers(), obj.GetFinalizers()) ||
		!equality.Semantic.DeepEqual(h.before.GetAnnotations(), obj.GetAnnotations()) {
		if err := h.client.Patch(ctx, obj, client.MergeFromWithOptions(h.before, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("patch %s metadata: %w", obj.GetName(), err)
		}
		if obj.GetDeletionTimestamp() != nil && len(obj.GetFinalizers()) == 0 {
			return nil
		}
	}
	if !statusChanged {
		return nil
	}
	if err := h.client.Status().Patch(ctx, desired, client.MergeFrom(h.before)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("patch %s status: %w", obj.GetName(), err)
	}
	return nil
}

// statusChanged reports whether after's status differs from before's. Equal typed statuses (the
// common case: a reconcile that found nothing new) are told apart without converting both
// objects; statuses that differ are compared as the API server sees them (their unstructured
// form), so a difference that vanishes on the way (a nil slice and an empty one, say) is no
// change either way.
func statusChanged(before, after client.Object) (bool, error) {
	if b, a := statusOf(before), statusOf(after); b.IsValid() && a.IsValid() {
		// Identical values are semantically equal too: reflect's comparison says so without the
		// semantic one's lookup of a custom equality for every value it walks.
		if bi, ai := b.Interface(), a.Interface(); reflect.DeepEqual(bi, ai) || equality.Semantic.DeepEqual(bi, ai) {
			return false, nil
		}
	}
	return changed(before, after, "status")
}

// statusOf is obj's Status field, or the zero Value when it has none.
func statusOf(obj client.Object) reflect.Value {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}
	}
	return v.Elem().FieldByName("Status")
}

func changed(before, after client.Object, field string) (bool, error) {
	b, err := runtime.DefaultUnstructuredConverter.ToUnstructured(before)
	if err != nil {
		return false, err
	}
	a, err := runtime.DefaultUnstructuredConverter.ToUnstructured(after)
	if err != nil {
		return false, err
	}
	return !equality.Semantic.DeepEqual(b[field], a[field]), nil
}
