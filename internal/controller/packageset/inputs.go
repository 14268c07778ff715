package packageset

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/controller/index"
	"github.com/flotilla-dev/flotilla/internal/gitremote"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
	"github.com/flotilla-dev/flotilla/internal/setplan"
)

// reader is what the planning core (setplan) reads, through the API server: the cache for
// flotilla's kinds, past it for Secrets, ConfigMaps and generator objects.
type reader struct{ r *Reconciler }

var _ setplan.Reader = reader{}

func (rd reader) Clusters(ctx context.Context, namespace string) ([]*v1alpha1.WorkloadCluster, error) {
	var list v1alpha1.WorkloadClusterList
	if err := rd.r.Client.List(ctx, &list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := make([]*v1alpha1.WorkloadCluster, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// Objects lists the objects of one kind the operator allows (--objects-generator-kinds) in the
// set's namespace, and only there: a tenant's set reads nothing of other namespaces. It makes sure
// changes to that kind re-reconcile the sets that use it.
func (rd reader) Objects(ctx context.Context, namespace string, gvk schema.GroupVersionKind) ([]*unstructured.Unstructured, error) {
	if err := rd.r.checkKinds([]schema.GroupVersionKind{gvk}); err != nil {
		return nil, err
	}
	if err := rd.r.watchKind(gvk.GroupKind()); err != nil {
		return nil, fmt.Errorf("watch %s: %w", gvk.Kind, err)
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := rd.r.APIReader.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("list %s %s: %w", gvk.GroupVersion(), gvk.Kind, err)
	}
	out := make([]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

func (rd reader) Cluster(ctx context.Context, namespace, name string) (*v1alpha1.WorkloadCluster, error) {
	return get(ctx, rd.r.Client, namespace, name, &v1alpha1.WorkloadCluster{})
}

func (rd reader) Repository(ctx context.Context, namespace, name string) (*v1alpha1.Repository, error) {
	return get(ctx, rd.r.Client, namespace, name, &v1alpha1.Repository{})
}

func (rd reader) Remote(ctx context.Context, repo *v1alpha1.Repository) (pkgrepo.Remote, error) {
	return gitremote.Remote(ctx, rd.r.APIReader, repo)
}

func (rd reader) ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	return get(ctx, rd.r.APIReader, namespace, name, &corev1.ConfigMap{})
}

func (rd reader) Object(ctx context.Context, apiVersion, kind, namespace, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	return get(ctx, rd.r.APIReader, namespace, name, u)
}

func (rd reader) PackageSet(ctx context.Context, namespace, name string) (*v1alpha1.PackageSet, error) {
	return get(ctx, rd.r.Client, namespace, name, &v1alpha1.PackageSet{})
}

func (rd reader) SetDeployments(ctx context.Context, namespace, set string) ([]v1alpha1.PackageDeployment, error) {
	var list v1alpha1.PackageDeploymentList
	if err := rd.r.Client.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{index.DeploymentSet: set}); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// get reads one object, nil when it does not exist.
func get[T client.Object](ctx context.Context, c client.Reader, namespace, name string, obj T) (T, error) {
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		var none T
		return none, nil
	}
	return obj, err
}
