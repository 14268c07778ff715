package pkgrepo_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// TestPublishBuildsOnTheMirror: a publish after this process fetched the repository pushes
// without fetching first (no upload-pack request, one push). When another writer pushed in
// between, the push is refused, the next attempt fetches, and the revision lands on top of the
// other writer's commit: nothing of theirs is lost, no revision number is taken twice.
func TestPublishBuildsOnTheMirror(t *testing.T) {
	var mu sync.Mutex
	var requests []string
	count := gittest.WithMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			what := r.Method + " " + r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
			if s := r.URL.Query().Get("service"); s != "" {
				what += "?" + s
			}
			mu.Lock()
			requests = append(requests, what)
			mu.Unlock()
			next.ServeHTTP(w, r)
		})
	})
	taken := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := requests
		requests = nil
		return out
	}
	remote, dir := newRepo(t, count)
	store := pkgrepo.NewStore(t.TempDir())

	first := publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a")})
	if got := taken(); !contains(got, "GET refs?git-upload-pack") {
		t.Errorf("the first publish of this process made %v, want a fetch before its push", got)
	}

	second := publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a", "b")})
	want := []string{"GET refs?git-receive-pack", "POST git-receive-pack"}
	if diff := cmp.Diff(want, taken()); diff != "" {
		t.Errorf("a publish on a mirror this process fetched: requests (-want +got):\n%s", diff)
	}
	if second.Revision != 2 || !gittest.IsAncestor(t, dir, first.Commit, second.Commit) {
		t.Errorf("second publish = %+v, want v2 on top of %s", second, first.Commit)
	}

	other := gittest.Commit(t, dir, "by-hand", map[string]string{"by-hand/x.yaml": "x: 1\n"})
	third := publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("c")})
	if got := taken(); !contains(got, "POST git-upload-pack") {
		t.Errorf("a publish on a stale mirror made %v, want its refused push followed by a fetch", got)
	}
	if third.Revision != 3 || !gittest.IsAncestor(t, dir, other, third.Commit) {
		t.Errorf("third publish = %+v, want v3 on top of the other writer's %s", third, other)
	}
	if got := gittest.ReadFile(t, dir, "main", "by-hand/x.yaml"); got != "x: 1" {
		t.Errorf("the other writer's file on main = %q", got)
	}
	tags := gittest.Tags(t, dir)
	for n, c := range map[string]string{dp + "/v1": first.Commit, dp + "/v2": second.Commit, dp + "/v3": third.Commit} {
		if tags[n] != c {
			t.Errorf("tag %s = %s, want %s", n, tags[n], c)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
