package pkgrepo_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// A server whose ref advertisement never ends is cut at MaxAdvertisementBytes, over http and over
// ssh: the fetch fails with ErrAnswerTooLarge and says so, the client hangs up, and the mirror
// keeps what it had.
func TestEndlessAdvertisementIsCut(t *testing.T) {
	ctx := context.Background()
	check := func(t *testing.T, remote pkgrepo.Remote, e *gittest.EndlessAdvertisement) {
		store := pkgrepo.NewStore(t.TempDir())
		if _, err := store.Refresh(ctx, remote); err != nil {
			t.Fatal(err)
		}
		e.On.Store(true)
		_, err := store.Refresh(ctx, remote)
		checkErr(t, err, pkgrepo.ErrAnswerTooLarge)
		if want := "ref advertisement was larger than 32Mi"; !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
		select {
		case <-e.Ended():
		case <-time.After(time.Minute):
			t.Fatal("the server is still sending a minute after the fetch failed")
		}
		// The client hangs up once past the bound; the server has sent a little more by then (what
		// the connection buffers).
		if hungUp, sent := e.HungUp(); !hungUp || sent > 4*pkgrepo.MaxAdvertisementBytes {
			t.Fatalf("the server sent %d bytes before the client hung up (hung up: %v), more than 4 times the bound", sent, hungUp)
		}
		e.On.Store(false)
		rev, err := store.Resolve(ctx, remote, "app", "v1")
		if err != nil || rev.Number != 1 {
			t.Fatalf("Resolve after the cut = %+v, %v; want v1", rev, err)
		}
	}
	t.Run("http", func(t *testing.T) {
		endless, e := gittest.WithEndlessAdvertisement("catalog")
		srv := gittest.NewServer(t, endless)
		srv.CreateRepo(t, "catalog")
		gittest.Commit(t, srv.Dir("catalog"), "", map[string]string{"app/Kptfile": kptfile}, "app/v1")
		check(t, pkgrepo.Remote{URL: srv.URL + "/catalog.git"}, e)
	})
	t.Run("ssh", func(t *testing.T) {
		srv := gittest.NewServer(t)
		srv.CreateRepo(t, "catalog")
		gittest.Commit(t, srv.Dir("catalog"), "", map[string]string{"app/Kptfile": kptfile}, "app/v1")
		ss := srv.ServeSSH(t)
		e := ss.EndlessAdvertisement("catalog")
		check(t, pkgrepo.Remote{URL: ss.URL("catalog"), Auth: pkgrepo.Auth{Identity: string(ss.ClientKey), KnownHosts: ss.KnownHosts}}, e)
	})
}

// largeRepo is a repository whose one commit holds an incompressible file of size bytes.
func largeRepo(t *testing.T, srv *gittest.Server, name string, size int) {
	t.Helper()
	srv.CreateRepo(t, name)
	noise := make([]byte, size*3/4)
	_, _ = rand.Read(noise)
	gittest.Commit(t, srv.Dir(name), "", map[string]string{"app/Kptfile": kptfile, "app/noise.txt": base64.StdEncoding.EncodeToString(noise)}, "app/v1")
}

// A pack larger than Store.MaxPackBytes is cut, over http and over ssh; a Store with the default
// bound fetches the same repository.
func TestLargePackIsCut(t *testing.T) {
	srv := gittest.NewServer(t)
	largeRepo(t, srv, "big", 4<<20)
	ss := srv.ServeSSH(t)
	ctx := context.Background()
	for name, remote := range map[string]pkgrepo.Remote{
		"http": {URL: srv.URL + "/big.git"},
		"ssh":  {URL: ss.URL("big"), Auth: pkgrepo.Auth{Identity: string(ss.ClientKey), KnownHosts: ss.KnownHosts}},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			store := pkgrepo.NewStore(dir)
			store.MaxPackBytes = 1 << 20
			pkgrepo.SetMaxAdvertisement(store, 64<<10)
			_, err := store.Resolve(ctx, remote, "app", "v1")
			checkErr(t, err, pkgrepo.ErrAnswerTooLarge)
			if want := "answer (a pack) was larger than 1Mi, the controller's --git-max-pack-size"; !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
			// go-git keeps the pack it was writing when it ends early: the mirror does not.
			left, err := filepath.Glob(filepath.Join(dir, "*", "objects", "pack", "tmp_pack_*"))
			if err != nil || len(left) > 0 {
				t.Errorf("temporary packs left in the mirror: %v %v", left, err)
			}
			if rev, err := pkgrepo.NewStore(t.TempDir()).Resolve(ctx, remote, "app", "v1"); err != nil || rev.Number != 1 {
				t.Fatalf("Resolve with the default bound = %+v, %v; want v1", rev, err)
			}
		})
	}
}

// orphan replaces branch main of the bare repository dir with a new commit without parents,
// holding app/Kptfile and noise, and tags it app/v1: history rewritten, as a server may.
func orphan(t *testing.T, dir string, noise []byte) string {
	t.Helper()
	run := func(stdin []byte, args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=test", "-c", "user.email=test@example.com"}, args...)...)
		cmd.Stdin = bytes.NewReader(stdin)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	kpt := run([]byte(kptfile), "hash-object", "-w", "--stdin")
	nz := run(noise, "hash-object", "-w", "--stdin")
	app := run([]byte("100644 blob "+kpt+"\tKptfile\n100644 blob "+nz+"\tnoise.txt\n"), "mktree")
	root := run([]byte("040000 tree "+app+"\tapp\n"), "mktree")
	c := run(nil, "commit-tree", root, "-m", "orphan")
	run(nil, "update-ref", "refs/heads/main", c)
	run(nil, "tag", "-f", "app/v1", c)
	return c
}

// packBytes is the size of the packs of the mirrors under dir.
func packBytes(t *testing.T, dir string) int64 {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*", "objects", "pack", "*.pack"))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// A server that sends new objects on every poll, each fetch within the pack bound, grows the
// mirror only to twice the bound: the next fetch starts it over, with what the remote holds now.
func TestMirrorStartsOverPastItsBound(t *testing.T) {
	srv := gittest.NewServer(t)
	srv.CreateRepo(t, "catalog")
	dir := t.TempDir()
	store := pkgrepo.NewStore(dir)
	store.MaxPackBytes = 1 << 20 // the mirror: 2 MiB
	remote := pkgrepo.Remote{URL: srv.URL + "/catalog.git"}
	ctx := context.Background()
	noise := func() []byte {
		b := make([]byte, 600<<10)
		_, _ = rand.Read(b)
		return b
	}
	for range 4 {
		orphan(t, srv.Dir("catalog"), noise())
		if _, err := store.Refresh(ctx, remote); err != nil {
			t.Fatal(err)
		}
	}
	if n := packBytes(t, dir); n <= 2<<20 {
		t.Fatalf("the mirror's packs are %d bytes after four rewrites, want more than 2 MiB", n)
	}
	last := orphan(t, srv.Dir("catalog"), noise())
	if _, err := store.Refresh(ctx, remote); err != nil {
		t.Fatal(err)
	}
	if n := packBytes(t, dir); n > 1<<20 {
		t.Errorf("the mirror's packs are %d bytes after it started over, want the remote's one commit", n)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.new")); len(left) > 0 {
		t.Errorf("left beside the mirror: %v", left)
	}
	rev, err := store.Resolve(ctx, remote, "app", "v1")
	if err != nil || rev.Commit != last {
		t.Fatalf("Resolve after the start over = %+v, %v; want commit %s", rev, err, last)
	}
	if files, err := store.ReadPackage(ctx, remote, "app", last); err != nil || len(files["noise.txt"]) != 600<<10 {
		t.Fatalf("ReadPackage after the start over: %d bytes of noise.txt, %v", len(files["noise.txt"]), err)
	}
}

// The page of an answer that is not a success reaches the error (go-git puts it there) only up to
// a line or two: not a megabyte of whatever the URL names.
func TestErrorPageIsCut(t *testing.T) {
	page := "Repository not found." + strings.Repeat(" secret", 150_000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, page, http.StatusNotFound)
	}))
	t.Cleanup(srv.Close)
	_, err := pkgrepo.NewStore(t.TempDir()).Refresh(context.Background(), pkgrepo.Remote{URL: srv.URL + "/catalog.git"})
	checkErr(t, err, pkgrepo.ErrUnreachable)
	if !strings.Contains(err.Error(), "Repository not found.") || len(err.Error()) > 2<<10 {
		t.Errorf("error of %d bytes, want the page's start and at most 2 KiB: %.300q", len(err.Error()), err)
	}
}
