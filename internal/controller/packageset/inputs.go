package packageset

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/fleet"
	"github.com/flotilla-dev/flotilla/internal/generate"
	"github.com/flotilla-dev/flotilla/internal/gitremote"
)

// inputs gathers what the generator reads: the namespace's clusters, the objects its objects
// generators name, and the blueprint revision.
func (r *Reconciler) inputs(ctx context.Context, set *v1alpha1.PackageSet) (generate.Inputs, error) {
	if err := generate.Check(set); err != nil {
		return generate.Inputs{}, err
	}
	in := generate.Inputs{Set: set}
	var clusters v1alpha1.WorkloadClusterList
	if err := r.Client.List(ctx, &clusters, client.InNamespace(set.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return in, fmt.Errorf("list clusters: %w", err)
	}
	for _, c := range clusters.Items {
		in.Clusters = append(in.Clusters, generate.Cluster{Name: c.Name, Namespace: c.Namespace, Labels: c.Labels, Annotations: c.Annotations, Context: c.Spec.Context})
	}
	kinds := objectKinds(set)
	if err := r.checkKinds(kinds); err != nil {
		return in, err
	}
	for _, gvk := range kinds {
		objs, err := r.objects(ctx, set.Namespace, gvk)
		if err != nil {
			return in, err
		}
		in.Objects = append(in.Objects, objs...)
	}
	upstream, err := r.upstream(ctx, set)
	if err != nil {
		return in, err
	}
	in.Upstream = upstream
	return in, nil
}

// objects lists the objects of one (allowed) kind in the set's namespace, and only there: a
// tenant's set reads nothing of other namespaces. It makes sure changes to that kind re-reconcile
// the sets that use it.
func (r *Reconciler) objects(ctx context.Context, namespace string, gvk schema.GroupVersionKind) ([]*unstructured.Unstructured, error) {
	if err := r.watchKind(gvk.GroupKind()); err != nil {
		return nil, fmt.Errorf("watch %s: %w", gvk.Kind, err)
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := r.APIReader.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("list %s %s: %w", gvk.GroupVersion(), gvk.Kind, err)
	}
	out := make([]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// objectKinds lists the kinds the set's objects generators select.
func objectKinds(set *v1alpha1.PackageSet) []schema.GroupVersionKind {
	leaves := append([]v1alpha1.LeafGenerator{set.Spec.Targets.LeafGenerator}, set.Spec.Targets.Matrix...)
	var out []schema.GroupVersionKind
	for _, l := range leaves {
		if o := l.Objects; o != nil {
			out = append(out, schema.FromAPIVersionAndKind(o.APIVersion, o.Kind))
		}
	}
	return out
}

var errRepositoryNotFound = errors.New("repository not found")

// upstream resolves the blueprint revision the set deploys.
func (r *Reconciler) upstream(ctx context.Context, set *v1alpha1.PackageSet) (generate.Upstream, error) {
	ref := set.Spec.Package
	if ref.Repository == nil {
		return generate.Upstream{}, fmt.Errorf("spec.package.repository is required: the blueprint's repository cannot default to a cluster's")
	}
	repo := &v1alpha1.Repository{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: set.Namespace, Name: ref.Repository.Name}, repo); err != nil {
		if apierrors.IsNotFound(err) {
			return generate.Upstream{}, fmt.Errorf("%w: Repository %s/%s does not exist", errRepositoryNotFound, set.Namespace, ref.Repository.Name)
		}
		return generate.Upstream{}, err
	}
	remote, err := gitremote.Remote(ctx, r.APIReader, repo)
	if err != nil {
		return generate.Upstream{}, err
	}
	pd := &v1alpha1.PackageDeployment{Spec: v1alpha1.PackageDeploymentSpec{Package: ref}}
	rev, err := fleet.Resolve(ctx, r.Git, remote, repo, pd, nil)
	if err != nil {
		return generate.Upstream{}, fmt.Errorf("blueprint %s %s: %w", ref.Name, ref.Revision, err)
	}
	return generate.Upstream{Repository: repo.Name, Name: ref.Name, Revision: ref.Revision, Tag: rev.Tag, Commit: rev.Commit, Number: rev.Revision}, nil
}
