// Package remotecluster keeps one client per workload cluster, built from the kubeconfig in the
// Secret that WorkloadCluster.spec.kubeConfigSecretRef names.
package remotecluster

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// ErrKubeconfig is wrapped by every error about a cluster's kubeconfig Secret.
var ErrKubeconfig = errors.New("kubeconfig secret")

// Clients caches one client per cluster; a changed kubeconfig replaces it. Safe for concurrent
// use.
type Clients struct {
	// Policy is what a kubeconfig Secret may ask for beyond embedded data; set it before first use.
	Policy Policy

	mu      sync.Mutex
	clients map[client.ObjectKey]entry
}

type entry struct {
	sum    [sha256.Size]byte
	client client.Client
	// discovery asks the workload cluster's API server for its version.
	discovery discovery.ServerVersionInterface
	// lists caches recent lists of sync objects, so health is read with one request per cluster,
	// kind and namespace per interval however many deployments the cluster has.
	lists map[listKey]cachedList
}

type listKey struct {
	gvk       schema.GroupVersionKind
	namespace string
}

type cachedList struct {
	at    time.Time
	items map[string]*unstructured.Unstructured
}

// For returns the client of cluster, which must have spec.kubeConfigSecretRef. The Secret is
// read with reader (uncached) from the cluster's namespace.
func (c *Clients) For(ctx context.Context, reader client.Reader, cluster *v1alpha1.WorkloadCluster) (client.Client, error) {
	ref := cluster.Spec.KubeConfigSecretRef
	key := ref.Key
	if key == "" {
		key = "value"
	}
	var secret corev1.Secret
	if err := reader.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: ref.Name}, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w %s/%s not found", ErrKubeconfig, cluster.Namespace, ref.Name)
		}
		return nil, fmt.Errorf("read %w %s/%s: %w", ErrKubeconfig, cluster.Namespace, ref.Name, err)
	}
	data, ok := secret.Data[key]
	if !ok {
		return nil, fmt.Errorf("%w %s/%s has no key %q", ErrKubeconfig, cluster.Namespace, ref.Name, key)
	}
	sum := sha256.Sum256(data)
	id := client.ObjectKeyFromObject(cluster)

	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.clients[id]; ok && e.sum == sum {
		return e.client, nil
	}
	cfg, err := c.Policy.RESTConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%w %s/%s key %q: %w", ErrKubeconfig, cluster.Namespace, ref.Name, key, err)
	}
	cl, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, fmt.Errorf("client for cluster %s: %w", id, err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client for cluster %s: %w", id, err)
	}
	if c.clients == nil {
		c.clients = map[client.ObjectKey]entry{}
	}
	c.clients[id] = entry{sum: sum, client: cl, discovery: dc}
	return cl, nil
}

// Version returns the Kubernetes version of the workload cluster's API server, e.g. v1.33.1.
func (c *Clients) Version(ctx context.Context, reader client.Reader, cluster *v1alpha1.WorkloadCluster) (string, error) {
	if _, err := c.For(ctx, reader, cluster); err != nil {
		return "", err
	}
	c.mu.Lock()
	dc := c.clients[client.ObjectKeyFromObject(cluster)].discovery
	c.mu.Unlock()
	v, err := dc.ServerVersion()
	if err != nil {
		return "", fmt.Errorf("read the version of workload cluster %s: %w", cluster.Name, err)
	}
	return v.GitVersion, nil
}

// Get returns the object of gvk named namespace/name in the workload cluster (nil if it does not
// exist), from a list of that kind and namespace no older than maxAge.
func (c *Clients) Get(ctx context.Context, reader client.Reader, cluster *v1alpha1.WorkloadCluster, gvk schema.GroupVersionKind, namespace, name string, maxAge time.Duration) (*unstructured.Unstructured, error) {
	cl, err := c.For(ctx, reader, cluster)
	if err != nil {
		return nil, err
	}
	id, key := client.ObjectKeyFromObject(cluster), listKey{gvk: gvk, namespace: namespace}
	c.mu.Lock()
	cached, ok := c.clients[id].lists[key]
	c.mu.Unlock()
	if ok && time.Since(cached.at) < maxAge {
		return cached.items[name], nil
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := cl.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("list %s in workload cluster %s: %w", gvk.Kind, cluster.Name, err)
	}
	items := make(map[string]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		items[list.Items[i].GetName()] = &list.Items[i]
	}
	c.mu.Lock()
	if e, ok := c.clients[id]; ok {
		if e.lists == nil {
			e.lists = map[listKey]cachedList{}
		}
		e.lists[key] = cachedList{at: time.Now(), items: items}
		c.clients[id] = e
	}
	c.mu.Unlock()
	return items[name], nil
}

// Forget drops the client of a cluster that is gone.
func (c *Clients) Forget(id client.ObjectKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.clients, id)
}
