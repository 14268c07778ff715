package pkgrepo_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// A mirror's loose objects (a publish writes about four) are packed once they pass the limit, so a
// cluster's mirror no longer grows by a file per object for as long as the controller runs.
// Packing drops nothing: the mirror's objects never get fewer, git fsck finds the mirror whole,
// and every revision reads as it was published.
func TestLooseObjectsArePacked(t *testing.T) {
	// Checked at the 30th and 60th publish; packs of 2 KiB of objects, so several each time.
	pkgrepo.SetLooseLimits(t, 100, 30, 2<<10)
	remote, _ := newRepo(t)
	cache := t.TempDir()
	store := pkgrepo.NewStore(cache)
	ctx := context.Background()
	var mirror string
	objects, packed := 0, false
	const publishes = 60
	for i := range publishes {
		publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a", fmt.Sprintf("b%d", i))})
		if mirror == "" {
			dirs, _ := filepath.Glob(filepath.Join(cache, "*", "objects"))
			if len(dirs) != 1 {
				t.Fatalf("mirrors in the cache: %v, want one", dirs)
			}
			mirror = filepath.Dir(dirs[0])
		}
		count := countObjects(t, mirror)
		if total := count["count"] + count["in-pack"]; total < objects {
			t.Fatalf("publish %d: the mirror holds %d objects, fewer than the %d before", i+1, total, objects)
		} else {
			objects = total
		}
		// At most the limit and what the builds until the next check write.
		if count["count"] >= 100+30*4 {
			t.Fatalf("publish %d: %d loose objects, want fewer than 220", i+1, count["count"])
		}
		packed = packed || count["in-pack"] > 0
	}
	if !packed {
		t.Fatal("no object was ever packed")
	}
	if packs, _ := filepath.Glob(filepath.Join(mirror, "objects", "pack", "*.pack")); len(packs) < 6 {
		t.Errorf("%d packs after two packings, want the loose objects in packs of at most 2 KiB of objects", len(packs))
	}
	if out, err := exec.Command("git", "--git-dir", mirror, "fsck", "--full", "--strict").CombinedOutput(); err != nil {
		t.Fatalf("git fsck of the mirror: %v\n%s", err, out)
	}
	for _, n := range []int{1, publishes / 2, publishes} {
		rev, err := store.Resolve(ctx, remote, dp, "v"+strconv.Itoa(n))
		if err != nil {
			t.Fatalf("Resolve v%d: %v", n, err)
		}
		files, err := store.ReadPackage(ctx, remote, dp, rev.Commit)
		if want := fmt.Sprintf("name: b%d\n", n-1); err != nil || string(files[fmt.Sprintf("b%d.yaml", n-1)]) != want {
			t.Fatalf("ReadPackage v%d = %v, %v; want b%d.yaml %q", n, files, err, n-1, want)
		}
	}
}

// countObjects is git count-objects -v of the repository at dir, by field.
func countObjects(t *testing.T, dir string) map[string]int {
	t.Helper()
	out, err := exec.Command("git", "--git-dir", dir, "count-objects", "-v").Output()
	if err != nil {
		t.Fatalf("git count-objects: %v", err)
	}
	fields := map[string]int{}
	for line := range strings.Lines(string(out)) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ": ")
		fields[k], _ = strconv.Atoi(v)
	}
	return fields
}

// A mirror that every fetch brings something to (a catalog others publish to) gets a pack a
// fetch: past its bound of packs, its next fetch starts it over, with the remote's history in one
// pack, and every revision still resolves and reads.
func TestMirrorStartsOverPastMaxPacks(t *testing.T) {
	const maxPacks = 20
	pkgrepo.SetMaxPacks(t, maxPacks)
	remote, _ := newRepo(t)
	writer := pkgrepo.NewStore(t.TempDir())
	cache := t.TempDir()
	reader := pkgrepo.NewStore(cache)
	ctx := context.Background()
	most, startedOver := 0, false
	rounds := maxPacks + 5
	for i := range rounds {
		publish(t, writer, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a", fmt.Sprintf("b%d", i))})
		if _, err := reader.Refresh(ctx, remote); err != nil {
			t.Fatalf("Refresh %d: %v", i+1, err)
		}
		packs, _ := filepath.Glob(filepath.Join(cache, "*", "objects", "pack", "*.pack"))
		if len(packs) < most {
			startedOver = true
		}
		most = max(most, len(packs))
	}
	if most > maxPacks+1 || !startedOver {
		t.Fatalf("at most %d packs in the mirror over %d fetches, started over: %v; want at most %d, and a start over", most, rounds, startedOver, maxPacks+1)
	}
	if left, _ := filepath.Glob(filepath.Join(cache, "*.new")); len(left) > 0 {
		t.Errorf("left beside the mirror: %v", left)
	}
	for _, n := range []int{1, rounds} {
		rev, err := reader.Resolve(ctx, remote, dp, "v"+strconv.Itoa(n))
		if err != nil {
			t.Fatalf("Resolve v%d: %v", n, err)
		}
		if files, err := reader.ReadPackage(ctx, remote, dp, rev.Commit); err != nil || len(files) != 3 {
			t.Fatalf("ReadPackage v%d = %d files, %v", n, len(files), err)
		}
	}
}
