package remotecluster

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// Poller reads back the objects that watchers (deployments) follow in their workload clusters:
// one list per cluster, kind and namespace every Interval however many watchers a cluster has,
// and a call to Notify only for a watcher whose object changed (appeared, went, or has a new
// resourceVersion) or whose cluster's answer did (the list failed, recovered, or fails with
// another error). A quiet fleet costs one request per cluster per interval and no reconcile.
// It is a manager Runnable: it polls while it runs (on the leader, as the reconcilers do).
type Poller struct {
	Clients *Clients
	// Reader reads kubeconfig Secrets (uncached).
	Reader   client.Reader
	Interval time.Duration
	// Notify is called, from the poller's goroutines, with a watcher whose object changed.
	Notify func(ctx context.Context, watcher client.ObjectKey)

	mu       sync.Mutex
	ctx      context.Context                       // set by Start
	watchers map[client.ObjectKey]client.ObjectKey // watcher → cluster
	clusters map[client.ObjectKey]*polled
}

// Target is the object a watcher follows in its workload cluster.
type Target struct {
	GVK             schema.GroupVersionKind
	Namespace, Name string
}

type polled struct {
	// cluster holds what Clients need: the name, namespace and kubeConfigSecretRef.
	cluster  *v1alpha1.WorkloadCluster
	watchers map[client.ObjectKey]Target
	stop     context.CancelFunc // nil until polling started
}

// Watch makes watcher follow target in cluster (instead of what it followed before).
func (p *Poller) Watch(watcher client.ObjectKey, cluster *v1alpha1.WorkloadCluster, target Target) {
	id := client.ObjectKeyFromObject(cluster)
	p.mu.Lock()
	defer p.mu.Unlock()
	if old, ok := p.watchers[watcher]; ok && old != id {
		p.remove(watcher, old)
	}
	pc := p.clusters[id]
	if pc == nil {
		pc = &polled{watchers: map[client.ObjectKey]Target{}}
		if p.clusters == nil {
			p.clusters, p.watchers = map[client.ObjectKey]*polled{}, map[client.ObjectKey]client.ObjectKey{}
		}
		p.clusters[id] = pc
	}
	// The latest reference wins: a changed kubeConfigSecretRef is polled through at once.
	pc.cluster = &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster.Name, Namespace: cluster.Namespace}}
	pc.cluster.Spec.KubeConfigSecretRef = cluster.Spec.KubeConfigSecretRef.DeepCopy()
	pc.watchers[watcher] = target
	p.watchers[watcher] = id
	if p.ctx != nil && pc.stop == nil {
		p.start(id, pc)
	}
}

// Unwatch stops following what watcher followed; a cluster nobody watches is no longer polled.
func (p *Poller) Unwatch(watcher client.ObjectKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if id, ok := p.watchers[watcher]; ok {
		p.remove(watcher, id)
	}
}

func (p *Poller) remove(watcher, id client.ObjectKey) {
	delete(p.watchers, watcher)
	pc := p.clusters[id]
	delete(pc.watchers, watcher)
	if len(pc.watchers) == 0 {
		if pc.stop != nil {
			pc.stop()
		}
		delete(p.clusters, id)
	}
}

// Start polls every watched cluster until ctx is done.
func (p *Poller) Start(ctx context.Context) error {
	p.mu.Lock()
	p.ctx = ctx
	for id, pc := range p.clusters {
		p.start(id, pc)
	}
	p.mu.Unlock()
	<-ctx.Done()
	return nil
}

func (p *Poller) start(id client.ObjectKey, pc *polled) {
	ctx, cancel := context.WithCancel(p.ctx)
	pc.stop = cancel
	go p.run(ctx, id)
}

func (p *Poller) interval() time.Duration {
	if p.Interval > 0 {
		return p.Interval
	}
	return 10 * time.Second
}

// run polls one cluster every interval. The first poll comes at a random point of the first
// interval (the watcher has just read the object itself), so that the clusters of a fleet
// watched at once are spread over the interval instead of listed together.
func (p *Poller) run(ctx context.Context, id client.ObjectKey) {
	every := p.interval()
	first := time.NewTimer(time.Duration(rand.Int64N(int64(every))) + time.Millisecond)
	defer first.Stop()
	select {
	case <-ctx.Done():
		return
	case <-first.C:
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		p.poll(ctx, id)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

type follower struct {
	watcher client.ObjectKey
	name    string
}

// poll lists each kind and namespace the cluster's watchers follow, and notifies those whose
// object or answer changed.
func (p *Poller) poll(ctx context.Context, id client.ObjectKey) {
	p.mu.Lock()
	pc := p.clusters[id]
	if pc == nil {
		p.mu.Unlock()
		return
	}
	cluster := pc.cluster
	byList := map[listKey][]follower{}
	for w, t := range pc.watchers {
		k := listKey{gvk: t.GVK, namespace: t.Namespace}
		byList[k] = append(byList[k], follower{watcher: w, name: t.Name})
	}
	p.mu.Unlock()
	for k, followers := range byList {
		// A workload API server that hangs costs one interval, not the poller.
		reqCtx, cancel := context.WithTimeout(ctx, p.interval())
		changed, all := p.Clients.Poll(reqCtx, p.Reader, cluster, k.gvk, k.namespace)
		cancel()
		if ctx.Err() != nil {
			return
		}
		for _, f := range followers {
			if all || changed[f.name] {
				p.Notify(ctx, f.watcher)
			}
		}
	}
}
