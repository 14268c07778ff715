package offline

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/crdvalidate"
	"github.com/flotilla-dev/flotilla/internal/gitremote"
	"github.com/flotilla-dev/flotilla/internal/setplan"
)

// FromAPI reads namespace's fleet from a management cluster: its Repositories, WorkloadClusters,
// PackageSets and the PackageDeployments no set generates (render generates those again), the
// Secrets the Repositories name, its ConfigMaps and the objects its sets' generators read. Each
// goes through the same path as a file's document.
func FromAPI(ctx context.Context, c client.Reader, namespace string) (*Fleet, error) {
	validator, err := crdvalidate.New()
	if err != nil {
		return nil, fmt.Errorf("flotilla's CRDs: %w", err)
	}
	f := newFleet()
	f.validator, f.seen = validator, map[string]string{}
	add := func(u *unstructured.Unstructured) error {
		u = u.DeepCopy()
		unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
		unstructured.RemoveNestedField(u.Object, "status")
		doc, err := yaml.Marshal(u.Object)
		if err != nil {
			return err
		}
		return f.addDoc(fmt.Sprintf("the cluster's %s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName()), doc)
	}
	list := func(apiVersion, kind string, keep func(*unstructured.Unstructured) bool) error {
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion(apiVersion)
		l.SetKind(kind + "List")
		if err := c.List(ctx, l, client.InNamespace(namespace)); err != nil {
			return fmt.Errorf("list %s: %w", kind, err)
		}
		for i := range l.Items {
			if keep == nil || keep(&l.Items[i]) {
				if err := add(&l.Items[i]); err != nil {
					return err
				}
			}
		}
		return nil
	}
	flotilla := v1alpha1.GroupVersion.String()
	for _, kind := range []string{"Repository", "WorkloadCluster", "PackageSet", "PackageVariant"} {
		if err := list(flotilla, kind, nil); err != nil {
			return nil, err
		}
	}
	notGenerated := func(u *unstructured.Unstructured) bool { return u.GetLabels()[v1alpha1.LabelPackageSet] == "" }
	if err := list(flotilla, "PackageDeployment", notGenerated); err != nil {
		return nil, err
	}
	if err := list("v1", "ConfigMap", nil); err != nil {
		return nil, err
	}
	kinds := map[string]bool{}
	for _, key := range slices.Sorted(maps.Keys(f.Sets)) {
		for _, gvk := range setplan.ObjectKinds(f.Sets[key]) {
			apiVersion, kind := gvk.ToAPIVersionAndKind()
			if !kinds[apiVersion+" "+kind] {
				kinds[apiVersion+" "+kind] = true
				if err := list(apiVersion, kind, nil); err != nil {
					return nil, err
				}
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(f.Repositories)) {
		_, ref, _ := gitremote.Base(f.Repositories[key])
		if ref == nil || f.Secrets[namespace+"/"+ref.Name] != nil {
			continue
		}
		s := &corev1.Secret{}
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, s)
		if apierrors.IsNotFound(err) {
			continue // the Repository's remote reports it, as the controller does
		}
		if err != nil {
			return nil, fmt.Errorf("read Secret %s/%s: %w", namespace, ref.Name, err)
		}
		f.Secrets[namespace+"/"+ref.Name] = s
	}
	return f, f.validate()
}

// Over returns base with the objects of f in place of base's objects of the same kind, namespace
// and name (and f's other objects added): the changes given as files, over the live fleet.
func (f *Fleet) Over(base *Fleet) (*Fleet, error) {
	out := *base
	out.Repositories, out.Clusters = maps.Clone(base.Repositories), maps.Clone(base.Clusters)
	out.Deployments, out.Sets, out.Secrets = maps.Clone(base.Deployments), maps.Clone(base.Sets), maps.Clone(base.Secrets)
	out.served = maps.Clone(base.served)
	maps.Copy(out.Repositories, f.Repositories)
	maps.Copy(out.Clusters, f.Clusters)
	maps.Copy(out.Deployments, f.Deployments)
	maps.Copy(out.Sets, f.Sets)
	maps.Copy(out.Secrets, f.Secrets)
	if out.served == nil {
		out.served = map[string]*unstructured.Unstructured{}
	}
	maps.Copy(out.served, f.served)
	out.Objects = nil
	replaced := map[string]bool{}
	id := func(u *unstructured.Unstructured) string {
		return u.GetAPIVersion() + " " + u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
	}
	for _, o := range f.Objects {
		replaced[id(o)] = true
	}
	for _, o := range base.Objects {
		if !replaced[id(o)] {
			out.Objects = append(out.Objects, o)
		}
	}
	out.Objects = append(out.Objects, f.Objects...)
	return &out, out.validate()
}
