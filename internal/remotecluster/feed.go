package remotecluster

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// feed keeps one list of a workload cluster's objects (a kind in a namespace) current: it lists
// once, then watches from that list's resourceVersion (again from where it stopped when the
// server ends the watch, every 15 to 30 minutes). The watch is its own proof that the cluster
// answers: the API server sends every watch a bookmark about once a minute once the
// resourceVersion its watch cache knows has moved past the watch's (on a live cluster other
// writes move it; where nothing is written, no bookmark comes).
// When a watch has brought nothing (no change, no bookmark) for quietWatch, the feed lists the
// objects' metadata alone (the heartbeat), which proves that the cluster still answers and that
// the watch missed nothing. It lists in full again when the watch cannot go on (the
// resourceVersion expired, the connection failed, client-go gave up reconnecting) or the
// heartbeat differs from what the watch brought. Every change lands in the Clients' list cache,
// where health reads find it without a request, and is announced through changed. An idle
// cluster costs an open watch and the bookmarks it brings (a small list every quietWatch from an
// API server that sends none), instead of a list every interval.
//
// Only a list says whether the cluster answers: a failed list is the cluster's answer (every
// follower sees the error) until a list succeeds again, tried with a backoff capped at the health
// interval. A cluster whose connection breaks is reported within seconds; one that stops answering
// while its watch stays open, within quietWatch and a list timeout. A cluster that does not let
// flotilla watch (RBAC without the watch verb) is followed by its heartbeat every interval, as
// before watches: any difference is listed.
type feed struct {
	c       *Clients
	cluster *v1alpha1.WorkloadCluster
	id      client.ObjectKey
	key     listKey
	ref     v1alpha1.SecretKeyReference
	gen     uint64 // of the cluster's client the feed reads through
	// res lists and watches, meta lists metadata: through the cluster's connection, without its
	// client's request timeout (a watch outlives it); each call bounds itself.
	res      dynamic.ResourceInterface
	meta     metadata.ResourceInterface
	changed  func()
	interval time.Duration

	ctx  context.Context
	stop context.CancelFunc
	done chan struct{}

	// items are what the last list and the watch since brought; only the feed's goroutine reads
	// and writes them (it publishes copies).
	items map[string]*unstructured.Unstructured
}

// HeartbeatIntervals is how many health intervals make a heartbeat period (one minute at the
// default interval): the unit of quietWatch.
const HeartbeatIntervals = 6

// quietWatch is how long an open watch may bring nothing before the feed lists its objects'
// metadata (the heartbeat): one and a half heartbeat periods (90 s at the default interval), so
// that the API server's bookmark, about one a minute on every watch, comes first.
func (f *feed) quietWatch() time.Duration {
	return f.interval * HeartbeatIntervals * 3 / 2
}

const (
	// A watch asks the server to end it after a random 15 to 30 minutes, so a fleet's watches
	// are not renewed together. A renewal proves nothing the bookmarks and the heartbeat do not
	// (client-go's Reflector renews every 5 to 10 minutes; the API server ends a watch that names
	// no timeout after 30 to 60), and costs a request on both sides: at 1,000 clusters, 5 to 10
	// minutes was ~2 renewals a second.
	minWatch = 15 * time.Minute
	// A watch that ends sooner than shortWatch waits for the watch backoff before the next try; one
	// that lasted steadyWatch resets that backoff.
	shortWatch  = time.Second
	steadyWatch = 2 * time.Minute
	// notAllowedRetry is how long a cluster that refuses watches is followed by heartbeats alone
	// before the watch is tried again.
	notAllowedRetry = 5 * time.Minute
)

// follow starts a feed of key's objects in cluster through its current client (the caller has
// just made sure of it with For); changed is called (from the feed's goroutine) after each
// change the feed writes to the cache. interval is the
// health interval: the heartbeat's unit, and the cap of the backoff between two lists of a
// cluster that fails, so a failing cluster is asked about once per interval and recovers within
// one.
func (c *Clients) follow(ctx context.Context, cluster *v1alpha1.WorkloadCluster, key listKey, interval time.Duration, changed func()) (*feed, error) {
	id := client.ObjectKeyFromObject(cluster)
	c.mu.Lock()
	e, ok := c.clients[id]
	c.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("workload cluster %s has no client", id)
	}
	res, err := e.client.resource(key.gvk, key.namespace)
	if err != nil {
		return nil, c.listError(cluster, key, err)
	}
	md, err := e.client.metadataResource(key.gvk, key.namespace)
	if err != nil {
		return nil, c.listError(cluster, key, err)
	}
	f := &feed{c: c, cluster: cluster, id: id, key: key, ref: kubeconfigRef(cluster), gen: e.gen,
		res: res, meta: md, changed: changed, interval: interval, done: make(chan struct{})}
	f.ctx, f.stop = context.WithCancel(ctx)
	go f.run()
	return f, nil
}

// halt stops the feed and waits for it; what it cached stays, no longer live (a health read
// lists again once it is older than the read allows).
func (f *feed) halt() {
	f.stop()
	<-f.done
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	if l, ok := f.c.lists[f.id][f.key]; ok && l.feed == f {
		l.feed = nil
		f.c.lists[f.id][f.key] = l
	}
}

func (f *feed) backoff() wait.Backoff {
	first := min(f.interval, time.Second)
	return wait.Backoff{Duration: first, Factor: 2, Jitter: 0.1, Steps: 64, Cap: max(f.interval, first)}
}

// run lists, then follows (a watch, and heartbeats while it is quiet), until the feed is
// stopped: the feed's one goroutine (client-go decodes the watch's stream in another).
func (f *feed) run() {
	defer close(f.done)
	listRetry, watchRetry := f.backoff(), f.backoff()
	for f.ctx.Err() == nil {
		rv, err := f.list()
		if err != nil {
			sleep(f.ctx, listRetry.Step())
			continue
		}
		listRetry = f.backoff()
		f.follow(rv, &watchRetry)
	}
}

// follow watches from rv, again from where each watch stopped, until the feed must list (a
// watch failed or ended early without a word, a heartbeat failed or differed) or is stopped.
func (f *feed) follow(rv string, retry *wait.Backoff) {
	for f.ctx.Err() == nil {
		began := time.Now()
		requested := minWatch + time.Duration(rand.Int64N(int64(minWatch)))
		next, events, relist, err := f.watch(rv, requested)
		if relist || f.ctx.Err() != nil {
			return
		}
		lasted := time.Since(began)
		if lasted >= steadyWatch {
			*retry = f.backoff()
		}
		switch {
		case apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err):
			// Not allowed to watch: a heartbeat every interval follows the objects until the
			// watch is tried again.
			if !f.beatFor(notAllowedRetry) {
				return
			}
			continue
		case err != nil, events == 0 && lasted < requested*9/10:
			// Failed, or ended early without a word (client-go gives a watch that cannot
			// reconnect back empty): list, which says whether the cluster still answers.
			if lasted < shortWatch {
				sleep(f.ctx, retry.Step())
			}
			return
		}
		rv = next
	}
}

// watch watches from rv until the server ends the watch (nil error), it fails, a heartbeat says
// to list (relist) or the feed is stopped, applying each event to the feed's objects; it returns
// the resourceVersion to go on from and how many events (bookmarks included) came. A watch that
// brought something within quietWatch proves the cluster answers; after that long without a
// word, a heartbeat checks the cluster. A heartbeat that differs is taken again a second later,
// while the watch's events land; relist: a heartbeat failed, or differed twice (or differed and
// the watch ended before the second). While a heartbeat waits for its answer (ListTimeout at
// most), the watch's events wait in its stream.
func (f *feed) watch(rv string, requested time.Duration) (next string, events int, relist bool, err error) {
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	// A cluster that takes the connection but does not answer is given ListTimeout, as a list is.
	answer := time.AfterFunc(f.c.listTimeout(), cancel)
	seconds := int64(requested / time.Second)
	w, err := f.res.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true, TimeoutSeconds: &seconds})
	if !answer.Stop() && err == nil {
		w.Stop()
		err = fmt.Errorf("watch %s in workload cluster %s: no answer within %s", f.key.gvk.Kind, f.cluster.Name, f.c.listTimeout())
	}
	if err != nil {
		return rv, 0, false, err
	}
	defer w.Stop()
	heard := time.Now()
	quiet := time.NewTimer(f.quietWatch())
	defer quiet.Stop()
	differed := false // the last heartbeat differed: the next, a second later, decides
	for {
		select {
		case <-ctx.Done():
			return rv, events, false, ctx.Err()
		case <-quiet.C:
			if left := f.quietWatch() - time.Since(heard); left > 0 && !differed {
				quiet.Reset(left)
				continue
			}
			holds, err := f.heartbeat()
			switch {
			case err != nil, !holds && differed:
				return rv, events, true, nil
			case !holds:
				differed = true
				quiet.Reset(time.Second)
			default:
				differed, heard = false, time.Now()
				quiet.Reset(f.quietWatch())
			}
		case ev, open := <-w.ResultChan():
			if !open {
				return rv, events, differed, nil
			}
			events++
			heard = time.Now()
			switch ev.Type {
			case watch.Error:
				return rv, events, false, apierrors.FromObject(ev.Object)
			case watch.Bookmark:
				if o, err := meta.Accessor(ev.Object); err == nil {
					rv = o.GetResourceVersion()
				}
				continue
			}
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				return rv, events, false, fmt.Errorf("watch %s in workload cluster %s: unexpected %T", f.key.gvk.Kind, f.cluster.Name, ev.Object)
			}
			rv = u.GetResourceVersion()
			u.SetManagedFields(nil) // health never reads them
			if ev.Type == watch.Deleted {
				delete(f.items, u.GetName())
			} else {
				f.items[u.GetName()] = u
			}
			f.publishItems()
		}
	}
}

// beatFor follows the objects without a watch, by a heartbeat every interval, for d: it reports
// whether every heartbeat held (false: list).
func (f *feed) beatFor(d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); {
		sleep(f.ctx, f.interval)
		if f.ctx.Err() != nil {
			return false
		}
		if holds, err := f.heartbeat(); err != nil || !holds {
			return false
		}
	}
	return true
}

// list lists the objects (for ListTimeout at most) and makes them, or the failure, the cluster's
// answer; it returns the list's resourceVersion, to watch from.
func (f *feed) list() (string, error) {
	ctx, cancel := context.WithTimeout(f.ctx, f.c.listTimeout())
	defer cancel()
	list, err := f.res.List(ctx, metav1.ListOptions{})
	if err != nil {
		if f.ctx.Err() == nil {
			err = f.c.listError(f.cluster, f.key, err)
			f.publish(func(l *cachedList) { l.err = err })
		}
		return "", err
	}
	items := make(map[string]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		list.Items[i].SetManagedFields(nil)
		items[list.Items[i].GetName()] = &list.Items[i]
	}
	f.items = items
	f.publishItems()
	return list.GetResourceVersion(), nil
}

// heartbeat lists the objects' metadata (for ListTimeout at most) and reports whether they are
// the feed's; a failure is left to the list that follows to report.
func (f *feed) heartbeat() (bool, error) {
	ctx, cancel := context.WithTimeout(f.ctx, f.c.listTimeout())
	defer cancel()
	list, err := f.meta.List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	return f.holds(list), nil
}

// holds reports whether the feed's objects are those of list, at the same resourceVersions.
func (f *feed) holds(list *metav1.PartialObjectMetadataList) bool {
	if len(list.Items) != len(f.items) {
		return false
	}
	for i := range list.Items {
		o, ok := f.items[list.Items[i].Name]
		if !ok || o.GetResourceVersion() != list.Items[i].ResourceVersion {
			return false
		}
	}
	return true
}

// publishItems writes the feed's objects to the cache as the cluster's answer.
func (f *feed) publishItems() {
	items := maps.Clone(f.items)
	if items == nil {
		items = map[string]*unstructured.Unstructured{}
	}
	f.publish(func(l *cachedList) { l.items, l.known = items, items })
}

// publish sets the cached answer of the feed's list, live, unless the feed was stopped or the
// cluster's client is no longer the one the feed reads through (its answer may be another
// cluster's objects), and tells the poller.
func (f *feed) publish(set func(*cachedList)) {
	c := f.c
	c.mu.Lock()
	if e, ok := c.clients[f.id]; f.ctx.Err() != nil || !ok || e.gen != f.gen {
		c.mu.Unlock()
		return
	}
	l := cachedList{ref: f.ref, at: c.clock(), feed: f}
	if prev := c.lists[f.id][f.key]; prev.ref == f.ref {
		l.known = prev.known
	}
	set(&l)
	if c.lists == nil {
		c.lists = map[client.ObjectKey]map[listKey]cachedList{}
	}
	if c.lists[f.id] == nil {
		c.lists[f.id] = map[listKey]cachedList{}
	}
	c.lists[f.id][f.key] = l
	c.mu.Unlock()
	f.changed()
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
