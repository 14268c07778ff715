package repository

import (
	"fmt"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/conditions"
	"github.com/flotilla-dev/flotilla/internal/gitremote"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

func setFetched(repo *v1alpha1.Repository, snap pkgrepo.Snapshot) {
	msg := "fetched: branch " + gitremote.Branch(repo) + " does not exist yet"
	if snap.Head != "" {
		msg = fmt.Sprintf("fetched: %s at %s", gitremote.Branch(repo), short(snap.Head))
	}
	conditions.Ready(&repo.Status.Conditions, repo.Generation, "Fetched", msg)
}

func setFetchFailed(repo *v1alpha1.Repository, err error) {
	reason, stalled := gitremote.Reason(err)
	if stalled {
		conditions.Stalled(&repo.Status.Conditions, repo.Generation, reason, err.Error())
		return
	}
	conditions.Progressing(&repo.Status.Conditions, repo.Generation, reason, err.Error()+"; retrying")
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
