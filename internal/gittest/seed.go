package gittest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitEnv isolates the git CLI from the machine's configuration and fixes
// identities and dates, so seeded commits have the same sha on every run.
var gitEnv = []string{
	"GIT_CONFIG_NOSYSTEM=1",
	"GIT_CONFIG_GLOBAL=/dev/null",
	"GIT_TERMINAL_PROMPT=0",
	"GIT_AUTHOR_NAME=gittest",
	"GIT_AUTHOR_EMAIL=gittest@example.com",
	"GIT_AUTHOR_DATE=2024-01-01T00:00:00Z",
	"GIT_COMMITTER_NAME=gittest",
	"GIT_COMMITTER_EMAIL=gittest@example.com",
	"GIT_COMMITTER_DATE=2024-01-01T00:00:00Z",
}

// git runs the git CLI in dir (the current directory when dir is empty) and
// returns its trimmed standard output; any failure fails the test.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), gitEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

// Commit writes files (path -> content, relative to the repository root) as
// one commit on branch main of the bare repository at bareDir, after removing
// pkgDir (unless empty) so files dropped from a package disappear. It tags the
// commit with each of tags (lightweight), pushes branch and tags together and
// returns the commit sha. The branch is created when it does not exist yet.
func Commit(t testing.TB, bareDir string, pkgDir string, files map[string]string, tags ...string) string {
	t.Helper()
	work := t.TempDir()
	git(t, work, "init", "-q", "-b", "main")
	if hasBranch(t, bareDir, "main") {
		git(t, work, "fetch", "-q", bareDir, "refs/heads/main")
		git(t, work, "reset", "-q", "--hard", "FETCH_HEAD")
	}
	if pkgDir != "" {
		if err := os.RemoveAll(filepath.Join(work, filepath.FromSlash(pkgDir))); err != nil {
			t.Fatal(err)
		}
	}
	for p, content := range files {
		full := filepath.Join(work, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, work, "add", "-A")
	git(t, work, "commit", "-q", "--allow-empty", "-m", "gittest: update "+pkgDir)
	sha := git(t, work, "rev-parse", "HEAD")
	refs := []string{"HEAD:refs/heads/main"}
	for _, tag := range tags {
		git(t, work, "tag", tag)
		refs = append(refs, "refs/tags/"+tag)
	}
	git(t, work, append([]string{"push", "-q", bareDir}, refs...)...)
	return sha
}

// AnnotatedTag creates the annotated tag name on rev in the bare repository,
// for tests that check annotated tags are peeled like lightweight ones.
func AnnotatedTag(t testing.TB, bareDir, name, rev string) {
	t.Helper()
	git(t, bareDir, "tag", "-a", "-m", "gittest: "+name, name, rev)
}

// MoveTag force-moves tag name to rev in the bare repository, as someone rewriting history would.
func MoveTag(t testing.TB, bareDir, name, rev string) {
	t.Helper()
	git(t, bareDir, "tag", "-f", name, rev)
}

// DeleteTag deletes tag name from the bare repository.
func DeleteTag(t testing.TB, bareDir, name string) {
	t.Helper()
	git(t, bareDir, "tag", "-d", name)
}

// CreateBranch creates (or moves) branch to rev, as another tool would.
func CreateBranch(t testing.TB, bareDir, branch, rev string) {
	t.Helper()
	git(t, bareDir, "branch", "-f", branch, rev)
}

// Tags returns every tag of the bare repository with the commit it points to
// (annotated tags peeled).
func Tags(t testing.TB, bareDir string) map[string]string {
	t.Helper()
	refs := map[string]string{}
	out := git(t, bareDir, "for-each-ref", "--format=%(refname:strip=2) %(objectname) %(*objectname)", "refs/tags")
	for _, line := range lines(out) {
		f := strings.Fields(line)
		sha := f[1]
		if len(f) == 3 {
			sha = f[2]
		}
		refs[f[0]] = sha
	}
	return refs
}

// Branches returns every branch of the bare repository with its head sha.
func Branches(t testing.TB, bareDir string) map[string]string {
	t.Helper()
	refs := map[string]string{}
	out := git(t, bareDir, "for-each-ref", "--format=%(refname:strip=2) %(objectname)", "refs/heads")
	for _, line := range lines(out) {
		f := strings.Fields(line)
		refs[f[0]] = f[1]
	}
	return refs
}

// ReadFile returns the content of path at rev (`git show rev:path`).
func ReadFile(t testing.TB, bareDir, rev, path string) string {
	t.Helper()
	return git(t, bareDir, "show", rev+":"+path)
}

// ReadCommit returns the raw commit object (`git cat-file commit rev`):
// headers, a blank line and the message.
func ReadCommit(t testing.TB, bareDir, rev string) string {
	t.Helper()
	return git(t, bareDir, "cat-file", "commit", rev)
}

// IsAncestor reports whether commit a is an ancestor of (or equal to) b.
func IsAncestor(t testing.TB, bareDir, a, b string) bool {
	t.Helper()
	cmd := exec.Command("git", "merge-base", "--is-ancestor", a, b)
	cmd.Dir = bareDir
	cmd.Env = append(os.Environ(), gitEnv...)
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 {
		return false
	}
	if err != nil {
		t.Fatalf("git merge-base --is-ancestor %s %s: %v", a, b, err)
	}
	return true
}

// Log returns the commit shas reachable from rev, newest first.
func Log(t testing.TB, bareDir, rev string) []string {
	t.Helper()
	return lines(git(t, bareDir, "rev-list", rev))
}

func hasBranch(t testing.TB, bareDir, branch string) bool {
	t.Helper()
	_, ok := Branches(t, bareDir)[branch]
	return ok
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
