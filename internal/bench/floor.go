package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/flotilla-dev/flotilla/internal/githttp"
)

// floorResult is the git floor: what the git CLI takes to do, per cluster, the git work of one
// publish (fetch the branch, push one commit), as many clusters at once as the controller has
// workers, over the same transport.
type floorResult struct {
	Clusters, Workers int
	Time              time.Duration
	// Requests are those the git server counted (zero over file://).
	Requests githttp.Requests
}

// floorEnv keeps the machine's git configuration out of the floor and gives its commits an
// author.
var floorEnv = []string{
	"GIT_CONFIG_NOSYSTEM=1",
	"GIT_CONFIG_GLOBAL=/dev/null",
	"GIT_TERMINAL_PROMPT=0",
	"GIT_AUTHOR_NAME=flotilla-bench",
	"GIT_AUTHOR_EMAIL=bench@flotilla.dev",
	"GIT_COMMITTER_NAME=flotilla-bench",
	"GIT_COMMITTER_EMAIL=bench@flotilla.dev",
}

// gitFloor clones branch main of each repository of names under repos (the fast-import copies,
// so flotilla's own repositories stay as it left them) into an empty directory, commits one
// changed file and pushes it back, `workers` clusters at a time, with the git CLI. Only this is
// timed; the clones are removed afterwards.
func (b *run) gitFloor(ctx context.Context, repos string, names []string, workers int) (floorResult, error) {
	res := floorResult{Clusters: len(names), Workers: workers}
	work := filepath.Join(b.dir, "floor")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return res, err
	}
	defer os.RemoveAll(work)
	before := b.requests(repos)
	start := time.Now()
	err := parallelN(len(names), workers, func(i int) error {
		dir := filepath.Join(work, names[i])
		url := b.url(repoDir(repos, names[i]))
		if err := floorGit(ctx, "", "clone", "-q", "--single-branch", "--branch", "main", "--no-tags", url, dir); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "floor.txt"), []byte(names[i]+"\n"), 0o644); err != nil {
			return err
		}
		for _, args := range [][]string{
			{"add", "-A"},
			{"commit", "-q", "-m", "bench: git floor"},
			{"push", "-q", "origin", "HEAD:refs/heads/main"},
		} {
			if err := floorGit(ctx, dir, args...); err != nil {
				return err
			}
		}
		return nil
	})
	res.Time = time.Since(start)
	res.Requests = b.requests(repos).Sub(before)
	return res, err
}

func floorGit(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), floorEnv...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git floor: git %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}
