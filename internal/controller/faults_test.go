package controller_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/gittest"
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
