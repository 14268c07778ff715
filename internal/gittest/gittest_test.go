package gittest_test

import (
	"net/http"
	"os"
	"os/exec"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla-dev/flotilla/internal/gittest"
)

func TestSeedAndServe(t *testing.T) {
	srv := gittest.NewServer(t)
	url := srv.CreateRepo(t, "catalog")
	dir := srv.Dir("catalog")

	first := gittest.Commit(t, dir, "app", map[string]string{"app/Kptfile": "v1", "app/cm.yaml": "a"}, "app/v1")
	second := gittest.Commit(t, dir, "app", map[string]string{"app/Kptfile": "v2"}, "app/v2")
	gittest.AnnotatedTag(t, dir, "release", first)

	want := map[string]string{"app/v1": first, "app/v2": second, "release": first}
	if diff := cmp.Diff(want, gittest.Tags(t, dir)); diff != "" {
		t.Errorf("Tags (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"main": second}, gittest.Branches(t, dir)); diff != "" {
		t.Errorf("Branches (-want +got):\n%s", diff)
	}
	if got := gittest.ReadFile(t, dir, "app/v2", "app/Kptfile"); got != "v2" {
		t.Errorf("ReadFile = %q, want v2", got)
	}
	if !gittest.IsAncestor(t, dir, first, second) || gittest.IsAncestor(t, dir, second, first) {
		t.Errorf("IsAncestor got the history wrong")
	}
	if diff := cmp.Diff([]string{second, first}, gittest.Log(t, dir, "main")); diff != "" {
		t.Errorf("Log (-want +got):\n%s", diff)
	}

	// The removed package file is gone: Commit replaces the package dir.
	cmd := exec.Command("git", "cat-file", "-e", "app/v2:app/cm.yaml")
	cmd.Dir = dir
	if err := cmd.Run(); err == nil {
		t.Errorf("app/cm.yaml survived the second commit")
	}

	// The real git CLI can clone over HTTP.
	clone := t.TempDir()
	out, err := exec.Command("git", "clone", "-q", url, clone).CombinedOutput()
	if err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(clone + "/app/Kptfile"); err != nil || string(b) != "v2" {
		t.Errorf("cloned Kptfile = %q, %v", b, err)
	}
}

func TestBasicAuth(t *testing.T) {
	srv := gittest.NewServer(t, gittest.WithBasicAuth("alice", "s3cret"))
	url := srv.CreateRepo(t, "r") + "/info/refs?service=git-upload-pack"

	for _, tc := range []struct {
		name, user, pass string
		want             int
	}{
		{"no credentials", "", "", http.StatusUnauthorized},
		{"wrong password", "alice", "nope", http.StatusUnauthorized},
		{"right password", "alice", "s3cret", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, url, nil)
			if tc.user != "" {
				req.SetBasicAuth(tc.user, tc.pass)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("status = %d, want %d", resp.StatusCode, tc.want)
			}
			if tc.want == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("401 without WWW-Authenticate")
			}
		})
	}
}
