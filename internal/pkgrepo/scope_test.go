package pkgrepo_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// file:// URLs and paths read the machine's own disk: refused unless the Store allows them.
func TestLocalRepositoriesRefused(t *testing.T) {
	c := newCatalog(t)
	ctx := context.Background()
	cache := t.TempDir()
	store := pkgrepo.NewStore(cache)
	for name, url := range map[string]string{"file://": "file://" + c.dir, "absolute path": c.dir, "relative path": "catalog.git"} {
		t.Run(name, func(t *testing.T) {
			r := pkgrepo.Remote{URL: url}
			_, err := store.Resolve(ctx, r, "free5gc-upf", "v1")
			checkErr(t, err, pkgrepo.ErrLocalRepository)
			if want := "--allow-local-repositories"; !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %s", err, want)
			}
			_, err = store.Refresh(ctx, r)
			checkErr(t, err, pkgrepo.ErrLocalRepository)
			_, err = store.Publish(ctx, r, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a")})
			checkErr(t, err, pkgrepo.ErrLocalRepository)
			_, err = store.ReadPackage(ctx, r, "free5gc-upf", c.v1)
			checkErr(t, err, pkgrepo.ErrLocalRepository)
		})
	}
	if entries, _ := os.ReadDir(cache); len(entries) != 0 {
		t.Errorf("a refused remote got a mirror: %v", entries)
	}
	if tags := gittest.Tags(t, c.dir); tags[dp+"/v1"] != "" {
		t.Error("a refused publish reached the repository")
	}

	store.AllowLocal = true
	if _, err := store.Resolve(ctx, pkgrepo.Remote{URL: "file://" + c.dir}, "free5gc-upf", "v1"); err != nil {
		t.Fatalf("Resolve over file:// with AllowLocal: %v", err)
	}
}

// Remotes of different scopes never share a mirror: a scope without the credentials never reads
// what another scope's credentials fetched, not from disk, not from the caches that answer
// while the remote is unreachable.
func TestScopesDoNotShareMirrors(t *testing.T) {
	srv := gittest.NewServer(t, gittest.WithBasicAuth("flotilla", password))
	srv.CreateRepo(t, "private")
	// The remote as clients reach it, through a proxy that can go down for everyone.
	var down atomic.Bool
	backend, err := neturl.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(backend)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	url := front.URL + "/private.git"
	v1 := gittest.Commit(t, srv.Dir("private"), "", map[string]string{"upf/Kptfile": kptfile, "upf/secret.yaml": "tenant-a: only\n"}, "upf/v1")
	cache := t.TempDir()
	store := pkgrepo.NewStore(cache)
	store.RefreshInterval = 1 // every read fetches, as in the controller tests
	ctx := context.Background()
	owner := pkgrepo.Remote{URL: url, Scope: "tenant-a/git", Auth: pkgrepo.Auth{Username: "flotilla", Password: password}}
	if rev, err := store.Resolve(ctx, owner, "upf", "v1"); err != nil || rev.Commit != v1 {
		t.Fatalf("owner's Resolve = %+v, %v", rev, err)
	}
	if _, err := store.ReadPackage(ctx, owner, "upf", v1); err != nil {
		t.Fatal(err)
	}

	others := map[string]pkgrepo.Remote{
		"other namespace, no credentials": {URL: url, Scope: "tenant-b/"},
		"same scope, no credentials":      {URL: url, Scope: "tenant-a/git"},
		"other namespace, wrong password": {URL: url, Scope: "tenant-b/git", Auth: pkgrepo.Auth{Username: "flotilla", Password: "guess"}},
	}
	read := func(t *testing.T, r pkgrepo.Remote, want error) {
		t.Helper()
		_, err := store.Resolve(ctx, r, "upf", "v1")
		checkErr(t, err, want)
		_, _, err = store.Latest(ctx, r, "upf")
		checkErr(t, err, want)
		_, err = store.ReadPackage(ctx, r, "upf", v1)
		checkErr(t, err, want)
	}
	for name, r := range others {
		t.Run(name, func(t *testing.T) { read(t, r, pkgrepo.ErrAuthentication) })
	}
	if entries, err := os.ReadDir(cache); err != nil || len(entries) != 3 {
		t.Errorf("mirrors = %v, %v; want one per scope (tenant-a/git, tenant-b/, tenant-b/git)", entries, err)
	}

	down.Store(true)
	for name, r := range others {
		t.Run(name+", remote down", func(t *testing.T) { read(t, r, pkgrepo.ErrUnreachable) })
	}
	// The owner keeps its exact revision through the outage.
	if rev, err := store.Resolve(ctx, owner, "upf", "v1"); err != nil || rev.Commit != v1 {
		t.Errorf("owner's Resolve during the outage = %+v, %v", rev, err)
	}

	// After a restart (a new Store on the same directory) the owner's mirror on disk still
	// answers no one who has not fetched with the credentials.
	restarted := pkgrepo.NewStore(cache)
	for name, r := range others {
		t.Run(name+", after a restart", func(t *testing.T) {
			_, err := restarted.ReadPackage(ctx, r, "upf", v1)
			checkErr(t, err, pkgrepo.ErrUnreachable)
			_, err = restarted.Resolve(ctx, r, "upf", "v1")
			checkErr(t, err, pkgrepo.ErrUnreachable)
		})
	}
}
