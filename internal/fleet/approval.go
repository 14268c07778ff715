package fleet

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// ApprovalState is what a cluster's flotilla.dev/approve annotation says about its pending
// proposal.
type ApprovalState int

const (
	// NotApproved: no annotation, nothing pending, or the annotation names the proposal whose
	// approval published the current revision (approvals stay on the object, e.g. when it is
	// itself applied from git, and must not count against the next proposal).
	NotApproved ApprovalState = iota
	// Approved: the annotation names the pending proposal's commit; publish exactly that commit.
	Approved
	// ApprovalOutdated: the annotation names another commit, one that is not published: the
	// proposal changed after it was reviewed. Nothing is published.
	ApprovalOutdated
	// ApprovalInvalid: the annotation is not a full commit id (the old v<N> form, a short id).
	// Nothing is published.
	ApprovalInvalid
)

// ApprovalDecision is the verdict on one approval annotation.
type ApprovalDecision struct {
	State ApprovalState
	// Message, for ApprovalOutdated and ApprovalInvalid, says what was refused and what to do.
	Message string
}

var (
	fullCommit  = regexp.MustCompile(`^[0-9a-f]{40}$`)
	revisionNum = regexp.MustCompile(`^v[0-9]+$`)
)

// ApprovalValue is the flotilla.dev/approve value that approves proposal p: its full commit id.
// `flotilla approve` writes it; DecideApproval accepts nothing else.
func ApprovalValue(p *v1alpha1.ProposalStatus) (string, error) {
	if p == nil {
		return "", fmt.Errorf("no pending proposal: nothing to approve")
	}
	if !fullCommit.MatchString(p.Commit) {
		return "", fmt.Errorf("proposal %s has no commit id in its status (%q): wait for the controller to report it", p.Branch, p.Commit)
	}
	return p.Commit, nil
}

// DecideApproval says whether the approval annotation value approves the cluster's pending
// proposal. published is the cluster's current revision (nil if none). The rule: an approval names
// the commit that was reviewed, so a proposal whose content changed since (a new commit) is not
// approved by it.
func DecideApproval(cluster, value string, proposal *v1alpha1.ProposalStatus, published *v1alpha1.DeployedPackagesStatus) ApprovalDecision {
	return Decide("flotilla approve "+cluster+" (or annotate it "+v1alpha1.AnnotationApprove+"="+commitOf(proposal)+")", value, proposal, published)
}

func commitOf(p *v1alpha1.ProposalStatus) string {
	if p == nil {
		return ""
	}
	return p.Commit
}

// Decide is DecideApproval for any object approved by its flotilla.dev/approve annotation
// (a cluster, a PackageVariant layer); approve is the command that approves it, for messages.
func Decide(approve, value string, proposal *v1alpha1.ProposalStatus, published *v1alpha1.DeployedPackagesStatus) ApprovalDecision {
	value = strings.ToLower(strings.TrimSpace(value))
	if value == "" || proposal == nil {
		return ApprovalDecision{State: NotApproved}
	}
	if value == proposal.Commit {
		return ApprovalDecision{State: Approved}
	}
	howTo := fmt.Sprintf("review %s, then run %s", proposal.Branch, approve)
	switch {
	case revisionNum.MatchString(value):
		return ApprovalDecision{State: ApprovalInvalid, Message: fmt.Sprintf(
			"%s=%s is refused: an approval names the full commit id of the proposal it approves (status.proposal.commit), not a revision; %s; nothing was published",
			v1alpha1.AnnotationApprove, value, howTo)}
	case !fullCommit.MatchString(value):
		return ApprovalDecision{State: ApprovalInvalid, Message: fmt.Sprintf(
			"%s=%q is refused: it is not a full commit id (40 hex digits, as in status.proposal.commit); %s; nothing was published",
			v1alpha1.AnnotationApprove, truncate(value, 64), howTo)}
	case published != nil && value == published.ApprovedCommit:
		return ApprovalDecision{State: NotApproved}
	}
	return ApprovalDecision{State: ApprovalOutdated, Message: fmt.Sprintf(
		"the approved proposal %s is outdated: %s now proposes %s (%s); nothing was published; %s",
		value, proposal.Branch, proposal.Commit, proposal.Summary, howTo)}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
