package repository

import (
	"fmt"
	"strings"

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

// setResolvedOCI reports an OCI repository polled: the latest revision of each package in use.
func setResolvedOCI(repo *v1alpha1.Repository, latest []string) {
	msg := "no deployment reads a package from it yet"
	if len(latest) > 0 {
		msg = "resolved the latest revisions of the packages in use: " + strings.Join(first(latest, 10), ", ")
	}
	conditions.Ready(&repo.Status.Conditions, repo.Generation, "Resolved", msg)
}

func first(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("and %d more", len(s)-n))
	}
	return s
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
