package pkgrepo_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

const kptfile = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: upf\n"

// catalog is a repository with free5gc-upf v1 (lightweight tag), v2
// (annotated tag), a tag without a Kptfile and an unrelated package.
type catalog struct {
	remote     pkgrepo.Remote
	dir        string
	v1, v2, v3 string
}

func newCatalog(t *testing.T) catalog {
	t.Helper()
	srv := gittest.NewServer(t)
	url := srv.CreateRepo(t, "catalog")
	dir := srv.Dir("catalog")
	c := catalog{remote: pkgrepo.Remote{URL: url}, dir: dir}
	c.v1 = gittest.Commit(t, dir, "free5gc-upf", map[string]string{
		"free5gc-upf/Kptfile": kptfile, "free5gc-upf/deploy.yaml": "replicas: 1\n",
	}, "free5gc-upf/v1")
	c.v2 = gittest.Commit(t, dir, "free5gc-upf", map[string]string{
		"free5gc-upf/Kptfile": kptfile, "free5gc-upf/deploy.yaml": "replicas: 2\n", "free5gc-upf/sub/cm.yaml": "x\n",
	})
	gittest.AnnotatedTag(t, dir, "free5gc-upf/v2", c.v2)
	c.v3 = gittest.Commit(t, dir, "free5gc-upf", map[string]string{"free5gc-upf/README": "gone\n"}, "free5gc-upf/v3")
	gittest.Commit(t, dir, "", map[string]string{"edge/smf/Kptfile": kptfile}, "edge/smf/v1", "free5gc-upf/vnext", "free5gc-upf/v04")
	return c
}

func TestResolve(t *testing.T) {
	c := newCatalog(t)
	store := pkgrepo.NewStore(t.TempDir())
	store.AllowLocal = true
	fileRemote := pkgrepo.Remote{URL: "file://" + c.dir}

	for _, tc := range []struct {
		name     string
		remote   pkgrepo.Remote
		pkg, rev string
		want     pkgrepo.Revision
		wantErr  error
	}{
		{name: "lightweight tag", pkg: "free5gc-upf", rev: "v1",
			want: pkgrepo.Revision{Package: "free5gc-upf", Number: 1, Tag: "free5gc-upf/v1", Commit: c.v1}},
		{name: "annotated tag is peeled", pkg: "free5gc-upf", rev: "v2",
			want: pkgrepo.Revision{Package: "free5gc-upf", Number: 2, Tag: "free5gc-upf/v2", Commit: c.v2}},
		{name: "nested package over file://", remote: fileRemote, pkg: "/edge/smf/", rev: "latest",
			want: pkgrepo.Revision{Package: "edge/smf", Number: 1, Tag: "edge/smf/v1", Commit: gittest.Branches(t, c.dir)["main"]}},
		{name: "latest is the highest N even without a Kptfile", pkg: "free5gc-upf", rev: "latest", wantErr: pkgrepo.ErrPackageNotFound},
		{name: "tag without Kptfile", pkg: "free5gc-upf", rev: "v3", wantErr: pkgrepo.ErrPackageNotFound},
		{name: "missing revision", pkg: "free5gc-upf", rev: "v9", wantErr: pkgrepo.ErrRevisionNotFound},
		{name: "missing package", pkg: "nope", rev: "v1", wantErr: pkgrepo.ErrPackageNotFound},
		{name: "prefix of a package is not a package", pkg: "edge", rev: "latest", wantErr: pkgrepo.ErrPackageNotFound},
		{name: "invalid revision", pkg: "free5gc-upf", rev: "7", wantErr: errAny},
		{name: "invalid package", pkg: "../x", rev: "v1", wantErr: errAny},
		{name: "package that cannot be a tag", pkg: "a b~", rev: "v1", wantErr: errAny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.remote
			if r.URL == "" {
				r = c.remote
			}
			got, err := store.Resolve(context.Background(), r, tc.pkg, tc.rev)
			checkErr(t, err, tc.wantErr)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Resolve (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLatestAndReadPackage(t *testing.T) {
	c := newCatalog(t)
	store := pkgrepo.NewStore(t.TempDir())
	ctx := context.Background()

	got, ok, err := store.Latest(ctx, c.remote, "free5gc-upf")
	if err != nil || !ok {
		t.Fatalf("Latest = %v, %v", ok, err)
	}
	want := pkgrepo.Revision{Package: "free5gc-upf", Number: 3, Tag: "free5gc-upf/v3", Commit: c.v3}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Latest (-want +got):\n%s", diff)
	}
	if _, ok, err := store.Latest(ctx, c.remote, "nope"); ok || err != nil {
		t.Errorf("Latest(nope) = %v, %v; want false, nil", ok, err)
	}

	files, err := store.ReadPackage(ctx, c.remote, "free5gc-upf", c.v2)
	if err != nil {
		t.Fatal(err)
	}
	wantFiles := map[string][]byte{"Kptfile": []byte(kptfile), "deploy.yaml": []byte("replicas: 2\n"), "sub/cm.yaml": []byte("x\n")}
	if diff := cmp.Diff(wantFiles, files); diff != "" {
		t.Errorf("ReadPackage (-want +got):\n%s", diff)
	}
	_, err = store.ReadPackage(ctx, c.remote, "nope", c.v2)
	checkErr(t, err, pkgrepo.ErrPackageNotFound)
	_, err = store.ReadPackage(ctx, c.remote, "free5gc-upf", "0123456789012345678901234567890123456789")
	checkErr(t, err, pkgrepo.ErrRevisionNotFound)
}

func TestRefresh(t *testing.T) {
	srv := gittest.NewServer(t)
	remote := pkgrepo.Remote{URL: srv.CreateRepo(t, "r")}
	dir := srv.Dir("r")
	store := pkgrepo.NewStore(t.TempDir())
	ctx := context.Background()

	empty, err := store.Refresh(ctx, remote)
	if err != nil {
		t.Fatalf("Refresh of an empty repository: %v", err)
	}
	if empty.Head != "" {
		t.Errorf("Head of an empty repository = %q", empty.Head)
	}

	head := gittest.Commit(t, dir, "app", map[string]string{"app/Kptfile": kptfile}, "app/v1")
	first, err := store.Refresh(ctx, remote)
	if err != nil {
		t.Fatal(err)
	}
	if first.Head != head || first.RefsDigest == empty.RefsDigest {
		t.Errorf("after a commit: %+v, was %+v", first, empty)
	}
	again, _ := store.Refresh(ctx, remote)
	if again != first {
		t.Errorf("Refresh without changes: %+v, want %+v", again, first)
	}

	// A new tag on the same head changes the digest, not the head.
	gittest.AnnotatedTag(t, dir, "app/v2", head)
	second, err := store.Refresh(ctx, remote)
	if err != nil {
		t.Fatal(err)
	}
	if second.Head != head || second.RefsDigest == first.RefsDigest {
		t.Errorf("after a new tag: %+v, was %+v", second, first)
	}
	// The mirror was refreshed, so Resolve sees the tag without a fetch.
	if rev, err := store.Resolve(ctx, remote, "app", "latest"); err != nil || rev.Number != 2 {
		t.Errorf("Resolve latest = %+v, %v", rev, err)
	}
}

// errAny stands for "some error" in tables.
var errAny = errors.New("any error")

func checkErr(t *testing.T, err, want error) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want == nil:
	case err == nil:
		t.Fatalf("got no error, want %v", want)
	case !errors.Is(want, errAny) && !errors.Is(err, want):
		t.Fatalf("error %q does not wrap %q", err, want)
	}
}

// A package with a symlink or an oversized file is refused, never followed or read whole.
func TestReadPackageRefusesSymlinksAndHugeFiles(t *testing.T) {
	srv := gittest.NewServer(t)
	srv.CreateRepo(t, "catalog")
	dir := srv.Dir("catalog")
	work := t.TempDir()
	run := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q", "-b", "main")
	if err := os.MkdirAll(filepath.Join(work, "evil"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "evil", "Kptfile"), []byte("kind: Kptfile\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(work, "evil", "passwd.yaml")); err != nil {
		t.Fatal(err)
	}
	run("add", "-A")
	run("commit", "-q", "-m", "evil")
	run("tag", "evil/v1")
	run("push", "-q", dir, "main", "--tags")
	store := pkgrepo.NewStore(t.TempDir())
	remote := pkgrepo.Remote{URL: srv.URL + "/catalog.git"}
	rev, err := store.Resolve(context.Background(), remote, "evil", "v1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = store.ReadPackage(context.Background(), remote, "evil", rev.Commit)
	if !errors.Is(err, pkgrepo.ErrInvalidPackage) || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("want the symlink refused, got %v", err)
	}
}

// An exact revision, once resolved, resolves again while the remote is unreachable (tags are never
// moved); "latest" needs the remote.
func TestResolvedRevisionSurvivesAnOutage(t *testing.T) {
	c := newCatalog(t)
	store := pkgrepo.NewStore(t.TempDir())
	store.RefreshInterval = 1 // every read would fetch
	store.AllowLocal = true
	remote := pkgrepo.Remote{URL: "file://" + c.dir}
	ctx := context.Background()
	first, err := store.Resolve(ctx, remote, "free5gc-upf", "v2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Resolve(ctx, remote, "edge/smf", "latest"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(c.dir, c.dir+".away"); err != nil {
		t.Fatal(err)
	}
	again, err := store.Resolve(ctx, remote, "free5gc-upf", "v2")
	if err != nil || again != first {
		t.Errorf("Resolve v2 during the outage = %+v, %v; want %+v", again, err, first)
	}
	if _, err := store.Resolve(ctx, remote, "edge/smf", "latest"); err == nil {
		t.Error("Resolve latest during the outage succeeded; want the fetch error")
	}
}

// TestMirrorLeftBrokenIsRecreated: a controller killed in the middle of a fetch can leave a ref
// file truncated to nothing, or a ref naming an object that never arrived. The next process must
// not fail every fetch of that mirror: it recreates the mirror from the remote.
func TestMirrorLeftBrokenIsRecreated(t *testing.T) {
	c := newCatalog(t)
	for _, tc := range []struct {
		name    string
		breakIt func(t *testing.T, mirror string)
	}{
		{"empty ref file", func(t *testing.T, mirror string) {
			writeRef(t, mirror, "refs/tags/free5gc-upf/v1", "")
		}},
		{"ref to a missing object", func(t *testing.T, mirror string) {
			writeRef(t, mirror, "refs/heads/main", strings.Repeat("ab", 20)+"\n")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache := t.TempDir()
			ctx := context.Background()
			if _, err := pkgrepo.NewStore(cache).Resolve(ctx, c.remote, "free5gc-upf", "v1"); err != nil {
				t.Fatal(err)
			}
			mirrors, err := os.ReadDir(cache)
			if err != nil || len(mirrors) != 1 {
				t.Fatalf("cache holds %v (%v); want one mirror", mirrors, err)
			}
			tc.breakIt(t, filepath.Join(cache, mirrors[0].Name()))

			// A new process (a new Store) over the same cache directory.
			store := pkgrepo.NewStore(cache)
			got, err := store.Resolve(ctx, c.remote, "free5gc-upf", "v1")
			if err != nil || got.Commit != c.v1 {
				t.Fatalf("Resolve v1 from the broken mirror = %+v, %v; want commit %s", got, err, c.v1)
			}
			if _, err := store.Refresh(ctx, c.remote); err != nil {
				t.Fatalf("Refresh after recreating the mirror: %v", err)
			}
		})
	}
}

func writeRef(t *testing.T, mirror, name, content string) {
	t.Helper()
	path := filepath.Join(mirror, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A remote's MaxAge (the Repository's spec.interval) bounds how often reads fetch: within it,
// "latest" is answered from the mirror without asking the git server (here: gone), and a tag
// pushed meanwhile shows after the next Refresh, which always fetches.
func TestReadsFetchOncePerMaxAge(t *testing.T) {
	c := newCatalog(t)
	store := pkgrepo.NewStore(t.TempDir())
	store.AllowLocal = true
	remote := pkgrepo.Remote{URL: "file://" + c.dir, MaxAge: time.Hour}
	ctx := context.Background()
	first, err := store.Resolve(ctx, remote, "edge/smf", "latest")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(c.dir, c.dir+".away"); err != nil {
		t.Fatal(err)
	}
	again, err := store.Resolve(ctx, remote, "edge/smf", "latest")
	if err != nil || again != first {
		t.Errorf("Resolve latest within MaxAge = %+v, %v; want %+v from the mirror, without a fetch", again, err, first)
	}
	if _, err := store.Refresh(ctx, remote); err == nil {
		t.Errorf("Refresh with the remote gone succeeded: it must always fetch")
	}
}

// TestEmptyAnswerKeepsTheMirror: a server that suddenly advertises no refs (one being restored,
// or a proxy sending the request to a fresh repository) is taken for a fault when the repository
// had refs before: the fetch fails with ErrRemoteEmptied, the mirror keeps its refs, exact
// revisions still resolve, and the next good answer is used as usual.
func TestEmptyAnswerKeepsTheMirror(t *testing.T) {
	var empty atomic.Bool
	srv := gittest.NewServer(t, gittest.WithRedirect(&empty, "catalog", "void"))
	srv.CreateRepo(t, "void")
	remote := pkgrepo.Remote{URL: srv.CreateRepo(t, "catalog")}
	dir := srv.Dir("catalog")
	store := pkgrepo.NewStore(t.TempDir())
	store.RefreshInterval = 1 // every read fetches
	ctx := context.Background()

	// Empty from the start is a new repository, not a fault.
	empty.Store(true)
	if _, err := store.Refresh(ctx, remote); err != nil {
		t.Fatalf("Refresh of a repository that never had refs: %v", err)
	}
	empty.Store(false)

	v1 := gittest.Commit(t, dir, "app", map[string]string{"app/Kptfile": kptfile}, "app/v1")
	before, err := store.Refresh(ctx, remote)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Resolve(ctx, remote, "app", "v1"); err != nil {
		t.Fatal(err)
	}

	empty.Store(true)
	_, err = store.Refresh(ctx, remote)
	if !errors.Is(err, pkgrepo.ErrRemoteEmptied) {
		t.Fatalf("Refresh against an empty answer = %v; want ErrRemoteEmptied", err)
	}
	if !strings.Contains(err.Error(), "push a branch") {
		t.Errorf("error %q does not say how to start the repository over", err)
	}
	if _, err := store.Resolve(ctx, remote, "app", "latest"); !errors.Is(err, pkgrepo.ErrRemoteEmptied) {
		t.Errorf("Resolve latest against an empty answer = %v; want ErrRemoteEmptied", err)
	}
	if rev, err := store.Resolve(ctx, remote, "app", "v1"); err != nil || rev.Commit != v1 {
		t.Errorf("Resolve v1 against an empty answer = %+v, %v; want commit %s", rev, err, v1)
	}

	empty.Store(false)
	after, err := store.Refresh(ctx, remote)
	if err != nil || after.RefsDigest != before.RefsDigest {
		t.Errorf("Refresh after the server recovered = %+v, %v; want the refs of before (%s)", after, err, before.RefsDigest)
	}

	// Starting over on purpose: a branch pushed to the emptied repository is a real answer, and
	// the tags it no longer has are dropped.
	if out, err := exec.Command("git", "-C", dir, "tag", "-d", "app/v1").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if _, err := store.Refresh(ctx, remote); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Resolve(ctx, remote, "app", "latest"); !errors.Is(err, pkgrepo.ErrPackageNotFound) {
		t.Errorf("Resolve latest after the tag was deleted = %v; want ErrPackageNotFound", err)
	}
}

// A package whose tree names one subtree many times, level after level, is refused within the
// entry limit instead of walked without end (1,000 names a level, four levels: 10^12 entries, no
// file among them); one tree too large to decode is refused before it is decoded; a submodule is
// refused, not left out of the package without a word.
func TestReadPackageRefusesTreeBombsAndSubmodules(t *testing.T) {
	srv := gittest.NewServer(t)
	srv.CreateRepo(t, "catalog")
	dir := srv.Dir("catalog")
	git := func(stdin string, args ...string) string {
		cmd := exec.Command("git", append([]string{"--git-dir", dir}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	kptfile := git("kind: Kptfile\n", "hash-object", "-w", "--stdin")
	level := git("", "mktree") // the empty tree
	for range 4 {
		var b strings.Builder
		for i := range 1000 {
			fmt.Fprintf(&b, "040000 tree %s\td%d\n", level, i)
		}
		level = git(b.String(), "mktree")
	}
	bomb := git(fmt.Sprintf("100644 blob %s\tKptfile\n040000 tree %s\tx\n", kptfile, level), "mktree")
	sub := git(fmt.Sprintf("100644 blob %s\tKptfile\n160000 commit %s\tmodule\n", kptfile, strings.Repeat("ab", 20)), "mktree")
	// One tree of 300,000 entries naming one blob: 11 MB to decode, a few KB in a pack.
	var wideTree strings.Builder
	for i := range 300_000 {
		fmt.Fprintf(&wideTree, "100644 blob %s\tf%06d\n", kptfile, i)
	}
	wide := git(fmt.Sprintf("100644 blob %s\tKptfile\n040000 tree %s\tx\n", kptfile, git(wideTree.String(), "mktree")), "mktree")
	root := git(fmt.Sprintf("040000 tree %s\tbomb\n040000 tree %s\tsub\n040000 tree %s\twide\n", bomb, sub, wide), "mktree")
	commit := git("", "commit-tree", root, "-m", "hostile")
	git("", "update-ref", "refs/heads/main", commit)
	git("", "tag", "bomb/v1", commit)
	git("", "tag", "sub/v1", commit)
	git("", "tag", "wide/v1", commit)
	// A commit with a message of 2 MiB, its package otherwise fine: refused before it is decoded.
	long := git(strings.Repeat("a long message ", 140_000), "commit-tree",
		git(fmt.Sprintf("040000 tree %s\tlong\n", git(fmt.Sprintf("100644 blob %s\tKptfile\n", kptfile), "mktree")), "mktree"), "-F", "-")
	git("", "tag", "long/v1", long)

	store := pkgrepo.NewStore(t.TempDir())
	remote := pkgrepo.Remote{URL: srv.URL + "/catalog.git"}
	ctx := context.Background()
	for pkg, want := range map[string]string{"bomb": "more than 20000 files and directories", "sub": "module is a symlink or submodule", "wide": "more than the 8388608 flotilla reads"} {
		if _, err := store.Resolve(ctx, remote, pkg, "v1"); err != nil {
			t.Fatalf("Resolve %s: %v", pkg, err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := store.ReadPackage(ctx, remote, pkg, commit)
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, pkgrepo.ErrInvalidPackage) || !strings.Contains(err.Error(), want) {
				t.Errorf("ReadPackage %s = %v; want ErrInvalidPackage saying %q", pkg, err, want)
			}
		case <-time.After(time.Minute):
			t.Fatalf("ReadPackage %s still walking after a minute", pkg)
		}
	}
	if _, err := store.Resolve(ctx, remote, "long", "v1"); !errors.Is(err, pkgrepo.ErrInvalidPackage) || !strings.Contains(err.Error(), "more than the 1048576 flotilla reads") {
		t.Errorf("Resolve of a commit of 2 MiB = %v; want ErrInvalidPackage", err)
	}
}
