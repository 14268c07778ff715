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
// one watch per cluster, kind and namespace however many watchers a cluster has (a feed: a list,
// then a watch, listed again only when the watch cannot go on), and a call to Notify only for a
// watcher whose object is not what it last read (Seen: it appeared, went, or has another
// resourceVersion, or the cluster failed, recovered, or fails with another error). It checks
// each cluster's feeds against its watchers and its kubeconfig, in memory, when a watcher comes
// or changes, when the cluster's client is replaced, dropped or fails a request, every Interval
// while the cluster fails, and every KubeconfigMaxAge while it answers (the feeds bring every
// change meanwhile). A quiet fleet costs an open watch per cluster and the bookmarks it brings,
// no reconcile.
// Comparing with what each watcher read, not with the previous answer, loses no change that
// lands between a watcher's read and its Watch.
// It is a manager Runnable: it follows clusters while it runs (on the leader, as the reconcilers
// do).
type Poller struct {
	Clients *Clients
	// Reader reads kubeconfig Secrets (uncached).
	Reader client.Reader
	// Interval is how often each followed cluster's feeds are checked, and the longest wait
	// between two lists of a cluster that fails (required).
	Interval time.Duration
	// Notify is called, from the poller's checks and its feeds' goroutines, with a watcher whose
	// object changed.
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

	// The cluster's checks, scheduled by a timer and run in its goroutine, one at a time: an
	// idle cluster has no goroutine of its own. The fields below are guarded by the Poller's mu,
	// except feeds, which only the running check touches.
	ctx   context.Context
	stop  context.CancelFunc // nil until polling started
	timer *time.Timer        // the next check
	feeds map[listKey]*feed  // the running check's
	// begun: the first check (at a random point of the first interval) has come; running: a
	// check runs; kicked, rechecked: a watcher or a recheck woke the cluster while it ran.
	begun, running, kicked, rechecked bool
	// answers: the last check found every list answering; only then does a recheck wake the
	// cluster (a failing one is checked every interval anyway, and its own check's failures
	// must not wake it again).
	answers bool
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
	// The latest reference wins: a changed kubeConfigSecretRef is followed through from the next
	// check on, which it brings forward.
	old, had := pc.watchers[watcher]
	moved := pc.cluster == nil || kubeconfigRef(pc.cluster) != kubeconfigRef(cluster)
	pc.cluster = &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster.Name, Namespace: cluster.Namespace, UID: cluster.UID}}
	pc.cluster.Spec.KubeConfigSecretRef = cluster.Spec.KubeConfigSecretRef.DeepCopy()
	pc.watchers[watcher] = target
	p.watchers[watcher] = id
	if (!had || old != target || moved) && pc.begun {
		p.wake(pc, false) // before the first check (not begun), that check sees the change
	}
	if p.ctx != nil && pc.stop == nil {
		p.start(id, pc)
	}
}

// Unwatch stops following what watcher followed; a cluster nobody watches is no longer followed.
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

// Start follows every watched cluster until ctx is done.
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
	p.Clients.onRecheck(p.recheck)
	<-ctx.Done()
	return nil
}

// recheck brings the check of cluster id forward while it answers: its client was replaced or
// dropped (the feeds read through the old one), or a request failed (the kubeconfig may have
// changed).
func (p *Poller) recheck(id client.ObjectKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pc := p.clusters[id]; pc != nil && (pc.answers || pc.running) {
		p.wake(pc, true)
	}
}

// wake checks the cluster now, or once more when the check under way ends (a recheck only if
// that check finds the cluster answering); the caller holds p.mu.
func (p *Poller) wake(pc *polled, recheck bool) {
	switch {
	case pc.timer == nil:
	case pc.running && recheck:
		pc.rechecked = true
	case pc.running:
		pc.kicked = true
	default:
		pc.timer.Reset(0)
	}
}

// start follows the cluster: its checks come from a timer, the first at a random point of the
// first interval (the watcher has just read the object itself), so that the clusters of a fleet
// watched at once start their watches spread over the interval instead of together. When ctx
// ends (the cluster is no longer watched, or the poller stops), its feeds are halted, by the check
// under way if there is one. The caller holds p.mu.
func (p *Poller) start(id client.ObjectKey, pc *polled) {
	pc.ctx, pc.stop = context.WithCancel(p.ctx)
	pc.feeds = map[listKey]*feed{}
	first := time.Duration(rand.Int64N(int64(p.Interval))) + time.Millisecond
	timer := time.AfterFunc(first, func() { p.run(id, pc) })
	pc.timer = timer
	context.AfterFunc(pc.ctx, func() {
		p.mu.Lock()
		timer.Stop()
		var feeds map[listKey]*feed
		if !pc.running {
			feeds, pc.feeds = pc.feeds, nil
		}
		p.mu.Unlock()
		halt(feeds)
	})
}

// run checks the cluster (its timer's goroutine): a feed (a watch) per kind and namespace its
// watchers follow, checked when a watcher comes or follows something else, every interval while
// the cluster fails, and while it answers every KubeconfigMaxAge (when the kubeconfig is due to
// be read again) or when its client is replaced, dropped or fails (recheck).
func (p *Poller) run(id client.ObjectKey, pc *polled) {
	p.mu.Lock()
	if pc.running || pc.ctx.Err() != nil {
		p.mu.Unlock()
		// Fired twice (a wake reset the timer as it fired: the check under way began after the
		// wake), or the cluster is no longer followed.
		return
	}
	pc.begun, pc.running = true, true
	ctx, feeds := pc.ctx, pc.feeds
	for {
		pc.kicked, pc.rechecked = false, false
		p.mu.Unlock()
		answers := p.check(ctx, id, pc, feeds)
		p.mu.Lock()
		if ctx.Err() != nil {
			pc.feeds, pc.running = nil, false
			p.mu.Unlock()
			halt(feeds)
			return
		}
		pc.answers = answers
		if !pc.kicked && (!answers || !pc.rechecked) {
			break
		}
	}
	pc.running = false
	wait := p.Interval
	if pc.answers {
		wait = KubeconfigMaxAge
	}
	pc.timer.Reset(wait)
	p.mu.Unlock()
}

// halt stops feeds and waits for them.
func halt(feeds map[listKey]*feed) {
	for _, f := range feeds {
		f.halt()
	}
}

// check makes feeds follow what the cluster's watchers follow, through the cluster's current
// client (a new client, for a changed kubeconfig or after a failure, restarts them; a kubeconfig
// that cannot be read is every list's answer until it can), and notifies every watcher whose
// object is not what it last read. Apart from the kubeconfig Secret, read again every
// KubeconfigMaxAge, it makes no request. It reports whether every list has a feed and answers.
func (p *Poller) check(ctx context.Context, id client.ObjectKey, pc *polled, feeds map[listKey]*feed) bool {
	p.mu.Lock()
	if p.clusters[id] != pc {
		p.mu.Unlock()
		return false
	}
	cluster := pc.cluster
	keys := map[listKey]bool{}
	for _, t := range pc.watchers {
		keys[listKey{gvk: t.GVK, namespace: t.Namespace}] = true
	}
	p.mu.Unlock()
	for k, f := range feeds {
		if !keys[k] {
			f.halt()
			delete(feeds, k)
		}
	}
	_, err := p.Clients.For(ctx, p.Reader, cluster)
	if ctx.Err() != nil {
		return false
	}
	answers := err == nil
	gen, ref := p.Clients.generation(cluster), kubeconfigRef(cluster)
	for k := range keys {
		if f := feeds[k]; f != nil && (err != nil || f.gen != gen || f.ref != ref) {
			f.halt()
			delete(feeds, k)
		}
		if feeds[k] == nil {
			ferr := err
			if ferr == nil {
				var f *feed
				if f, ferr = p.Clients.follow(ctx, cluster, k, p.Interval, func() { p.compare(ctx, id, pc, k) }); ferr == nil {
					feeds[k] = f
				}
			}
			if ferr != nil {
				// The kubeconfig or the mapping failed: that is the list's answer until it works.
				p.Clients.keep(cluster, k, ferr)
			}
		}
		if l, ok := p.compare(ctx, id, pc, k); !ok || l.err != nil || feeds[k] == nil {
			answers = false
		}
	}
	return answers
}

type follower struct {
	watcher client.ObjectKey
	target  Target
}

// compare notifies the watchers of key in the cluster whose object, as the cache has it now, is
// not what they last read; it returns that answer, if there is one.
func (p *Poller) compare(ctx context.Context, id client.ObjectKey, pc *polled, key listKey) (cachedList, bool) {
	p.mu.Lock()
	if p.clusters[id] != pc {
		p.mu.Unlock()
		return cachedList{}, false
	}
	cluster := pc.cluster
	var followers []follower
	for w, t := range pc.watchers {
		if t.GVK == key.gvk && t.Namespace == key.namespace {
			followers = append(followers, follower{watcher: w, target: t})
		}
	}
	p.mu.Unlock()
	answer, ok := p.Clients.cached(cluster, key)
	if !ok || ctx.Err() != nil {
		return answer, ok
	}
	for _, f := range followers {
		seen := Seen(answer.items[f.target.Name], answer.err)
		if seen != f.target.Seen && p.saw(id, pc, f, seen) {
			p.Notify(ctx, f.watcher)
		}
	}
	return answer, true
}

// saw records that f's object is now seen as seen, unless f's watch changed meanwhile (its own
// read is newer): it reports whether f is to be told.
func (p *Poller) saw(id client.ObjectKey, pc *polled, f follower, seen string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.clusters[id] != pc || pc.watchers[f.watcher] != f.target {
		return false
	}
	t := f.target
	t.Seen = seen
	pc.watchers[f.watcher] = t
	return true
}
