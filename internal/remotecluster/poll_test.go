package remotecluster

import (
	"context"
	"errors"
	"net/http"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/apiproxy"
	"github.com/flotilla-dev/flotilla/internal/kubetest"
)

// TestPollerNotifiesOnlyWhatChanged: watchers follow ConfigMaps (one absent) of a workload
// cluster, a real API server behind a proxy that counts the requests and can fail them. The
// cluster is listed once and watched, whatever the number of watchers, and asked nothing more
// while nothing changes; nobody is notified while nothing changes; a changed, created or deleted
// object notifies its watcher only, from the watch (no list, no read), a change between a
// watcher's read and its Watch included. A cluster that refuses watches is followed by a
// metadata list per interval, one whose watch connections are reset by a list when they end:
// changes still arrive, and nobody hears of a failure. A cluster that stops answering (its
// connections dropped), or hangs past the list timeout with its watch open, notifies everyone
// once (not every interval), is listed at most once per interval meanwhile, and answers the
// watchers' reads from the failed list without a request; recovery notifies everyone once. A
// cluster nobody watches any more has no watch open and is not asked.
func TestPollerNotifiesOnlyWhatChanged(t *testing.T) {
	_, cfg, admin := startAPIServer(t)
	var lists, fullLists, watches, openWatches atomic.Int32
	var failing, hanging, refuseWatches, resetWatches atomic.Bool
	var readsMu sync.Mutex
	var reads []string // the objects read one by one, in full
	srv := apiproxy.Serve(t, cfg, func(w http.ResponseWriter, r *http.Request) bool {
		const path = "/api/v1/namespaces/default/configmaps"
		if r.Method == http.MethodGet && r.URL.Path == path {
			if r.URL.Query().Get("watch") == "true" {
				watches.Add(1)
				switch {
				case refuseWatches.Load():
					http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"configmaps is forbidden: cannot watch"}`, http.StatusForbidden)
					return true
				case resetWatches.Load():
					if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
						_ = conn.Close()
					}
					return true
				}
				openWatches.Add(1)
				context.AfterFunc(r.Context(), func() { openWatches.Add(-1) })
			} else {
				lists.Add(1)
				if !strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadataList") {
					fullLists.Add(1)
				}
			}
		}
		if name, ok := strings.CutPrefix(r.URL.Path, path+"/"); ok && r.Method == http.MethodGet {
			readsMu.Lock()
			reads = append(reads, name)
			readsMu.Unlock()
		}
		if failing.Load() {
			http.Error(w, "the test says no", http.StatusServiceUnavailable)
			return true
		}
		if hanging.Load() {
			select { // longer than the clients' ListTimeout
			case <-r.Context().Done():
			case <-time.After(2 * time.Second):
			}
			http.Error(w, "too late", http.StatusGatewayTimeout)
			return true
		}
		return false
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	kubeconfig := apiproxy.Kubeconfig(t, srv)
	if err := admin.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kc", Namespace: "default"}, Data: map[string][]byte{"value": kubeconfig}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b", "c"} {
		if err := admin.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}); err != nil {
			t.Fatal(err)
		}
	}
	cluster := &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Name: "edge01", Namespace: "default"}}
	cluster.Spec.KubeConfigSecretRef = &v1alpha1.SecretKeyReference{Name: "kc"}

	const interval = 500 * time.Millisecond
	clients := &Clients{ListTimeout: 300 * time.Millisecond}
	var mu sync.Mutex
	var notified []string
	p := &Poller{Clients: clients, Reader: admin, Interval: interval, Notify: func(_ context.Context, w client.ObjectKey) {
		mu.Lock()
		defer mu.Unlock()
		notified = append(notified, w.Name)
	}}
	// take returns (and clears) who was notified since the last call, sorted.
	take := func() []string {
		mu.Lock()
		defer mu.Unlock()
		got := notified
		notified = nil
		sort.Strings(got)
		return got
	}
	configMaps := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	// As a deployment does: read its object, then follow it.
	for _, name := range []string{"a", "b", "c", "absent"} {
		obj, err := clients.Get(ctx, admin, cluster, configMaps, "default", name, 2*interval)
		if err != nil {
			t.Fatal(err)
		}
		p.Watch(client.ObjectKey{Namespace: "team", Name: "w-" + name}, cluster, Target{GVK: configMaps, Namespace: "default", Name: name, Seen: Seen(obj, err)})
	}
	read := lists.Load()
	go func() { _ = p.Start(ctx) }()

	// takeReads returns (and clears) the objects read in full since the last call.
	takeReads := func() []string {
		readsMu.Lock()
		defer readsMu.Unlock()
		got := reads
		reads = nil
		return got
	}
	// quiet waits n intervals and checks that nobody was notified, and that the cluster was asked
	// nothing but its heartbeat (a metadata list every HeartbeatIntervals intervals): no full
	// list, no watch started, no object read.
	quiet := func(n int, when string) {
		t.Helper()
		before, beforeFull, beforeWatches := lists.Load(), fullLists.Load(), watches.Load()
		takeReads()
		time.Sleep(time.Duration(n) * interval)
		if got := take(); len(got) != 0 {
			t.Fatalf("%s: notified %v with nothing changed", when, got)
		}
		if got, full, w, read := lists.Load()-before, fullLists.Load()-beforeFull, watches.Load()-beforeWatches, takeReads(); got > int32(n/HeartbeatIntervals)+1 || full != 0 || w != 0 || len(read) != 0 {
			t.Fatalf("%s: %d lists (%d in full), %d watches and %v read in full with nothing changed, want no more than the heartbeat's", when, got, full, w, read)
		}
	}
	// failingQuiet is quiet for a cluster that does not answer: it is listed at most once per
	// interval, and nobody is told again.
	failingQuiet := func(n int, when string) {
		t.Helper()
		before := lists.Load()
		time.Sleep(time.Duration(n) * interval)
		if got := take(); len(got) != 0 {
			t.Fatalf("%s: notified %v again", when, got)
		}
		if got := lists.Load() - before; got > int32(n)+1 {
			t.Fatalf("%s: %d lists in %d intervals, want at most one per interval", when, got, n)
		}
	}
	// expect waits for exactly want to be notified.
	expect := func(when string, want ...string) {
		t.Helper()
		deadline := time.Now().Add(30 * interval)
		var got []string
		for time.Now().Before(deadline) && len(got) < len(want) {
			time.Sleep(interval / 5)
			got = append(got, take()...)
		}
		time.Sleep(2 * interval) // anyone else would be notified by now
		got = append(got, take()...)
		sort.Strings(got)
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: notified %v, want %v", when, got, want)
		}
	}
	// goAway drops every connection to the cluster, as a cluster that goes away does.
	goAway := func() { srv.CloseClientConnections() }

	deadline := time.Now().Add(10 * interval)
	for watches.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(interval / 10)
	}
	if got := lists.Load() - read; got != 1 || watches.Load() != 1 {
		t.Fatalf("the poller began with %d lists and %d watches, want one of each", got, watches.Load())
	}
	quiet(6, "after the watches began")
	// A followed cluster costs its feed's one goroutine (client-go's for the watch aside): none
	// waits for its next check.
	settled(t, 10*interval, 1, "a quiet cluster with one feed")

	update := func(name string) {
		t.Helper()
		cm := &corev1.ConfigMap{}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, cm); err != nil {
			t.Fatal(err)
		}
		cm.Data = map[string]string{"status": time.Now().String()}
		if err := admin.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	takeReads()
	beforeFull, beforeWatches := fullLists.Load(), watches.Load()
	update("b")
	expect("b changed", "w-b")
	if got, l, w := takeReads(), fullLists.Load()-beforeFull, watches.Load()-beforeWatches; len(got) != 0 || l != 0 || w != 0 {
		t.Fatalf("b changed: read %v in full, %d full lists, %d watches; want nothing asked (the watch brings it)", got, l, w)
	}

	// A change that lands between a watcher's read and its Watch, seen by the poller before the
	// Watch, is not lost: the poller compares with what the watcher read.
	if err := admin.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "default"}}); err != nil {
		t.Fatal(err)
	}
	var obj *unstructured.Unstructured
	for deadline := time.Now().Add(10 * interval); obj == nil && time.Now().Before(deadline); time.Sleep(interval / 10) {
		var err error
		if obj, err = clients.Get(ctx, admin, cluster, configMaps, "default", "d", 0); err != nil {
			t.Fatal(err)
		}
	}
	if obj == nil {
		t.Fatal("d, created, never reached the cache")
	}
	update("d")
	time.Sleep(3 * interval)
	p.Watch(client.ObjectKey{Namespace: "team", Name: "w-d"}, cluster, Target{GVK: configMaps, Namespace: "default", Name: "d", Seen: Seen(obj, nil)})
	expect("d changed before its watch began", "w-d")
	if err := admin.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "absent", Namespace: "default"}}); err != nil {
		t.Fatal(err)
	}
	expect("absent created", "w-absent")
	if err := admin.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default"}}); err != nil {
		t.Fatal(err)
	}
	expect("a deleted", "w-a")
	if l, w := fullLists.Load()-beforeFull, watches.Load()-beforeWatches; l != 0 || w != 0 {
		t.Fatalf("objects changed, created and deleted: %d full lists and %d watches, want none", l, w)
	}
	// An object nobody follows changes: nobody is told, nothing is asked.
	if err := admin.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unfollowed", Namespace: "default"}}); err != nil {
		t.Fatal(err)
	}
	quiet(4, "an unfollowed object created")

	// A cluster that refuses watches (RBAC without the watch verb): a metadata list per interval
	// follows it, and a difference is listed.
	refuseWatches.Store(true)
	goAway()
	time.Sleep(time.Duration(HeartbeatIntervals+2) * interval) // the heartbeat that was due
	before := lists.Load()
	time.Sleep(4 * interval)
	if got := lists.Load() - before; got < 2 || got > 5 {
		t.Fatalf("watches refused: %d lists in 4 intervals, want about one per interval", got)
	}
	update("c")
	expect("c changed, watches refused", "w-c")
	refuseWatches.Store(false)
	update("c") // listed, and the watch opens again
	expect("c changed again, watches allowed", "w-c")
	quiet(4, "watches allowed again")

	// Watch connections that are reset (a load balancer without a backend for streams): each
	// watch that ends without a word is followed by a list, which brings the change.
	resetWatches.Store(true)
	goAway()
	update("b")
	expect("b changed, watches reset", "w-b")
	resetWatches.Store(false)
	update("b")
	expect("b changed again, watches work", "w-b")

	failing.Store(true)
	goAway()
	expect("the cluster stopped answering", "w-a", "w-absent", "w-b", "w-c", "w-d")
	failingQuiet(4, "the cluster still not answering")
	// Every watcher's read is answered from the failed list: no request per deployment.
	before = lists.Load()
	for _, name := range []string{"a", "b", "c", "d", "absent"} {
		if _, err := clients.Get(ctx, admin, cluster, configMaps, "default", name, 2*interval); err == nil {
			t.Fatalf("read of %s succeeded while the cluster does not answer", name)
		}
	}
	if got := lists.Load() - before; got > 1 {
		t.Fatalf("5 reads of a failing cluster made %d lists, want at most the poller's own", got)
	}
	failing.Store(false)
	expect("the cluster answers again", "w-a", "w-absent", "w-b", "w-c", "w-d")

	// A cluster that hangs with its watch open: the heartbeat gives up after ListTimeout, so does
	// the list after it, and that is its answer, kept like a failure (everyone told once, their
	// reads answered without a request each).
	hanging.Store(true)
	expect("the cluster hangs", "w-a", "w-absent", "w-b", "w-c", "w-d")
	before = lists.Load()
	for _, name := range []string{"a", "b", "c", "d", "absent"} {
		if _, err := clients.Get(ctx, admin, cluster, configMaps, "default", name, 2*interval); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("read of %s while the cluster hangs = %v; want the timeout", name, err)
		}
	}
	if got := lists.Load() - before; got > 1 {
		t.Fatalf("5 reads of a hanging cluster made %d lists, want at most the poller's own", got)
	}
	failingQuiet(4, "the cluster still hanging")
	hanging.Store(false)
	expect("the cluster answers again after hanging", "w-a", "w-absent", "w-b", "w-c", "w-d")

	for _, name := range []string{"a", "b", "c", "d", "absent"} {
		p.Unwatch(client.ObjectKey{Namespace: "team", Name: "w-" + name})
	}
	time.Sleep(interval) // a check under way finishes
	if n := openWatches.Load(); n != 0 {
		t.Fatalf("%d watches still open after every watcher left", n)
	}
	settled(t, 10*interval, 0, "after every watcher left")
	before, beforeWatches = lists.Load(), watches.Load()
	update("c")
	time.Sleep(4 * interval)
	if got, w := lists.Load()-before, watches.Load()-beforeWatches; got != 0 || w != 0 {
		t.Fatalf("a cluster nobody watches was listed %d times and watched %d times", got, w)
	}
	if got := take(); len(got) != 0 {
		t.Fatalf("notified %v after every watch ended", got)
	}
}

// The functions a feed's goroutine and the poller's (a check from its timer, a cluster's
// teardown) begin in, as stack traces name them.
const (
	feedGoroutine   = "remotecluster.(*feed).run("
	pollerGoroutine = "remotecluster.(*Poller).start.func"
)

// settled waits up to within for feeds goroutines in feeds and none in the poller (between
// checks, a cluster has none of its own).
func settled(t *testing.T, within time.Duration, feeds int, when string) {
	t.Helper()
	for deadline := time.Now().Add(within); ; time.Sleep(within / 100) {
		f, c := goroutines(t, feedGoroutine), goroutines(t, pollerGoroutine)
		if f == feeds && c == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d goroutines in feeds, %d in the poller; want %d and none", when, f, c, feeds)
		}
	}
}

// goroutines counts the goroutines whose stack calls a function whose name contains fn.
func goroutines(t *testing.T, fn string) int {
	t.Helper()
	var b strings.Builder
	if err := pprof.Lookup("goroutine").WriteTo(&b, 2); err != nil {
		t.Fatal(err)
	}
	n := 0
	for g := range strings.SplitSeq(b.String(), "\n\n") {
		if strings.Contains(g, fn) {
			n++
		}
	}
	return n
}

// TestKnownKindsAreMappedWithoutDiscovery: a workload cluster's client maps the kinds set in
// Kinds and the built-in kinds flotilla reads without asking discovery (whose answer, on a
// cluster with many CRDs, was most of each client's memory); another kind is discovered and
// works.
func TestKnownKindsAreMappedWithoutDiscovery(t *testing.T) {
	_, cfg, admin := startAPIServer(t)
	var mu sync.Mutex
	var paths []string
	srv := apiproxy.Serve(t, cfg, func(_ http.ResponseWriter, r *http.Request) bool {
		mu.Lock()
		defer mu.Unlock()
		paths = append(paths, r.URL.Path)
		return false
	})
	discovery := func() []string {
		mu.Lock()
		defer mu.Unlock()
		var d []string
		for _, p := range paths {
			// /api, /api/v1, /apis and /apis/GROUP/VERSION; resources are deeper.
			if strings.HasPrefix(p, "/api") && strings.Count(p, "/") <= 3 {
				d = append(d, p)
			}
		}
		return d
	}
	ctx := context.Background()
	if err := admin.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kc", Namespace: "default"}, Data: map[string][]byte{"value": apiproxy.Kubeconfig(t, srv)}}); err != nil {
		t.Fatal(err)
	}
	cluster := &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Name: "edge01", Namespace: "default"}}
	cluster.Spec.KubeConfigSecretRef = &v1alpha1.SecretKeyReference{Name: "kc"}
	widgets := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	clients := &Clients{Known: KnownKinds(widgets)}

	if _, err := clients.Get(ctx, admin, cluster, schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "default", "x", 0); err != nil {
		t.Fatal(err)
	}
	// No Widget CRD here: the request goes out (and says so) without discovery.
	if _, err := clients.Get(ctx, admin, cluster, widgets, "default", "x", 0); !errors.Is(err, ErrKindNotServed) || Reason(err, "ClusterUnreachable") != "KindNotServed" ||
		!strings.Contains(err.Error(), "example.com/v1, Kind=Widget") {
		t.Fatalf("list of Widgets without their CRD = %v; want KindNotServed naming the kind", err)
	}
	if d := discovery(); len(d) != 0 {
		t.Fatalf("known kinds were mapped through discovery: %v (all requests: %v)", d, paths)
	}
	if _, err := clients.Get(ctx, admin, cluster, schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "default", "x", 0); err != nil {
		t.Fatalf("list of an unknown kind: %v", err)
	}
	if len(discovery()) == 0 {
		t.Fatalf("an unknown kind was listed without discovery: %v", paths)
	}
}

// TestBookmarksStandInForHeartbeats: a watch that brings the API server's bookmarks proves that
// the cluster answers, so a cluster whose followed objects do not change is asked nothing more
// than its open watch: no heartbeat list, no Secret read, for longer than two quietWatch periods.
// The server sends a watch a bookmark about every minute, once the kind's resourceVersion moved
// past the watch's (as on a live cluster, where objects of the kind change elsewhere): here a
// ConfigMap in another namespace changes every few seconds. The interval puts quietWatch (90 s,
// as at the default interval) above the bookmark period; without bookmarks a heartbeat would
// come at 90 s (TestPollerNotifiesOnlyWhatChanged, at a short interval, shows that heartbeat). A
// change still arrives at once afterwards.
func TestBookmarksStandInForHeartbeats(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the API server's bookmarks (about 3 minutes)")
	}
	t.Parallel()
	_, cfg, admin := startAPIServer(t)
	var lists, watches atomic.Int32
	srv := apiproxy.Serve(t, cfg, func(_ http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodGet && r.URL.Path == "/api/v1/namespaces/default/configmaps" {
			if r.URL.Query().Get("watch") == "true" {
				watches.Add(1)
			} else {
				lists.Add(1)
			}
		}
		return false
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := admin.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kc", Namespace: "default"}, Data: map[string][]byte{"value": apiproxy.Kubeconfig(t, srv)}}); err != nil {
		t.Fatal(err)
	}
	if err := admin.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default"}}); err != nil {
		t.Fatal(err)
	}
	elsewhere := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: "kube-public"}}
	if err := admin.Create(ctx, elsewhere); err != nil {
		t.Fatal(err)
	}
	go func() {
		for n := 0; ctx.Err() == nil; n++ {
			elsewhere.Data = map[string]string{"n": strconv.Itoa(n)}
			if err := admin.Update(ctx, elsewhere); err != nil && ctx.Err() == nil {
				t.Errorf("update a ConfigMap elsewhere: %v", err)
				return
			}
			sleep(ctx, 5*time.Second)
		}
	}()
	cluster := &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Name: "edge01", Namespace: "default"}}
	cluster.Spec.KubeConfigSecretRef = &v1alpha1.SecretKeyReference{Name: "kc"}
	const interval = 10 * time.Second
	clients := &Clients{}
	notified := make(chan string, 10)
	reader := &kubetest.SecretReads{Reader: admin}
	p := &Poller{Clients: clients, Reader: reader, Interval: interval, Notify: func(_ context.Context, w client.ObjectKey) { notified <- w.Name }}
	configMaps := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	obj, err := clients.Get(ctx, reader, cluster, configMaps, "default", "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	p.Watch(client.ObjectKey{Namespace: "team", Name: "w-a"}, cluster, Target{GVK: configMaps, Namespace: "default", Name: "a", Seen: Seen(obj, nil)})
	go func() { _ = p.Start(ctx) }()
	for deadline := time.Now().Add(3 * interval); watches.Load() == 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the poller opened no watch")
		}
	}
	beforeLists, beforeReads := lists.Load(), reader.N.Load()
	quiet := 2*(interval*HeartbeatIntervals*3/2) - 10*time.Second
	time.Sleep(quiet)
	if l, w, s := lists.Load()-beforeLists, watches.Load(), reader.N.Load()-beforeReads; l != 0 || w != 1 || s != 0 {
		t.Fatalf("quiet for %s with the watch open: %d lists, %d watches, %d Secret reads; want no list (the bookmarks prove the cluster answers), one watch, no read", quiet, l, w, s)
	}
	select {
	case w := <-notified:
		t.Fatalf("%s notified with nothing changed", w)
	default:
	}
	cm := &corev1.ConfigMap{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: "default", Name: "a"}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{"k": "v"}
	if err := admin.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	select {
	case w := <-notified:
		if w != "w-a" {
			t.Fatalf("notified %s, want w-a", w)
		}
	case <-time.After(interval):
		t.Fatal("a change after a quiet watch was not noticed within an interval")
	}
}
