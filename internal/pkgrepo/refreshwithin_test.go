package pkgrepo_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// TestRefreshWithinAnswersFromAFreshMirror: right after a publish (which fetched, then pushed)
// the mirror answers a poll without a request, with the pushed head; another writer's push is
// seen once the fetch is maxAge old, or at once when a refresh is asked for after the fetch.
func TestRefreshWithinAnswersFromAFreshMirror(t *testing.T) {
	var requests atomic.Int32
	srv := gittest.NewServer(t, gittest.WithMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			next.ServeHTTP(w, r)
		})
	}))
	r := pkgrepo.Remote{URL: srv.CreateRepo(t, "cluster")}
	ctx := context.Background()
	store := pkgrepo.NewStore(t.TempDir())
	published, err := store.Publish(ctx, r, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a")})
	if err != nil {
		t.Fatal(err)
	}
	refresh := func(maxAge time.Duration, after time.Time, wantRequest bool, wantHead, when string) {
		t.Helper()
		before := requests.Load()
		snap, fetched, err := store.RefreshWithin(ctx, r, maxAge, after)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if made := requests.Load() > before; made != wantRequest {
			t.Errorf("%s: a request made: %v, want %v", when, made, wantRequest)
		}
		if snap.Head != wantHead {
			t.Errorf("%s: head %s, want %s", when, snap.Head, wantHead)
		}
		if fetched.IsZero() || time.Since(fetched) > time.Minute {
			t.Errorf("%s: fetched at %v", when, fetched)
		}
	}
	refresh(time.Minute, time.Time{}, false, published.Commit, "a poll right after the publish")

	other := gittest.Commit(t, srv.Dir("cluster"), "by-hand", map[string]string{"by-hand/x.yaml": "x: 1\n"})
	refresh(time.Minute, time.Time{}, false, published.Commit, "a poll within the interval of the publish's fetch")
	refresh(time.Minute, time.Now(), true, other, "a refresh asked for after the fetch")
	refresh(time.Minute, time.Time{}, false, other, "a poll right after that")
	refresh(time.Nanosecond, time.Time{}, true, other, "a poll once the fetch is maxAge old")
}
