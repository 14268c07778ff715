package pkgrepo_test

import (
	"context"
	"errors"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// TestPublishBuildsOnTheMirror: once this process has fetched or pushed a repository, a publish
// builds on the mirror and pushes without fetching first (the push's advertisement and the push:
// two requests). The push names every ref's old value as the mirror
// holds it, so whatever another writer did meanwhile is refused by the server, and the next
// attempt fetches and builds again:
//   - a commit on the branch: the revision lands on top of it;
//   - the branch rewound (a bad commit dropped): the revision lands on the rewound branch, the
//     dropped commit does not come back;
//   - a tag made for the next revision number: it is left where it is, the revision takes the
//     number after it;
//   - the repository emptied: the publish fails with ErrRemoteEmptied and writes nothing.
func TestPublishBuildsOnTheMirror(t *testing.T) {
	var emptied atomic.Bool
	record, taken := recordRequests()
	srv := gittest.NewServer(t, record, gittest.WithRedirect(&emptied, "edge01", "void"))
	remote := pkgrepo.Remote{URL: srv.CreateRepo(t, "edge01")}
	dir := srv.Dir("edge01")
	srv.CreateRepo(t, "void")
	fetchedFirst := func(when string, got []string) {
		t.Helper()
		if !madeFetch(got) {
			t.Errorf("%s: requests %v; want a fetch", when, got)
		}
	}
	store := pkgrepo.NewStore(t.TempDir())

	first := publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a")})
	fetchedFirst("the first publish of this process", taken())

	second := publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a", "b")})
	if diff := cmp.Diff([]string{"GET refs?git-receive-pack", "POST git-receive-pack"}, taken()); diff != "" {
		t.Errorf("a publish on a mirror this process fetched and pushed: requests (-want +got):\n%s", diff)
	}
	if second.Revision != 2 || !gittest.IsAncestor(t, dir, first.Commit, second.Commit) {
		t.Errorf("second publish = %+v; want v2 on top of %s", second, first.Commit)
	}

	// Another writer's commit.
	other := gittest.Commit(t, dir, "by-hand", map[string]string{"by-hand/x.yaml": "x: 1\n"})
	third := publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("c")})
	fetchedFirst("a publish after another writer's commit", taken())
	if third.Revision != 3 || !gittest.IsAncestor(t, dir, other, third.Commit) {
		t.Errorf("third publish = %+v; want v3 on top of the other writer's %s", third, other)
	}
	if got := gittest.ReadFile(t, dir, "main", "by-hand/x.yaml"); got != "x: 1" {
		t.Errorf("the other writer's file on main = %q", got)
	}

	// The branch rewound past flotilla's last commit.
	gittest.CreateBranch(t, dir, "main", other)
	fourth := publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("d")})
	fetchedFirst("a publish after the branch was rewound", taken())
	if fourth.Revision != 4 || !gittest.IsAncestor(t, dir, other, fourth.Commit) || gittest.IsAncestor(t, dir, third.Commit, fourth.Commit) {
		t.Errorf("fourth publish = %+v; want v4 on the rewound branch (%s), without the dropped %s", fourth, other, third.Commit)
	}

	// A tag made for the next number, on an old commit, the branch left alone.
	gittest.MoveTag(t, dir, dp+"/v5", first.Commit)
	fifth := publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("e")})
	fetchedFirst("a publish after a tag was made for its number", taken())
	tags := gittest.Tags(t, dir)
	if fifth.Revision != 6 || tags[dp+"/v5"] != first.Commit || tags[dp+"/v6"] != fifth.Commit {
		t.Errorf("fifth publish = %+v, tags %v; want v6, and v5 left at %s", fifth, tags, first.Commit)
	}
	if got := gittest.Branches(t, dir)["main"]; got != fifth.Commit {
		t.Errorf("main = %s; want the new revision %s", got, fifth.Commit)
	}

	// The repository emptied.
	emptied.Store(true)
	_, err := store.Publish(context.Background(), remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("f")})
	if !errors.Is(err, pkgrepo.ErrRemoteEmptied) {
		t.Errorf("a publish to an emptied repository: %v; want ErrRemoteEmptied", err)
	}
	if b := gittest.Branches(t, srv.Dir("void")); len(b) != 0 {
		t.Errorf("the emptied repository got branches %v", b)
	}
	if tags := gittest.Tags(t, srv.Dir("void")); len(tags) != 0 {
		t.Errorf("the emptied repository got tags %v", tags)
	}
}

// TestPublishOnAStaleMirrorReadsTheRemote: a plan reads more refs than it writes (the tags that
// set the next number, the branch head a tag-only plan names), so a publish that did not fetch
// goes ahead only if the remote advertises exactly the mirror's refs, and fetches and builds
// again otherwise:
//   - a tag made by hand above the mirror's latest: the revision takes the number after it;
//   - a tag-only plan (the branch head already holds the content) while the branch was rewound
//     past that head: a new commit on the rewound branch, the dropped head does not come back;
//   - a tag-only plan while the repository was emptied: ErrRemoteEmptied, nothing written.
func TestPublishOnAStaleMirrorReadsTheRemote(t *testing.T) {
	var emptied atomic.Bool
	srv := gittest.NewServer(t, gittest.WithRedirect(&emptied, "edge01", "void"))
	remote := pkgrepo.Remote{URL: srv.CreateRepo(t, "edge01")}
	dir := srv.Dir("edge01")
	srv.CreateRepo(t, "void")
	store := pkgrepo.NewStore(t.TempDir())
	ctx := context.Background()
	first := publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a")})
	publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a", "b")}) // the next builds on the mirror

	gittest.MoveTag(t, dir, dp+"/v7", first.Commit)
	res := publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("c")})
	if res.Revision != 8 {
		t.Errorf("a publish after v7 was tagged by hand = %+v; want v8", res)
	}

	// The content of the next publish lands on main by hand, and the mirror learns it.
	byHand := func() string {
		t.Helper()
		head := gittest.Commit(t, dir, dp, map[string]string{dp + "/Kptfile": kptfile, dp + "/d.yaml": "name: d\n"})
		if _, err := store.Refresh(ctx, remote); err != nil {
			t.Fatal(err)
		}
		return head
	}
	base := gittest.Branches(t, dir)["main"]
	dropped := byHand()
	gittest.CreateBranch(t, dir, "main", base) // rewound past the hand-made head
	res = publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("d")})
	if res.Revision != 9 || res.Commit == dropped || gittest.IsAncestor(t, dir, dropped, res.Commit) || !gittest.IsAncestor(t, dir, base, res.Commit) {
		t.Errorf("a tag-only publish after the branch was rewound = %+v; want v9 on the rewound branch %s, not the dropped %s", res, base, dropped)
	}

	byHand()
	emptied.Store(true)
	_, err := store.Publish(ctx, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("d")})
	if !errors.Is(err, pkgrepo.ErrRemoteEmptied) {
		t.Errorf("a tag-only publish to an emptied repository: %v; want ErrRemoteEmptied", err)
	}
	if refs := gittest.Tags(t, srv.Dir("void")); len(refs) != 0 {
		t.Errorf("the emptied repository got tags %v", refs)
	}
}

// recordRequests is a git server option that records each request as "METHOD last-path-element"
// (with "?service" for an advertisement), and a function that returns the requests recorded
// since it was last called.
func recordRequests() (gittest.Option, func() []string) {
	var mu sync.Mutex
	var requests []string
	record := gittest.WithMiddleware(func(next http.Handler) http.Handler {
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
	return record, func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := requests
		requests = nil
		return out
	}
}

// madeFetch tells whether requests hold a fetch (or the advertisement that starts one).
func madeFetch(requests []string) bool {
	return slices.Contains(requests, "POST git-upload-pack") || slices.Contains(requests, "GET refs?git-upload-pack")
}

// TestPublishAfterAPoll: a publish on a mirror this process fetched (a Repository's poll), but
// never pushed to, builds on the mirror too: the push's advertisement and the push, no fetch
// first; another writer's commit since the poll is found by the push, and other credentials
// than the poll's fetch first. A server that offers no atomic push is found out by the first
// publish, which then fetches and pushes with go-git's push; for an hour after, every publish
// fetches first, without trying the exact push again; then the server is asked again (the test
// moves the Store's clock), and once it offers atomic pushes, publishes push exactly again.
func TestPublishAfterAPoll(t *testing.T) {
	record, taken := recordRequests()
	srv := gittest.NewServer(t, record)
	remote := pkgrepo.Remote{URL: srv.CreateRepo(t, "edge01")}
	store := pkgrepo.NewStore(t.TempDir())
	if _, err := store.Refresh(context.Background(), remote); err != nil {
		t.Fatal(err)
	}
	taken()
	first := publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a")})
	if diff := cmp.Diff([]string{"GET refs?git-receive-pack", "POST git-receive-pack"}, taken()); diff != "" {
		t.Errorf("a publish on a mirror a poll fetched: requests (-want +got):\n%s", diff)
	}
	if first.Revision != 1 || gittest.Branches(t, srv.Dir("edge01"))["main"] != first.Commit {
		t.Errorf("first publish = %+v; want v1 on main", first)
	}

	// Another writer's commit between a poll and the publish: the exact push is refused, and the
	// publish fetches and lands on top of it.
	dir := srv.Dir("edge01")
	if _, err := store.Refresh(context.Background(), remote); err != nil {
		t.Fatal(err)
	}
	other := gittest.Commit(t, dir, "by-hand", map[string]string{"by-hand/x.yaml": "x: 1\n"})
	taken()
	second := publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a", "b")})
	if got := taken(); len(got) < 3 || got[0] != "GET refs?git-receive-pack" || !madeFetch(got[1:]) {
		t.Errorf("a publish after another writer's commit: requests %v; want the exact push's advertisement (refused: stale), then a fetch", got)
	}
	if second.Revision != 2 || !gittest.IsAncestor(t, dir, other, second.Commit) {
		t.Errorf("second publish = %+v; want v2 on top of the other writer's %s", second, other)
	}

	// Other credentials than those of the last fetch: the publish fetches first.
	withAuth := remote
	withAuth.Auth = pkgrepo.Auth{Username: "someone", Password: "else"}
	publish(t, store, withAuth, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a", "b", "c")})
	if got := taken(); len(got) == 0 || got[0] != "GET refs?git-upload-pack" {
		t.Errorf("a publish with other credentials: requests %v; want a fetch first", got)
	}

	remote = pkgrepo.Remote{URL: srv.CreateRepo(t, "old")}
	if out, err := exec.Command("git", "-C", srv.Dir("old"), "config", "receive.advertiseAtomic", "false").CombinedOutput(); err != nil {
		t.Fatalf("git config: %v: %s", err, out)
	}
	if _, err := store.Refresh(context.Background(), remote); err != nil {
		t.Fatal(err)
	}
	taken()
	// The first publish asks for one more advertisement for the push than the second: the exact
	// push's, which finds the server does not take it, before go-git's push.
	var advertisements []int
	for i, files := range [][]string{{"a"}, {"a", "b"}} {
		res := publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles(files...)})
		if res.Revision != i+1 || gittest.Branches(t, srv.Dir("old"))["main"] != res.Commit {
			t.Errorf("publish %d to a server without atomic pushes = %+v; want v%d on main", i+1, res, i+1)
		}
		got := taken()
		if !madeFetch(got) {
			t.Errorf("publish %d to a server without atomic pushes: requests %v; want a fetch", i+1, got)
		}
		advertisements = append(advertisements, strings.Count(strings.Join(got, ","), "GET refs?git-receive-pack"))
	}
	if advertisements[0] != advertisements[1]+1 {
		t.Errorf("advertisements for the push, first and second publish: %v; want one fewer the second time", advertisements)
	}

	// An hour on, the server is asked again: still without atomic pushes, the exact push is
	// tried and refused once more before go-git's push; once it offers them, the publish pushes
	// exactly, without a fetch first.
	later := func(d time.Duration) { pkgrepo.SetClock(store, func() time.Time { return time.Now().Add(d) }) }
	later(pkgrepo.AtomicRecheck + time.Minute)
	res := publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a", "b", "c")})
	got := taken()
	if res.Revision != 3 || gittest.Branches(t, srv.Dir("old"))["main"] != res.Commit || !madeFetch(got) ||
		strings.Count(strings.Join(got, ","), "GET refs?git-receive-pack") != advertisements[0] {
		t.Errorf("publish an hour later to a server still without atomic pushes = %+v, requests %v; want v3 on main, the exact push tried again (%d advertisements for the push) and a fetch", res, got, advertisements[0])
	}
	if out, err := exec.Command("git", "-C", srv.Dir("old"), "config", "receive.advertiseAtomic", "true").CombinedOutput(); err != nil {
		t.Fatalf("git config: %v: %s", err, out)
	}
	res = publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a", "b", "c", "d")})
	if got := taken(); res.Revision != 4 || !madeFetch(got) {
		t.Errorf("publish within the hour after the server was found without atomic pushes = %+v, requests %v; want v4 and a fetch first", res, got)
	}
	later(2*pkgrepo.AtomicRecheck + 2*time.Minute)
	res = publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a", "b")})
	if diff := cmp.Diff([]string{"GET refs?git-receive-pack", "POST git-receive-pack"}, taken()); diff != "" {
		t.Errorf("publish an hour later to a server that now offers atomic pushes: requests (-want +got):\n%s", diff)
	}
	if res.Revision != 5 || gittest.Branches(t, srv.Dir("old"))["main"] != res.Commit {
		t.Errorf("publish to a server that now offers atomic pushes = %+v; want v5 on main", res)
	}
}
