package pkgrepo_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

func TestProposalFlow(t *testing.T) {
	remote, dir := newRepo(t)
	store := pkgrepo.NewStore(t.TempDir())
	ctx := context.Background()
	v1 := publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a")})
	tags := gittest.Tags(t, dir)

	// Identical content proposes nothing.
	same := publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a"), Proposal: true})
	if diff := cmp.Diff(pkgrepo.PublishResult{Revision: 1, Tag: dp + "/v1", Commit: v1.Commit}, same); diff != "" {
		t.Errorf("unchanged proposal (-want +got):\n%s", diff)
	}

	// A change is pushed to proposed/P/v2, without a tag and leaving main alone.
	prop := publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a", "b"), Proposal: true})
	branch := "proposed/" + dp + "/v2"
	want := pkgrepo.PublishResult{Changed: true, Revision: 2, Commit: prop.Commit, Branch: branch}
	if diff := cmp.Diff(want, prop); diff != "" {
		t.Errorf("proposal (-want +got):\n%s", diff)
	}
	wantBranches := map[string]string{"main": v1.Commit, branch: prop.Commit}
	if diff := cmp.Diff(wantBranches, gittest.Branches(t, dir)); diff != "" {
		t.Errorf("branches (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(tags, gittest.Tags(t, dir)); diff != "" {
		t.Errorf("a proposal changed tags (-want +got):\n%s", diff)
	}

	// Proposing the same content again is a no-op.
	again := publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a", "b"), Proposal: true})
	want.Changed = false
	if diff := cmp.Diff(want, again); diff != "" {
		t.Errorf("repeated proposal (-want +got):\n%s", diff)
	}

	// Approving another commit than the branch head is refused.
	_, err := store.Approve(ctx, remote, dp, 2, v1.Commit)
	checkErr(t, err, pkgrepo.ErrProposalChanged)

	// An approval names a commit: none, or a short one, approves nothing.
	for _, commit := range []string{"", prop.Commit[:12]} {
		if _, err := store.Approve(ctx, remote, dp, 2, commit); err == nil {
			t.Errorf("Approve(%q) succeeded, want an invalid commit error", commit)
		}
	}

	// Approve fast-forwards main to the proposal, tags v2, drops the branch.
	res, err := store.Approve(ctx, remote, dp, 2, prop.Commit)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(pkgrepo.PublishResult{Changed: true, Revision: 2, Tag: dp + "/v2", Commit: prop.Commit}, res); diff != "" {
		t.Errorf("Approve (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"main": prop.Commit}, gittest.Branches(t, dir)); diff != "" {
		t.Errorf("branches after Approve (-want +got):\n%s", diff)
	}
	tags[dp+"/v2"] = prop.Commit
	if diff := cmp.Diff(tags, gittest.Tags(t, dir)); diff != "" {
		t.Errorf("tags after Approve (-want +got):\n%s", diff)
	}

	_, err = store.Approve(ctx, remote, dp, 2, prop.Commit)
	checkErr(t, err, pkgrepo.ErrProposalNotFound)
	_, err = store.Approve(ctx, remote, dp, 7, prop.Commit)
	checkErr(t, err, pkgrepo.ErrProposalNotFound)
}

// TestApproveRebuildsOnNewHead: the branch moved after the proposal was
// made, so Approve lays the proposal's package over the new head.
func TestApproveRebuildsOnNewHead(t *testing.T) {
	_, dir := newRepo(t)
	remote := pkgrepo.Remote{URL: dir} // a plain path
	store := pkgrepo.NewStore(t.TempDir())
	store.AllowLocal = true
	ctx := context.Background()
	publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a")})
	prop := publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a", "b"), Proposal: true})
	other := gittest.Commit(t, dir, "other", map[string]string{"other/Kptfile": kptfile})

	res, err := store.Approve(ctx, remote, dp, prop.Revision, prop.Commit)
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit == prop.Commit || !gittest.IsAncestor(t, dir, other, res.Commit) {
		t.Errorf("Approve = %+v: want a new commit on %s", res, other)
	}
	got, err := store.ReadPackage(ctx, remote, dp, res.Commit)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(dpFiles("a", "b"), got); diff != "" {
		t.Errorf("approved content (-want +got):\n%s", diff)
	}
	if b := gittest.Branches(t, dir); len(b) != 1 || b["main"] != res.Commit {
		t.Errorf("branches = %v", b)
	}
}

// TestProposalSuperseded: a newer proposal replaces the older one, a direct
// publish removes all of them, and an already published revision cannot be
// approved.
func TestProposalSuperseded(t *testing.T) {
	remote, dir := newRepo(t)
	store := pkgrepo.NewStore(t.TempDir())
	ctx := context.Background()
	publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a")})
	publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a", "b"), Proposal: true})
	newer := publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a", "c"), Proposal: true})
	if b := gittest.Branches(t, dir); len(b) != 2 || b[newer.Branch] != newer.Commit {
		t.Errorf("branches after second proposal = %v", b)
	}

	// A proposal of the published content only cleans up.
	publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a"), Proposal: true})
	if b := gittest.Branches(t, dir); len(b) != 1 {
		t.Errorf("branches after no-op proposal = %v", b)
	}

	publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a", "c"), Proposal: true})
	direct := publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a", "d")})
	if b := gittest.Branches(t, dir); len(b) != 1 || b["main"] != direct.Commit {
		t.Errorf("branches after direct publish = %v", b)
	}

	// A proposal branch for a revision that exists (made by hand here).
	gittest.CreateBranch(t, dir, "proposed/"+dp+"/v2", direct.Commit)
	_, err := store.Approve(ctx, remote, dp, 2, direct.Commit)
	checkErr(t, err, pkgrepo.ErrTagExists)
}
