package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/flotilla-dev/flotilla/internal/offline"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// localResult is `flotilla render` (local mode, no API server) on the same fleet.
type localResult struct {
	Cold, Bump time.Duration
	Git        repoStats
	Failed     int
	// Identical counts the clusters whose latest deployed-packages tree equals the one the
	// controller published.
	Identical int
}

// runLocal publishes the fleet with offline.Run into fresh cluster repositories under dir (reached
// through url, the run's transport), first with every set at v1 (cold), then with the first set
// at v2 (bump), as `flotilla render` would; each step is timed from reading the YAML files to the
// last push. When the controller's run ended elsewhere (final, each set's revision then; nil: at
// the bump), a third, untimed step publishes that, so the trees compare like with like.
func runLocal(ctx context.Context, f fleet, dir, catalogURL, controllerRepos string, url func(dir string) string, final func(set int) string) (localResult, error) {
	var res localResult
	repos := filepath.Join(dir, "git")
	names := f.clusterNames()
	if err := initRepos(repos, names); err != nil {
		return res, err
	}
	store := pkgrepo.NewStore(filepath.Join(dir, "cache"))
	store.AllowLocal = true // the bench's repositories are local directories
	type step struct {
		took *time.Duration
		rev  func(set int) string
	}
	steps := []step{{&res.Cold, func(int) string { return "v1" }}, {&res.Bump, bumped}}
	if final != nil {
		steps = append(steps, step{new(time.Duration), final})
	}
	for i, step := range steps {
		objDir := filepath.Join(dir, fmt.Sprintf("objects-%d", i+1))
		if err := writeYAML(filepath.Join(objDir, "fleet.yaml"), f.objects(catalogURL, func(c string) string { return url(repoDir(repos, c)) }, step.rev)); err != nil {
			return res, err
		}
		start := time.Now()
		fl, err := offline.Load(objDir)
		if err != nil {
			return res, err
		}
		res.Failed += offline.Failed(offline.Run(ctx, store, fl))
		*step.took = time.Since(start)
	}
	var err error
	if res.Git, err = statRepos(repos, names); err != nil {
		return res, err
	}
	var identical atomic.Int64
	err = parallel(len(names), func(i int) error {
		local, err := latestTree(repoDir(repos, names[i]))
		if err != nil {
			return err
		}
		remote, err := latestTree(repoDir(controllerRepos, names[i]))
		if err == nil && local == remote && !local.IsZero() {
			identical.Add(1)
		}
		return err
	})
	res.Identical = int(identical.Load())
	return res, err
}

// bumped is the revision of each set after the bump: the first set moves to v2.
func bumped(set int) string {
	if set == 0 {
		return "v2"
	}
	return "v1"
}
