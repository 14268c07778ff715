package dashboard

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/scheme"
)

// Watch watches the fleet's four kinds in namespace ns ("" for every namespace) with cfg and
// returns the cache once it holds them all, for New; it stops watching when ctx ends. It needs
// get, list and watch on WorkloadClusters, PackageDeployments, PackageSets and PackageVariants,
// nothing else.
func Watch(ctx context.Context, cfg *rest.Config, ns string) (client.Reader, error) {
	s := scheme.New()
	// A plain list first: a missing permission or CRD is an error now, not an informer retrying
	// in the background while the page stays empty.
	direct, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, err
	}
	for _, l := range []client.ObjectList{&v1alpha1.WorkloadClusterList{}, &v1alpha1.PackageDeploymentList{}, &v1alpha1.PackageSetList{}, &v1alpha1.PackageVariantList{}} {
		if err := direct.List(ctx, l, client.InNamespace(ns), client.Limit(1)); err != nil {
			return nil, fmt.Errorf("read the fleet: %w", err)
		}
	}
	opts := cache.Options{Scheme: s, DefaultTransform: cache.TransformStripManagedFields()}
	if ns != "" {
		opts.DefaultNamespaces = map[string]cache.Config{ns: {}}
	}
	c, err := cache.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	go func() { _ = c.Start(ctx) }() // it returns when ctx ends; a failure to watch shows below
	for _, obj := range []client.Object{&v1alpha1.WorkloadCluster{}, &v1alpha1.PackageDeployment{}, &v1alpha1.PackageSet{}, &v1alpha1.PackageVariant{}} {
		if _, err := c.GetInformer(ctx, obj); err != nil {
			return nil, fmt.Errorf("watch the fleet: %w", err)
		}
	}
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("watch the fleet: %w", context.Cause(ctx))
	}
	return c, nil
}
