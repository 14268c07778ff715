// Package remotecluster keeps one client per workload cluster, built from the kubeconfig in the
// Secret that WorkloadCluster.spec.kubeConfigSecretRef names.
package remotecluster

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// ErrKubeconfig is wrapped by every error about a cluster's kubeconfig Secret.
var ErrKubeconfig = errors.New("kubeconfig secret")

// Clients caches one client per cluster; a changed kubeconfig replaces it. Safe for concurrent
// use.
type Clients struct {
	mu      sync.Mutex
	clients map[client.ObjectKey]entry
}

type entry struct {
	sum    [sha256.Size]byte
	client client.Client
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
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		// The parse error may quote the kubeconfig; say only where it is.
		return nil, fmt.Errorf("%w %s/%s key %q is not a valid kubeconfig", ErrKubeconfig, cluster.Namespace, ref.Name, key)
	}
	cl, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, fmt.Errorf("client for cluster %s: %w", id, err)
	}
	if c.clients == nil {
		c.clients = map[client.ObjectKey]entry{}
	}
	c.clients[id] = entry{sum: sum, client: cl}
	return cl, nil
}

// Forget drops the client of a cluster that is gone.
func (c *Clients) Forget(id client.ObjectKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.clients, id)
}
