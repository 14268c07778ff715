package remotecluster

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Client reads and applies a workload cluster's objects, unstructured, through client-go's dynamic
// and metadata clients on one connection. With the cluster's discovery client it is all flotilla
// keeps per cluster: a controller-runtime client would add a codec factory, a metadata client and
// a REST client per kind it touched, several KiB a cluster (docs/benchmarks.md, "Memory: one
// client per workload cluster").
type Client struct {
	// dynamic and metadata have no request timeout (a watch outlives it); the methods below bound
	// each request by timeout, and the feeds bound theirs themselves.
	dynamic  dynamic.Interface
	metadata metadata.Interface
	mapper   meta.RESTMapper
	timeout  time.Duration
}

// NewClient builds a Client from cfg, mapping kinds through the API server's discovery. Each
// request, discovery's included, is bounded by cfg's timeout, RequestTimeout when it has none.
func NewClient(cfg *rest.Config) (*Client, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.Timeout <= 0 {
		cfg.Timeout = RequestTimeout
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return newClient(cfg, hc, nil)
}

// newClient builds a Client on hc's transport. Kinds are mapped by known first (nil: none), then
// by the cluster's discovery when first used.
func newClient(cfg *rest.Config, hc *http.Client, known meta.RESTMapper) (*Client, error) {
	var mapper meta.RESTMapper
	discovered, err := apiutil.NewDynamicRESTMapper(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("rest mapper: %w", err)
	}
	mapper = discovered
	if known != nil {
		mapper = meta.FirstHitRESTMapper{MultiRESTMapper: meta.MultiRESTMapper{known, discovered}}
	}
	untimedCfg := rest.CopyConfig(cfg)
	untimedCfg.Timeout = 0
	// One rate limit for the cluster's requests and feeds alike, client-go's default stated: a
	// storm of reconciles asks one workload cluster for at most ClusterQPS requests a second.
	untimedCfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(ClusterQPS, ClusterBurst)
	untimed := &http.Client{Transport: hc.Transport, Jar: hc.Jar, CheckRedirect: hc.CheckRedirect}
	dyn, err := dynamic.NewForConfigAndClient(untimedCfg, untimed)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	md, err := metadata.NewForConfigAndClient(untimedCfg, untimed)
	if err != nil {
		return nil, fmt.Errorf("metadata client: %w", err)
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = RequestTimeout
	}
	return &Client{dynamic: dyn, metadata: md, mapper: mapper, timeout: timeout}, nil
}

// The client-side rate limit of the requests to one workload cluster (its discovery apart, a
// version read per facts interval): client-go's default for one client.
const (
	ClusterQPS   = 5
	ClusterBurst = 10
)

// mapping maps gvk to its resource, and says whether that resource is namespaced.
func (c *Client) mapping(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return schema.GroupVersionResource{}, false, err
	}
	return m.Resource, m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// resource is gvk's resource in namespace (ignored for a cluster-scoped kind), without a timeout.
func (c *Client) resource(gvk schema.GroupVersionKind, namespace string) (dynamic.ResourceInterface, error) {
	gvr, namespaced, err := c.mapping(gvk)
	switch {
	case err != nil:
		return nil, err
	case namespaced:
		return c.dynamic.Resource(gvr).Namespace(namespace), nil
	}
	return c.dynamic.Resource(gvr), nil
}

// metadataResource is resource's counterpart for metadata alone.
func (c *Client) metadataResource(gvk schema.GroupVersionKind, namespace string) (metadata.ResourceInterface, error) {
	gvr, namespaced, err := c.mapping(gvk)
	switch {
	case err != nil:
		return nil, err
	case namespaced:
		return c.metadata.Resource(gvr).Namespace(namespace), nil
	}
	return c.metadata.Resource(gvr), nil
}

// Get reads the object of gvk named namespace/name (a NotFound error when there is none).
func (c *Client) Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	r, err := c.resource(gvk, namespace)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return r.Get(ctx, name, metav1.GetOptions{})
}

// List lists the objects of gvk in namespace (every namespace: "").
func (c *Client) List(ctx context.Context, gvk schema.GroupVersionKind, namespace string, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	r, err := c.resource(gvk, namespace)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return r.List(ctx, opts)
}

// listMetadata lists the metadata alone of the objects of gvk in namespace.
func (c *Client) listMetadata(ctx context.Context, gvk schema.GroupVersionKind, namespace string) (*metav1.PartialObjectMetadataList, error) {
	r, err := c.metadataResource(gvk, namespace)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return r.List(ctx, metav1.ListOptions{})
}

// Apply server-side applies obj as fieldManager, taking the fields it sets from any other
// manager, and returns the object as the API server stored it.
func (c *Client) Apply(ctx context.Context, obj *unstructured.Unstructured, fieldManager string) (*unstructured.Unstructured, error) {
	r, err := c.resource(obj.GroupVersionKind(), obj.GetNamespace())
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return r.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
}
