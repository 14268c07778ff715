package pkgrepo_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// BenchmarkRefreshUnchanged measures an idle Repository poll: a refresh of a fetched mirror whose
// remote, served over smart HTTP, advertises the refs the mirror holds (one request, nothing
// fetched). The server's own CPU (git http-backend) is not the controller's; -benchmem counts
// what the poll allocates, conns/op the TCP connections it opens (0 when they are reused).
func BenchmarkRefreshUnchanged(b *testing.B) {
	var mu sync.Mutex
	conns := map[string]bool{}
	srv := gittest.NewServer(b, gittest.WithMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			conns[r.RemoteAddr] = true
			mu.Unlock()
			next.ServeHTTP(w, r)
		})
	}))
	remote := pkgrepo.Remote{URL: srv.CreateRepo(b, "edge01")}
	gittest.Commit(b, srv.Dir("edge01"), "deployed-packages", map[string]string{"deployed-packages/Kptfile": kptfile}, "deployed-packages/v1")
	store := pkgrepo.NewStore(b.TempDir())
	store.RefreshInterval = 1 // every read fetches
	ctx := context.Background()
	if _, err := store.Refresh(ctx, remote); err != nil {
		b.Fatal(err)
	}
	mu.Lock()
	before := len(conns)
	mu.Unlock()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := store.Refresh(ctx, remote); err != nil {
			b.Fatal(err)
		}
	}
	mu.Lock()
	b.ReportMetric(float64(len(conns)-before)/float64(b.N), "conns/op")
	mu.Unlock()
}
