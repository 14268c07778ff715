package pkgrepo_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

const dp = "deployed-packages"

func dpFiles(objects ...string) map[string][]byte {
	files := map[string][]byte{"Kptfile": []byte(kptfile)}
	for _, o := range objects {
		files[o+".yaml"] = []byte("name: " + o + "\n")
	}
	return files
}

// newRepo returns an empty repository served over HTTP and its directory.
func newRepo(t *testing.T, opts ...gittest.Option) (pkgrepo.Remote, string) {
	t.Helper()
	srv := gittest.NewServer(t, opts...)
	return pkgrepo.Remote{URL: srv.CreateRepo(t, "edge01")}, srv.Dir("edge01")
}

func publish(t *testing.T, s *pkgrepo.Store, r pkgrepo.Remote, req pkgrepo.PublishRequest) pkgrepo.PublishResult {
	t.Helper()
	res, err := s.Publish(context.Background(), r, req)
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	return res
}

func TestPublish(t *testing.T) {
	remote, dir := newRepo(t)
	store := pkgrepo.NewStore(t.TempDir())

	// An empty repository gets the branch and v1.
	first := publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a", "b")})
	want := pkgrepo.PublishResult{Changed: true, Revision: 1, Tag: dp + "/v1", Commit: first.Commit}
	if diff := cmp.Diff(want, first); diff != "" {
		t.Errorf("first Publish (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"main": first.Commit}, gittest.Branches(t, dir)); diff != "" {
		t.Errorf("branches (-want +got):\n%s", diff)
	}
	if got := gittest.ReadFile(t, dir, dp+"/v1", dp+"/a.yaml"); got != "name: a" {
		t.Errorf("a.yaml = %q", got)
	}
	if got := gittest.ReadFile(t, dir, "main", dp+"/Kptfile"); got != strings.TrimSpace(kptfile) {
		t.Errorf("Kptfile on main = %q", got)
	}

	// The same files again: no commit, no tag.
	tags := gittest.Tags(t, dir)
	again := publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a", "b")})
	if diff := cmp.Diff(pkgrepo.PublishResult{Revision: 1, Tag: dp + "/v1", Commit: first.Commit}, again); diff != "" {
		t.Errorf("unchanged Publish (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(tags, gittest.Tags(t, dir)); diff != "" {
		t.Errorf("unchanged Publish changed tags (-want +got):\n%s", diff)
	}
	if got := gittest.Log(t, dir, "main"); len(got) != 1 {
		t.Errorf("unchanged Publish committed: %v", got)
	}

	// Someone else commits another package meanwhile.
	other := gittest.Commit(t, dir, "other", map[string]string{"other/Kptfile": kptfile})

	// Dropping b and changing a: v2 on top of the other commit.
	files := dpFiles("a")
	files["a.yaml"] = []byte("changed\n")
	second := publish(t, store, remote, pkgrepo.PublishRequest{
		Package: dp, Files: files, Message: "deploy a", Author: pkgrepo.Signature{Name: "ci", Email: "ci@example.com"},
	})
	if second.Revision != 2 || second.Tag != dp+"/v2" || !second.Changed {
		t.Errorf("second Publish = %+v", second)
	}
	if !gittest.IsAncestor(t, dir, other, second.Commit) {
		t.Errorf("the other writer's commit %s is not an ancestor of %s", other, second.Commit)
	}
	if got := gittest.ReadFile(t, dir, dp+"/v2", "other/Kptfile"); got != strings.TrimSpace(kptfile) {
		t.Errorf("other/Kptfile lost: %q", got)
	}
	tags[dp+"/v2"] = second.Commit
	if diff := cmp.Diff(tags, gittest.Tags(t, dir)); diff != "" {
		t.Errorf("tags (-want +got):\n%s", diff)
	}
	got, err := store.ReadPackage(context.Background(), remote, dp, second.Commit)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(files, got); diff != "" {
		t.Errorf("published files (-want +got):\n%s", diff)
	}
	commit := gittest.ReadCommit(t, dir, second.Commit)
	if !strings.Contains(commit, "author ci <ci@example.com>") || !strings.HasSuffix(commit, "deploy a") {
		t.Errorf("commit:\n%s", commit)
	}
}

func TestPublishFileURLAndDefaults(t *testing.T) {
	_, dir := newRepo(t)
	remote := pkgrepo.Remote{URL: "file://" + dir, Branch: "deploy"}
	store := pkgrepo.NewStore(t.TempDir())
	store.AllowLocal = true

	res := publish(t, store, remote, pkgrepo.PublishRequest{Package: "/edge/" + dp + "/", Files: dpFiles("a")})
	if res.Tag != "edge/"+dp+"/v1" {
		t.Errorf("Tag = %q", res.Tag)
	}
	if b := gittest.Branches(t, dir); b["deploy"] != res.Commit || len(b) != 1 {
		t.Errorf("branches = %v", b)
	}
	commit := gittest.ReadCommit(t, dir, res.Commit)
	if !strings.Contains(commit, "author flotilla <flotilla@flotilla.dev>") || !strings.HasSuffix(commit, "Publish edge/"+dp+"/v1") {
		t.Errorf("commit:\n%s", commit)
	}

	for name, req := range map[string]pkgrepo.PublishRequest{
		"no Kptfile":   {Package: dp, Files: map[string][]byte{"a.yaml": nil}},
		"escaping":     {Package: dp, Files: map[string][]byte{"Kptfile": nil, "../x": nil}},
		"file and dir": {Package: dp, Files: map[string][]byte{"Kptfile": nil, "a": nil, "a/b": nil}},
		"bad package":  {Package: "a/../b", Files: dpFiles()},
	} {
		if _, err := store.Publish(context.Background(), remote, req); err == nil {
			t.Errorf("%s: Publish succeeded", name)
		}
	}
}

// TestPublishUntaggedContent: content committed to the branch by hand, with
// no tag, is tagged rather than left without a revision.
func TestPublishUntaggedContent(t *testing.T) {
	remote, dir := newRepo(t)
	store := pkgrepo.NewStore(t.TempDir())
	head := gittest.Commit(t, dir, dp, map[string]string{dp + "/Kptfile": kptfile, dp + "/a.yaml": "name: a\n"})

	res := publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a")})
	want := pkgrepo.PublishResult{Changed: true, Revision: 1, Tag: dp + "/v1", Commit: head}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("Publish (-want +got):\n%s", diff)
	}
	if got := gittest.Branches(t, dir)["main"]; got != head {
		t.Errorf("main moved to %s", got)
	}
}

// TestPublishLostRace pushes a competing commit while flotilla's push is on
// its way: the server rejects flotilla's push, which fetches, rebuilds on the
// competing commit and pushes again.
func TestPublishLostRace(t *testing.T) {
	var dir string
	var raced atomic.Bool
	race := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack") && raced.CompareAndSwap(false, true) {
				gittest.Commit(t, dir, "other", map[string]string{"other/Kptfile": kptfile}, "other/v1")
			}
			next.ServeHTTP(w, r)
		})
	}
	remote, d := newRepo(t, gittest.WithMiddleware(race))
	dir = d
	store := pkgrepo.NewStore(t.TempDir())
	base := gittest.Commit(t, dir, dp, map[string]string{dp + "/Kptfile": kptfile}, dp+"/v1")

	res := publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a")})
	if !raced.Load() {
		t.Fatal("the race was not provoked")
	}
	other := gittest.Tags(t, dir)["other/v1"]
	if res.Revision != 2 || !gittest.IsAncestor(t, dir, other, res.Commit) || !gittest.IsAncestor(t, dir, base, res.Commit) {
		t.Errorf("Publish = %+v; competing commit %s must be an ancestor", res, other)
	}
	want := map[string]string{dp + "/v1": base, "other/v1": other, dp + "/v2": res.Commit}
	if diff := cmp.Diff(want, gittest.Tags(t, dir)); diff != "" {
		t.Errorf("tags (-want +got):\n%s", diff)
	}
}

// TestPublishIsAtomic: when the server refuses the branch update, the tag
// is not created either.
func TestPublishIsAtomic(t *testing.T) {
	remote, dir := newRepo(t)
	store := pkgrepo.NewStore(t.TempDir())
	publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a")})
	hook := "#!/bin/sh\ncase \"$1\" in refs/heads/*) echo 'branch is protected' >&2; exit 1;; esac\n"
	if err := os.WriteFile(filepath.Join(dir, "hooks", "update"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	tags := gittest.Tags(t, dir)

	_, err := store.Publish(context.Background(), remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a", "b")})
	if err == nil {
		t.Fatal("Publish succeeded past the hook")
	}
	t.Log(err)
	if diff := cmp.Diff(tags, gittest.Tags(t, dir)); diff != "" {
		t.Errorf("a rejected push changed tags (-want +got):\n%s", diff)
	}
}

// TestPublishConcurrently: writers in two stores (think two controller
// replicas) publish different packages to one repository at the same time.
// Every revision lands, none is lost and main holds them all.
func TestPublishConcurrently(t *testing.T) {
	remote, dir := newRepo(t)
	stores := []*pkgrepo.Store{pkgrepo.NewStore(t.TempDir()), pkgrepo.NewStore(t.TempDir())}
	pkgs := []string{"edge/a", "edge/b", "edge/c", "edge/d"}
	results := make([]pkgrepo.PublishResult, len(pkgs))
	errs := make([]error, len(pkgs))
	var wg sync.WaitGroup
	for i, pkg := range pkgs {
		wg.Go(func() {
			results[i], errs[i] = stores[i%2].Publish(context.Background(), remote, pkgrepo.PublishRequest{Package: pkg, Files: dpFiles(pkg[5:])})
		})
	}
	wg.Wait()
	head := gittest.Branches(t, dir)["main"]
	for i, pkg := range pkgs {
		if errs[i] != nil {
			t.Fatalf("Publish %s: %v", pkg, errs[i])
		}
		if results[i].Tag != pkg+"/v1" || !gittest.IsAncestor(t, dir, results[i].Commit, head) {
			t.Errorf("Publish %s = %+v, not on main %s", pkg, results[i], head)
		}
		if got := gittest.ReadFile(t, dir, "main", pkg+"/Kptfile"); got != strings.TrimSpace(kptfile) {
			t.Errorf("%s/Kptfile on main = %q", pkg, got)
		}
	}
}
