package pkgrepo_test

import (
	"context"
	"testing"

	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// TestRefreshOfAnUnchangedRemoteOnlyLists: once a mirror is fetched, a refresh of a remote that
// advertises the refs the mirror holds is one request (the ref advertisement) and changes
// nothing; each change another writer makes (a new commit, a new branch, a moved, a new
// annotated and a deleted tag) makes the next refresh fetch, and the mirror then resolves as the
// remote does.
func TestRefreshOfAnUnchangedRemoteOnlyLists(t *testing.T) {
	record, taken := recordRequests()
	srv := gittest.NewServer(t, record)
	remote := pkgrepo.Remote{URL: srv.CreateRepo(t, "catalog")}
	dir := srv.Dir("catalog")
	v1 := gittest.Commit(t, dir, "app", map[string]string{"app/Kptfile": kptfile}, "app/v1")
	store := pkgrepo.NewStore(t.TempDir())
	store.RefreshInterval = 1 // every read fetches
	ctx := context.Background()

	refresh := func(when string) (pkgrepo.Snapshot, []string) {
		t.Helper()
		taken()
		snap, err := store.Refresh(ctx, remote)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		return snap, taken()
	}
	resolves := func(when, revision, want string) {
		t.Helper()
		rev, err := store.Resolve(ctx, remote, "app", revision)
		if err != nil || rev.Commit != want {
			t.Errorf("%s: Resolve %s = %+v, %v; want commit %s", when, revision, rev, err, want)
		}
	}
	onlyListed := func(when string, made []string) {
		t.Helper()
		if len(made) != 1 || made[0] != "GET refs?git-upload-pack" {
			t.Errorf("%s: requests %q; want the ref advertisement alone", when, made)
		}
	}
	// A fetch after the list is a second request at least: its own advertisement, then an
	// upload-pack when objects are missing (a new branch or a moved tag on a commit the mirror has
	// needs none).
	fetched := func(when string, made []string) {
		t.Helper()
		if len(made) < 2 || made[1] != "GET refs?git-upload-pack" {
			t.Errorf("%s: requests %q; want the list, then a fetch", when, made)
		}
	}

	first, made := refresh("the first refresh")
	if len(made) != 2 || made[1] != "POST git-upload-pack" {
		t.Errorf("the first refresh: requests %q; want a fetch alone (no list first)", made)
	}
	again, made := refresh("a refresh of the unchanged remote")
	onlyListed("a refresh of the unchanged remote", made)
	if again != first {
		t.Errorf("snapshot of the unchanged remote %+v; want %+v", again, first)
	}
	resolves("unchanged", "v1", v1)

	v2 := gittest.Commit(t, dir, "app", map[string]string{"app/Kptfile": kptfile, "app/cm.yaml": "a: 1\n"}, "app/v2")
	snap, made := refresh("after a new commit and tag")
	fetched("after a new commit and tag", made)
	if snap.Head != v2 {
		t.Errorf("head after a new commit %s; want %s", snap.Head, v2)
	}
	resolves("after a new tag", "v2", v2)

	steps := []struct {
		name   string
		change func()
		check  func(string)
	}{
		{"a new branch", func() { gittest.CreateBranch(t, dir, "feature", v1) }, func(string) {}},
		{"a moved tag", func() { gittest.MoveTag(t, dir, "app/v2", v1) }, func(when string) { resolves(when, "v2", v1) }},
		{"a deleted tag", func() { gittest.DeleteTag(t, dir, "app/v2") }, func(when string) { resolves(when, "latest", v1) }},
		{"a new annotated tag", func() { gittest.AnnotatedTag(t, dir, "app/v3", v2) }, func(when string) { resolves(when, "v3", v2) }},
	}
	prev := snap
	for _, step := range steps {
		step.change()
		snap, made := refresh("after " + step.name)
		fetched("after "+step.name, made)
		if snap.RefsDigest == prev.RefsDigest {
			t.Errorf("after %s: refs digest unchanged", step.name)
		}
		step.check("after " + step.name)
		same, made := refresh("right after " + step.name)
		onlyListed("right after "+step.name, made)
		if same != snap {
			t.Errorf("right after %s: snapshot %+v; want %+v", step.name, same, snap)
		}
		prev = snap
	}
}
