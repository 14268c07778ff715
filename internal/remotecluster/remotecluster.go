// Package remotecluster keeps one client per workload cluster, built from the kubeconfig in the
// Secret that WorkloadCluster.spec.kubeConfigSecretRef names.
package remotecluster

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/health"
)

// ErrKubeconfig is wrapped by every error about a cluster's kubeconfig Secret.
var ErrKubeconfig = errors.New("kubeconfig secret")

// ErrKindNotServed is wrapped by a list of a kind the workload cluster's API server does not
// serve.
var ErrKindNotServed = errors.New("kind not served")

// KubeconfigMaxAge is how long a working client is used before its kubeconfig Secret is read
// again. Secrets are never watched or cached (the controller may only get them), so without it
// every health read would be a Secret read from the management API server: at 10,000 deployments
// and the default 10 s health interval, 1,000 requests a second. A request to the workload
// cluster that fails makes the next use read the Secret at once, so a fixed or rotated kubeconfig
// is picked up as soon as the old one stops working, and a working one within this long.
const KubeconfigMaxAge = 5 * time.Minute

// Clients caches one client per cluster; a changed kubeconfig replaces it. Safe for concurrent
// use.
type Clients struct {
	// Policy is what a kubeconfig Secret may ask for beyond embedded data; set it before first use.
	Policy Policy

	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Known maps kinds whose resources are known ahead (KnownKinds), shared by every cluster's
	// client; set before first use. Any other kind is discovered from the cluster when first
	// used. Discovery of a cluster with many CRDs is the largest part of a client's memory
	// (about 300 KiB each).
	Known meta.RESTMapper
	// ListTimeout bounds one list of a workload cluster's objects (0: DefaultListTimeout): a
	// cluster that hangs holds up its own reads only, and the timeout is kept as its answer.
	ListTimeout time.Duration
	// MaxResponseBytes bounds each answer of a workload cluster, a watch's stream included (0:
	// DefaultMaxResponseBytes).
	MaxResponseBytes int64

	mu      sync.Mutex
	gens    uint64 // clients built so far
	clients map[client.ObjectKey]entry
	// gone holds the UIDs of deleted clusters (Forget), with when they were forgotten: a read
	// that started before the deletion must not build their client again.
	gone map[types.UID]time.Time
	// lists caches recent lists of sync objects by cluster, so health is read with one request
	// per cluster, kind and namespace per interval however many deployments the cluster has.
	lists map[client.ObjectKey]map[listKey]cachedList
	// recheck, once set (by the Poller), is told of a cluster whose client was replaced or
	// dropped, or failed a request: whatever follows the cluster is to be checked against its
	// kubeconfig again.
	recheck func(id client.ObjectKey)
}

// onRecheck makes tell hear of every cluster whose client is replaced, dropped or fails from now
// on.
func (c *Clients) onRecheck(tell func(id client.ObjectKey)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recheck = tell
}

// tellRecheck tells the onRecheck hook, if any, about id; the caller does not hold c.mu.
func (c *Clients) tellRecheck(id client.ObjectKey) {
	c.mu.Lock()
	tell := c.recheck
	c.mu.Unlock()
	if tell != nil {
		tell(id)
	}
}

type entry struct {
	sum [sha256.Size]byte
	uid types.UID // of the WorkloadCluster the client was built for
	// ref is the Secret and key the kubeconfig came from, read at secretRead (zero: read it
	// again before the next use, after a failed request).
	ref        v1alpha1.SecretKeyReference
	secretRead time.Time
	// client serves requests and the health feeds alike, through one connection.
	client *Client
	// discovery asks the workload cluster's API server for its version.
	discovery discovery.ServerVersionInterface
	// gen tells this client from the one built before it, from the same kubeconfig or not.
	gen uint64
}

type listKey struct {
	gvk       schema.GroupVersionKind
	namespace string
}

// cachedList is a list's answer: its objects by name, or why it failed. A failure is kept as
// long as objects are: while a cluster is unreachable its deployments share one failed request
// (and one Secret read) per interval instead of making one each.
type cachedList struct {
	at    time.Time
	ref   v1alpha1.SecretKeyReference // the kubeconfig the answer came through
	items map[string]*unstructured.Unstructured
	err   error
	// known are the objects of the last list that succeeded through ref (kept over failures):
	// the next list reads in full only what changed since.
	known map[string]*unstructured.Unstructured
	// feed, while it runs, keeps this answer current (a watch): it is as fresh as it gets.
	feed *feed
}

func (c *Clients) listTimeout() time.Duration {
	if c.ListTimeout > 0 {
		return c.ListTimeout
	}
	return DefaultListTimeout
}

func (c *Clients) clock() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// For returns the client of cluster, which must have spec.kubeConfigSecretRef. The Secret is
// read with reader (uncached) from the cluster's namespace when the client was built from another
// Secret or key, more than KubeconfigMaxAge ago, or before a request that failed.
func (c *Clients) For(ctx context.Context, reader client.Reader, cluster *v1alpha1.WorkloadCluster) (*Client, error) {
	ref := kubeconfigRef(cluster)
	id := client.ObjectKeyFromObject(cluster)
	c.mu.Lock()
	if _, gone := c.gone[cluster.UID]; gone && cluster.UID != "" {
		c.mu.Unlock()
		return nil, fmt.Errorf("workload cluster %s was deleted", id)
	}
	if e, ok := c.clients[id]; ok && e.ref == ref && !e.secretRead.IsZero() && c.clock().Sub(e.secretRead) < KubeconfigMaxAge {
		c.mu.Unlock()
		return e.client, nil
	}
	c.mu.Unlock()

	data, err := readKubeconfig(ctx, reader, cluster.Namespace, ref)
	if err != nil {
		// A Secret deleted or emptied revokes the client at once.
		c.revoke(id)
		return nil, err
	}
	sum := sha256.Sum256(data)
	c.mu.Lock()
	if e, ok := c.clients[id]; ok && e.sum == sum {
		e.ref, e.secretRead = ref, c.clock()
		c.clients[id] = e
		c.mu.Unlock()
		return e.client, nil
	}
	defer c.tellRecheck(id) // once unlocked (deferred calls run last first): a new client, or none
	defer c.mu.Unlock()
	cfg, err := c.Policy.RESTConfig(data)
	if err != nil {
		delete(c.clients, id)
		return nil, fmt.Errorf("%w %s/%s key %q: %w", ErrKubeconfig, cluster.Namespace, ref.Name, ref.Key, err)
	}
	cfg.WarningHandlerWithContext = &warnings{cluster: id}
	limit := c.MaxResponseBytes
	if limit <= 0 {
		limit = DefaultMaxResponseBytes
	}
	cfg.Wrap(boundResponses(limit))
	// One HTTP client (one transport, one connection pool) for objects and discovery alike.
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("http client for cluster %s: %w", id, err)
	}
	cl, err := newClient(cfg, hc, c.Known)
	if err != nil {
		return nil, fmt.Errorf("client for cluster %s: %w", id, err)
	}
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("discovery client for cluster %s: %w", id, err)
	}
	if c.clients == nil {
		c.clients = map[client.ObjectKey]entry{}
	}
	c.gens++
	c.clients[id] = entry{sum: sum, uid: cluster.UID, ref: ref, secretRead: c.clock(), client: cl, discovery: dc, gen: c.gens}
	// What the old kubeconfig answered may be another cluster's objects.
	delete(c.lists, id)
	return cl, nil
}

// generation tells the cluster's current client from any other (0: it has none).
func (c *Clients) generation(cluster *v1alpha1.WorkloadCluster) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clients[client.ObjectKeyFromObject(cluster)].gen
}

// KnownKinds maps the namespaced kinds given (the engines' objects) and the built-in kinds
// flotilla reads (Nodes, Namespaces, ConfigMaps and Config Sync's ResourceGroups) without
// discovery: Clients.Known.
func KnownKinds(namespaced ...schema.GroupVersionKind) meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, gvk := range append(slices.Clone(namespaced), configMapGVK, health.ResourceGroupGVK) {
		m.Add(gvk, meta.RESTScopeNamespace)
	}
	for _, kind := range []string{"Node", "Namespace"} {
		m.Add(corev1.SchemeGroupVersion.WithKind(kind), meta.RESTScopeRoot)
	}
	return m
}

var configMapGVK = corev1.SchemeGroupVersion.WithKind("ConfigMap")

// kubeconfigRef is the Secret and key of the cluster's kubeconfig, the key defaulted.
func kubeconfigRef(cluster *v1alpha1.WorkloadCluster) v1alpha1.SecretKeyReference {
	ref := *cluster.Spec.KubeConfigSecretRef
	if ref.Key == "" {
		ref.Key = "value"
	}
	return ref
}

func readKubeconfig(ctx context.Context, reader client.Reader, namespace string, ref v1alpha1.SecretKeyReference) ([]byte, error) {
	var secret corev1.Secret
	if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w %s/%s not found", ErrKubeconfig, namespace, ref.Name)
		}
		return nil, fmt.Errorf("read %w %s/%s: %w", ErrKubeconfig, namespace, ref.Name, err)
	}
	data, ok := secret.Data[ref.Key]
	if !ok {
		return nil, fmt.Errorf("%w %s/%s has no key %q", ErrKubeconfig, namespace, ref.Name, ref.Key)
	}
	return data, nil
}

// Identity is the digest of the kubeconfig the cluster's current client was built from (zero
// when there is none): what was applied through one client need not be applied again through it.
func (c *Clients) Identity(cluster *v1alpha1.WorkloadCluster) [sha256.Size]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clients[client.ObjectKeyFromObject(cluster)].sum
}

// Failed records that a request to the cluster failed: its kubeconfig Secret is read again before
// the next use, in case it was fixed or rotated, and the Poller checks the cluster at once.
// Callers that use the client from For report their failures here; Get and Version do it
// themselves.
func (c *Clients) Failed(cluster *v1alpha1.WorkloadCluster) {
	id := client.ObjectKeyFromObject(cluster)
	defer c.tellRecheck(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.clients[id]; ok {
		e.secretRead = time.Time{}
		c.clients[id] = e
	}
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
		c.Failed(cluster)
		return "", fmt.Errorf("read the version of workload cluster %s: %w", cluster.Name, err)
	}
	return v.GitVersion, nil
}

// Get returns the object of gvk named namespace/name in the workload cluster (nil if it does not
// exist), from a list of that kind and namespace (or its failure) no older than maxAge, read
// through the cluster's current kubeconfig reference.
func (c *Clients) Get(ctx context.Context, reader client.Reader, cluster *v1alpha1.WorkloadCluster, gvk schema.GroupVersionKind, namespace, name string, maxAge time.Duration) (*unstructured.Unstructured, error) {
	id, key := client.ObjectKeyFromObject(cluster), listKey{gvk: gvk, namespace: namespace}
	c.mu.Lock()
	cached, ok := c.lists[id][key]
	c.mu.Unlock()
	// A fresh list, or one a watch keeps current, answers without a request, and without reading
	// the Secret either.
	if ok && cached.ref == kubeconfigRef(cluster) && (cached.feed != nil || c.clock().Sub(cached.at) < maxAge) {
		return cached.items[name], cached.err
	}
	l := c.list(ctx, reader, cluster, key)
	return l.items[name], l.err
}

// Held returns the object a running feed (an open watch) keeps current for cluster, without a
// request; ok is false when no feed follows its kind and namespace through the cluster's current
// kubeconfig. A nil object with ok is one the feed knows to be absent.
func (c *Clients) Held(cluster *v1alpha1.WorkloadCluster, gvk schema.GroupVersionKind, namespace, name string) (obj *unstructured.Unstructured, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cached, found := c.lists[client.ObjectKeyFromObject(cluster)][listKey{gvk: gvk, namespace: namespace}]
	if !found || cached.feed == nil || cached.err != nil || cached.ref != kubeconfigRef(cluster) {
		return nil, false
	}
	return cached.items[name], true
}

// Seen is what a read of an object said, as a watcher remembers it: the object's
// resourceVersion, that it does not exist, or why the cluster did not answer (its numbers left
// out: a local port or a request ID in an error is not a change).
func Seen(obj *unstructured.Unstructured, err error) string {
	switch {
	case err != nil:
		return "error: " + digits.ReplaceAllString(err.Error(), "#")
	case obj == nil:
		return "absent"
	}
	return "resourceVersion " + obj.GetResourceVersion()
}

var digits = regexp.MustCompile(`[0-9]+`)

// DefaultListTimeout is Clients.ListTimeout's default.
const DefaultListTimeout = 30 * time.Second

// list lists key in the workload cluster (for ListTimeout at most) and keeps the answer, a
// failure (a timeout included) too, unless the caller gave up (ctx done): that says nothing
// about the cluster.
func (c *Clients) list(ctx context.Context, reader client.Reader, cluster *v1alpha1.WorkloadCluster, key listKey) cachedList {
	l := cachedList{ref: kubeconfigRef(cluster)}
	timeout := c.listTimeout()
	id := client.ObjectKeyFromObject(cluster)
	c.mu.Lock()
	prev := c.lists[id][key]
	c.mu.Unlock()
	reqCtx, cancel := context.WithTimeout(ctx, timeout)
	if prev.ref == l.ref {
		l.known = prev.known
	}
	l.items, l.err = c.listNow(reqCtx, reader, cluster, key, l.known)
	cancel()
	if l.err == nil {
		l.known = l.items
	}
	if l.err != nil && ctx.Err() != nil {
		return l
	}
	l.at = c.clock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lists == nil {
		c.lists = map[client.ObjectKey]map[listKey]cachedList{}
	}
	if c.lists[id] == nil {
		c.lists[id] = map[listKey]cachedList{}
	}
	if live := c.lists[id][key]; live.feed != nil && live.ref == l.ref {
		return live // a watch started meanwhile: its answer is newer
	}
	c.lists[id][key] = l
	return l
}

// cached returns the kept answer of key's list in cluster, if there is one through the cluster's
// current kubeconfig reference.
func (c *Clients) cached(cluster *v1alpha1.WorkloadCluster, key listKey) (cachedList, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.lists[client.ObjectKeyFromObject(cluster)][key]
	return l, ok && l.ref == kubeconfigRef(cluster)
}

// keep makes err the answer of key's list in cluster, for reads that come before the next try.
func (c *Clients) keep(cluster *v1alpha1.WorkloadCluster, key listKey, err error) {
	id := client.ObjectKeyFromObject(cluster)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, gone := c.gone[cluster.UID]; gone && cluster.UID != "" {
		return // deleted: nobody reads its answers
	}
	if c.lists == nil {
		c.lists = map[client.ObjectKey]map[listKey]cachedList{}
	}
	if c.lists[id] == nil {
		c.lists[id] = map[listKey]cachedList{}
	}
	l := cachedList{ref: kubeconfigRef(cluster), at: c.clock(), err: err}
	if prev := c.lists[id][key]; prev.ref == l.ref {
		l.known = prev.known
	}
	c.lists[id][key] = l
}

// listNow lists key's objects in the workload cluster. With prev (the objects of the last list
// that succeeded), it lists their metadata only and reads in full only the objects that are not
// in prev at the same resourceVersion: a quiet cluster costs one small answer per interval, not
// its sync objects' whole status (a Flux Kustomization's inventory, an Application's resource
// tree) decoded every time.
func (c *Clients) listNow(ctx context.Context, reader client.Reader, cluster *v1alpha1.WorkloadCluster, key listKey, prev map[string]*unstructured.Unstructured) (map[string]*unstructured.Unstructured, error) {
	cl, err := c.For(ctx, reader, cluster)
	if err != nil {
		return nil, err
	}
	if prev == nil {
		list, err := cl.List(ctx, key.gvk, key.namespace, metav1.ListOptions{})
		if err != nil {
			return nil, c.listError(cluster, key, err)
		}
		items := make(map[string]*unstructured.Unstructured, len(list.Items))
		for i := range list.Items {
			items[list.Items[i].GetName()] = &list.Items[i]
		}
		return items, nil
	}
	list, err := cl.listMetadata(ctx, key.gvk, key.namespace)
	if err != nil {
		return nil, c.listError(cluster, key, err)
	}
	items := make(map[string]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		name := list.Items[i].Name
		if old, ok := prev[name]; ok && old.GetResourceVersion() == list.Items[i].ResourceVersion {
			items[name] = old
			continue
		}
		obj, err := cl.Get(ctx, key.gvk, key.namespace, name)
		if err != nil {
			if apierrors.IsNotFound(err) {
				continue // deleted since the list
			}
			c.Failed(cluster)
			return nil, fmt.Errorf("read %s %s/%s in workload cluster %s: %w", key.gvk.Kind, key.namespace, name, cluster.Name, err)
		}
		items[name] = obj
	}
	return items, nil
}

// listError is what a failed list of key says; a cluster that did not answer has its kubeconfig
// read again before the next use.
func (c *Clients) listError(cluster *v1alpha1.WorkloadCluster, key listKey, err error) error {
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		// The cluster answers, without this kind: its engine is not installed, or not at the
		// version flotilla writes.
		return fmt.Errorf("list %s in workload cluster %s: %w: the API server does not serve %s (is the engine's CRD installed, at this version?): %w",
			key.gvk.Kind, cluster.Name, ErrKindNotServed, key.gvk.GroupVersion().WithKind(key.gvk.Kind), err)
	}
	c.Failed(cluster)
	return fmt.Errorf("list %s in workload cluster %s: %w", key.gvk.Kind, cluster.Name, err)
}

// goneFor is how long a deleted cluster's UID is remembered: longer than a read that started
// before the deletion can take (a list, its Secret read and its timeout).
const goneFor = 10 * time.Minute

// Forget drops the client of a cluster that is deleted, and refuses to build one again for the
// same WorkloadCluster (its UID) from a read that started before: a cluster of the same name
// created again has another UID.
func (c *Clients) Forget(id client.ObjectKey) {
	defer c.tellRecheck(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock()
	for uid, at := range c.gone {
		if now.Sub(at) > goneFor {
			delete(c.gone, uid)
		}
	}
	if e, ok := c.clients[id]; ok && e.uid != "" {
		if c.gone == nil {
			c.gone = map[types.UID]time.Time{}
		}
		c.gone[e.uid] = now
	}
	delete(c.clients, id)
	delete(c.lists, id)
}

// revoke drops the client of a cluster whose kubeconfig Secret is gone or unusable: the
// cluster itself may still be there, and gets a client again once the Secret is fixed.
func (c *Clients) revoke(id client.ObjectKey) {
	defer c.tellRecheck(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.clients, id)
	delete(c.lists, id)
}
