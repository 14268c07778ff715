package remotecluster

import (
	"context"
	"fmt"
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
// and a call to Notify only for a watcher whose object is not what it last read (Seen: it
// appeared, went, or has another resourceVersion, or the cluster failed, recovered, or fails
// with another error). A quiet fleet costs one request per cluster per interval and no reconcile.
// Comparing with what each watcher read, not with the previous list, loses no change that lands
// between a watcher's read and its Watch.
// It is a manager Runnable: it polls while it runs (on the leader, as the reconcilers do).
type Poller struct {
	Clients *Clients
	// Reader reads kubeconfig Secrets (uncached).
	Reader client.Reader
	// Interval is how often each watched cluster is listed (required).
	Interval time.Duration
	// Notify is called, from the poller's goroutines, with a watcher whose object changed.
	Notify func(ctx context.Context, watcher client.ObjectKey)

	mu       sync.Mutex
	ctx      context.Context                       // set by Start
	watchers map[client.ObjectKey]client.ObjectKey // watcher → cluster
	clusters map[client.ObjectKey]*polled
}

// Target is the object a watcher follows in its workload cluster, and what the watcher last
// read of it (Seen).
type Target struct {
	GVK             schema.GroupVersionKind
	Namespace, Name string
	Seen            string
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
	pc.cluster = &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster.Name, Namespace: cluster.Namespace, UID: cluster.UID}}
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
	if p.Interval <= 0 {
		return fmt.Errorf("health poller: interval %s is not positive", p.Interval)
	}
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

// run polls one cluster every interval. The first poll comes at a random point of the first
// interval (the watcher has just read the object itself), so that the clusters of a fleet
// watched at once are spread over the interval instead of listed together.
func (p *Poller) run(ctx context.Context, id client.ObjectKey) {
	every := p.Interval
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
	target  Target
}

// poll lists each kind and namespace the cluster's watchers follow, and notifies those whose
// object is not what they last read.
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
		byList[k] = append(byList[k], follower{watcher: w, target: t})
	}
	p.mu.Unlock()
	for k, followers := range byList {
		answer := p.Clients.list(ctx, p.Reader, cluster, k)
		if ctx.Err() != nil {
			return
		}
		for _, f := range followers {
			seen := Seen(answer.items[f.target.Name], answer.err)
			if seen != f.target.Seen && p.saw(id, f, seen) {
				p.Notify(ctx, f.watcher)
			}
		}
	}
}

// saw records that f's object is now seen as seen, unless f's watch changed meanwhile (its own
// read is newer): it reports whether f is to be told.
func (p *Poller) saw(id client.ObjectKey, f follower, seen string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	pc := p.clusters[id]
	if pc == nil || pc.watchers[f.watcher] != f.target {
		return false
	}
	t := f.target
	t.Seen = seen
	pc.watchers[f.watcher] = t
	return true
}
