// Package namespaced confines the controller to a set of namespaces (`flotilla controller
// --watch-namespaces`): the cache watches only those, and the reader that goes past the cache
// (Secrets, ConfigMaps, generator and injector objects) sees nothing elsewhere. With it, the
// controller's ServiceAccount needs a Role in each watched namespace and no cluster-wide access.
package namespaced

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Parse checks a --watch-namespaces list and returns it sorted without duplicates; empty means
// every namespace.
func Parse(namespaces []string) ([]string, error) {
	var out []string
	for _, ns := range namespaces {
		ns = strings.TrimSpace(ns)
		if ns == "" {
			return nil, fmt.Errorf("an empty namespace name")
		}
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return nil, fmt.Errorf("namespace %q: %s", ns, strings.Join(errs, "; "))
		}
		out = append(out, ns)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Cache restricts cache options to namespaces (none: unchanged). The per-namespace settings are
// left empty, so the options' defaults (label selector, transform) apply in each.
func Cache(opts cache.Options, namespaces []string) cache.Options {
	if len(namespaces) == 0 {
		return opts
	}
	opts.DefaultNamespaces = map[string]cache.Config{}
	for _, ns := range namespaces {
		opts.DefaultNamespaces[ns] = cache.Config{}
	}
	return opts
}

// Scope knows the kinds of objects and whether they are namespaced; a controller-runtime client
// is one.
type Scope interface {
	IsObjectNamespaced(obj runtime.Object) (bool, error)
	GroupVersionKindFor(obj runtime.Object) (schema.GroupVersionKind, error)
	RESTMapper() meta.RESTMapper
}

// Reader returns a reader that reads through r only in namespaces (none: r itself). An object
// of a namespaced kind elsewhere is not found; a list elsewhere is empty; a list across all
// namespaces is the union of the lists in each. Objects of cluster-scoped kinds are read as
// they are.
func Reader(r client.Reader, scope Scope, namespaces []string) client.Reader {
	if len(namespaces) == 0 {
		return r
	}
	return &reader{r: r, scope: scope, namespaces: namespaces}
}

type reader struct {
	r          client.Reader
	scope      Scope
	namespaces []string
}

func (n *reader) watched(ns string) bool { return slices.Contains(n.namespaces, ns) }

func (n *reader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if key.Namespace != "" && !n.watched(key.Namespace) {
		namespaced, err := n.scope.IsObjectNamespaced(obj)
		if err != nil {
			return err
		}
		if namespaced {
			return apierrors.NewNotFound(n.resource(obj), key.Name)
		}
	}
	return n.r.Get(ctx, key, obj, opts...)
}

func (n *reader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	namespaced, err := n.scope.IsObjectNamespaced(list)
	if err != nil {
		return err
	}
	if !namespaced {
		return n.r.List(ctx, list, opts...)
	}
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	switch {
	case lo.Namespace != "" && n.watched(lo.Namespace):
		return n.r.List(ctx, list, opts...)
	case lo.Namespace != "":
		return meta.SetList(list, nil)
	}
	if lo.Limit > 0 || lo.Continue != "" {
		return fmt.Errorf("a paged list across namespaces is not supported with --watch-namespaces")
	}
	var items []runtime.Object
	for _, ns := range n.namespaces {
		one, ok := list.DeepCopyObject().(client.ObjectList)
		if !ok {
			return fmt.Errorf("%T is not a list", list)
		}
		if err := n.r.List(ctx, one, append(slices.Clone(opts), client.InNamespace(ns))...); err != nil {
			return err
		}
		got, err := meta.ExtractList(one)
		if err != nil {
			return err
		}
		items = append(items, got...)
	}
	// The union has no single resourceVersion to resume a watch from: leave none.
	list.SetResourceVersion("")
	list.SetContinue("")
	return meta.SetList(list, items)
}

// resource is obj's resource, for a NotFound error worded as the API server's.
func (n *reader) resource(obj client.Object) schema.GroupResource {
	gvk, err := n.scope.GroupVersionKindFor(obj)
	if err != nil {
		return schema.GroupResource{}
	}
	m, err := n.scope.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return schema.GroupResource{Group: gvk.Group, Resource: strings.ToLower(gvk.Kind)}
	}
	return m.Resource.GroupResource()
}
