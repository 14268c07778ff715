package pkgrepo_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

const password = "hunter2-Pa55"

func TestBasicAuth(t *testing.T) {
	srv := gittest.NewServer(t, gittest.WithBasicAuth("flotilla", password))
	url := srv.CreateRepo(t, "edge01")
	cache := t.TempDir()
	store := pkgrepo.NewStore(cache)
	ctx := context.Background()
	good := pkgrepo.Remote{URL: url, Auth: pkgrepo.Auth{Username: "flotilla", Password: password}}

	res := publish(t, store, good, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a")})
	if _, err := store.Resolve(ctx, good, dp, "v1"); err != nil {
		t.Fatalf("Resolve with the right password: %v", err)
	}
	inURL := pkgrepo.Remote{URL: strings.Replace(url, "://", "://flotilla:"+password+"@", 1)}
	if _, err := store.Resolve(ctx, inURL, dp, "v1"); err != nil {
		t.Fatalf("Resolve with credentials in the URL: %v", err)
	}

	for name, r := range map[string]pkgrepo.Remote{
		"wrong password":        {URL: url, Auth: pkgrepo.Auth{Username: "flotilla", Password: "wrong-" + password}},
		"wrong password in URL": {URL: strings.Replace(url, "://", "://flotilla:wrong-"+password+"@", 1)},
		"bearer token":          {URL: url, Auth: pkgrepo.Auth{BearerToken: "token-" + password}},
		"no credentials":        {URL: url},
	} {
		t.Run(name, func(t *testing.T) {
			// The mirror is fresh from the good fetch above, yet other
			// credentials must be checked by the server before any read.
			_, err := store.Resolve(ctx, r, dp, "v1")
			checkErr(t, err, pkgrepo.ErrAuthentication)
			assertNoSecret(t, err.Error())
			t.Log(err)
			_, err = store.Publish(ctx, r, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("b")})
			checkErr(t, err, pkgrepo.ErrAuthentication)
			assertNoSecret(t, err.Error())
			for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
				assertNoSecret(t, fmt.Sprintf(verb, r))
				assertNoSecret(t, fmt.Sprintf(verb, r.Auth))
			}
		})
	}
	if got := gittest.Tags(t, srv.Dir("edge01")); len(got) != 1 || got[dp+"/v1"] != res.Commit {
		t.Errorf("tags = %v", got)
	}

	// Nothing on disk holds a credential.
	err := filepath.WalkDir(cache, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if bytes.Contains(data, []byte(password)) {
			t.Errorf("%s contains the password", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestUnreachable(t *testing.T) {
	srv := gittest.NewServer(t, gittest.WithMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/broken.git/") {
				http.Error(w, "boom", http.StatusBadGateway)
				return
			}
			next.ServeHTTP(w, r)
		})
	}))
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	store := pkgrepo.NewStore(t.TempDir())
	store.AllowLocal = true

	for name, url := range map[string]string{
		"connection refused": closed.URL + "/x.git",
		"no such repository": srv.URL + "/missing.git",
		"server error":       srv.URL + "/broken.git",
		"no such directory":  "file://" + t.TempDir() + "/missing.git",
	} {
		t.Run(name, func(t *testing.T) {
			r := pkgrepo.Remote{URL: url, Auth: pkgrepo.Auth{Username: "u", Password: password}}
			_, err := store.Refresh(context.Background(), r)
			checkErr(t, err, pkgrepo.ErrUnreachable)
			assertNoSecret(t, err.Error())
			t.Log(err)
		})
	}

	// An ssh remote without a key is refused before anything is dialled.
	_, err := store.Refresh(context.Background(), pkgrepo.Remote{URL: "ssh://git@example.com/x.git"})
	checkErr(t, err, pkgrepo.ErrCredentials)
}

func assertNoSecret(t *testing.T, s string) {
	t.Helper()
	if strings.Contains(s, password) {
		t.Errorf("leaks the password: %s", s)
	}
}
