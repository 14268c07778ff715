package controller_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// fault is what the git server does to each request while it is set.
type fault int32

const (
	healthy fault = iota
	serverError
	connectionReset
	hang
)

// faulty wraps the git server: 500s, resets or a hang, switched on and off by the test.
func faulty(mode *atomic.Int32) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch fault(mode.Load()) {
			case serverError:
				http.Error(w, "injected failure", http.StatusInternalServerError)
			case connectionReset:
				if hj, ok := w.(http.Hijacker); ok {
					if conn, _, err := hj.Hijack(); err == nil {
						_ = conn.Close()
						return
					}
				}
				http.Error(w, "injected failure", http.StatusBadGateway)
			case hang:
				select {
				case <-r.Context().Done():
				case <-time.After(30 * time.Second):
				}
			default:
				next.ServeHTTP(w, r)
			}
		})
	}
}

// While the git server fails (500s, resets, hangs) flotilla reports it and publishes nothing;
// when the server recovers it publishes, once: no two deployed-packages revisions share content.
func TestGitFaultsThenRecovery(t *testing.T) {
	for name, mode := range map[string]fault{"500": serverError, "reset": connectionReset, "hang": hang} {
		t.Run(name, func(t *testing.T) {
			var state atomic.Int32
			f := newFixture(t, gittest.WithMiddleware(faulty(&state)))
			state.Store(int32(mode))
			catalog := f.repository("catalog")
			f.repository("edge01")
			c := f.cluster()
			f.deployment("edge01-nginx", "nginx-hello", "v1")

			cond := f.condition(catalog, func() []metav1.Condition { return catalog.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionFalse, "RepositoryUnreachable")
			f.g.Expect(cond.Message).To(ContainSubstring(f.git.URL))
			f.g.Expect(gittest.Tags(t, f.edge)).To(BeEmpty())
			f.g.Expect(c.Status.DeployedPackages).To(BeNil())

			state.Store(int32(healthy))
			f.clusterWith(ConsistOf(v1alpha1.PublishedPin{Deployment: "edge01-nginx", Tag: "nginx-hello/v1"}))
			trees := map[string]string{}
			for tag := range gittest.Tags(t, f.edge) {
				tree := gittest.ReadCommit(t, f.edge, tag)[:46] // "tree <sha>"
				f.g.Expect(trees).NotTo(HaveKey(tree), "%s and %s have the same content", tag, trees[tree])
				trees[tree] = tag
			}
		})
	}
}

// A status that says "retrying" retries with backoff even when no event comes: the repositories
// poll once an hour, so only the work queue's backoff can bring the deployment and its cluster
// back after the git server recovers.
func TestRetryWithoutEvents(t *testing.T) {
	var state atomic.Int32
	// Only the catalog fails: the cluster's own repository works, so the cluster has nothing to
	// retry, and only the deployment's retry can resolve the pin.
	onlyCatalog := func(next http.Handler) http.Handler {
		broken := faulty(&state)(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/catalog.git/") {
				broken.ServeHTTP(w, r)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	f := newFixture(t, gittest.WithMiddleware(onlyCatalog))
	state.Store(int32(serverError))
	hourly := func(r *v1alpha1.Repository) { r.Spec.Interval = &metav1.Duration{Duration: time.Hour} }
	catalog := f.repository("catalog", hourly)
	f.repository("edge01", hourly)
	f.cluster()
	pd := f.deployment("edge01-nginx", "nginx-hello", "v1")
	cond := f.condition(pd, func() []metav1.Condition { return pd.Status.Conditions }, v1alpha1.ConditionReconciling, metav1.ConditionTrue, "RepositoryUnreachable")
	f.g.Expect(cond.Message).To(HaveSuffix("; retrying"))
	f.condition(catalog, func() []metav1.Condition { return catalog.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionFalse, "RepositoryUnreachable")
	// Let the events of the failure (the cluster's, the catalog's) play out before the recovery.
	time.Sleep(5 * time.Second)

	state.Store(int32(healthy))
	f.clusterWith(ConsistOf(v1alpha1.PublishedPin{Deployment: "edge01-nginx", Tag: "nginx-hello/v1"}))
	f.condition(pd, func() []metav1.Condition { return pd.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "Published")
	// The catalog's own poll has not run again: it did not bring the deployment back.
	f.g.Expect(env.Client.Get(f.ctx, f.key("catalog"), catalog)).To(Succeed())
	f.g.Expect(meta.IsStatusConditionFalse(catalog.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue())
}

// A Repository whose git server hangs holds one poll until the reconcile timeout, not every
// Repository's: another tenant's repository is polled meanwhile.
func TestHangingRepositoryHoldsOnePoll(t *testing.T) {
	var hanging atomic.Int32
	stuck := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/stuck.git/") {
				hanging.Add(1)
				select {
				case <-r.Context().Done():
				case <-time.After(30 * time.Second):
				}
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	f := newFixture(t, gittest.WithMiddleware(stuck))
	f.git.CreateRepo(t, "stuck")
	hung := f.repository("stuck")
	f.g.Eventually(hanging.Load, 30*time.Second, 50*time.Millisecond).Should(BeNumerically(">", 0))

	catalog := f.repository("catalog")
	f.condition(catalog, func() []metav1.Condition { return catalog.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "Fetched")
	// The stuck poll writes its status when the reconcile timeout ends it: not yet.
	f.g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(hung), hung)).To(Succeed())
	f.g.Expect(hung.Status.Conditions).To(BeEmpty(), "the catalog was polled only after the stuck repository's poll ended")
	// And then it says so.
	f.g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(hung), hung)).To(Succeed())
		g.Expect(meta.IsStatusConditionFalse(hung.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue(), "conditions %v", hung.Status.Conditions)
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
}

// A Repository whose server sends a ref advertisement without end is cut at its bound: the
// Repository says RepositoryTooLarge and Stalled, with the bound in the message, and its poll
// works again once the server behaves.
func TestEndlessAdvertisementRepository(t *testing.T) {
	endless, e := gittest.WithEndlessAdvertisement("catalog")
	f := newFixture(t, endless)
	catalog := f.repository("catalog")
	f.condition(catalog, func() []metav1.Condition { return catalog.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "Fetched")

	e.On.Store(true)
	ready := f.condition(catalog, func() []metav1.Condition { return catalog.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionFalse, "RepositoryTooLarge")
	f.g.Expect(ready.Message).To(ContainSubstring("ref advertisement was larger than 32Mi"))
	f.condition(catalog, func() []metav1.Condition { return catalog.Status.Conditions }, v1alpha1.ConditionStalled, metav1.ConditionTrue, "RepositoryTooLarge")
	f.g.Eventually(e.Ended(), time.Minute).Should(BeClosed(), "the server is still sending a minute after the poll failed")
	hungUp, sent := e.HungUp()
	f.g.Expect(hungUp && sent < 4*pkgrepo.MaxAdvertisementBytes).To(BeTrue(), "the server sent %d bytes before the controller hung up (hung up: %v)", sent, hungUp)

	e.On.Store(false)
	f.condition(catalog, func() []metav1.Condition { return catalog.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "Fetched")
}
