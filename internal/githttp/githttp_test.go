package githttp_test

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla-dev/flotilla/internal/githttp"
)

// TestServeCountsRequests clones, pushes and fetches with the git CLI and checks what the server
// counted for each repository.
func TestServeCountsRequests(t *testing.T) {
	root := t.TempDir()
	git(t, "", "init", "-q", "--bare", "-b", "main", filepath.Join(root, "clusters", "a.git"))
	git(t, "", "init", "-q", "--bare", "-b", "main", filepath.Join(root, "b.git"))
	srv, err := githttp.Serve(root, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	}()

	work := t.TempDir()
	git(t, work, "init", "-q", "-b", "main")
	git(t, work, "commit", "-q", "--allow-empty", "-m", "one")
	git(t, work, "push", "-q", srv.URL+"/clusters/a.git", "HEAD:refs/heads/main")
	git(t, work, "fetch", "-q", srv.URL+"/clusters/a.git", "main")
	if _, err := exec.Command("git", "ls-remote", srv.URL+"/missing.git").CombinedOutput(); err == nil {
		t.Error("ls-remote of a repository that does not exist succeeded")
	}

	want := map[string]githttp.Requests{
		// A push is the ref advertisement and one receive-pack; a fetch (protocol v2) the
		// advertisement and one upload-pack listing the refs, which ends it when the client has
		// the commit already.
		"clusters/a.git": {InfoRefs: 2, UploadPack: 1, ReceivePack: 1},
		"missing.git":    {InfoRefs: 1},
	}
	got := srv.Requests()
	for repo, r := range got {
		if r.Time <= 0 {
			t.Errorf("%s: no time measured serving %+v", repo, r)
		}
		r.Time = 0
		got[repo] = r
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Requests (-want +got):\n%s", diff)
	}
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}
