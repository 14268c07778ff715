package fleet_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/fleet"
)

func TestDecideApproval(t *testing.T) {
	const (
		reviewed = "1111111111111111111111111111111111111111"
		current  = "2222222222222222222222222222222222222222"
	)
	proposal := &v1alpha1.ProposalStatus{Revision: 3, Branch: "proposed/deployed-packages/v3", Commit: current, Summary: "+edge01-upf upf/v2"}
	approvedBefore := &v1alpha1.DeployedPackagesStatus{Revision: 2, Tag: "deployed-packages/v2", Commit: "3333333333333333333333333333333333333333", ApprovedCommit: reviewed}
	publishedByHand := &v1alpha1.DeployedPackagesStatus{Revision: 2, Tag: "deployed-packages/v2", Commit: reviewed}
	howTo := "review proposed/deployed-packages/v3, then run flotilla approve edge01 (or annotate it flotilla.dev/approve=" + current + ")"

	tests := []struct {
		name      string
		value     string
		proposal  *v1alpha1.ProposalStatus
		published *v1alpha1.DeployedPackagesStatus
		want      fleet.ApprovalDecision
	}{
		{name: "no annotation", proposal: proposal, want: fleet.ApprovalDecision{State: fleet.NotApproved}},
		{name: "nothing pending", value: current, want: fleet.ApprovalDecision{State: fleet.NotApproved}},
		{name: "an old form with nothing pending is left alone", value: "v2", want: fleet.ApprovalDecision{State: fleet.NotApproved}},
		{name: "the current commit", value: current, proposal: proposal, want: fleet.ApprovalDecision{State: fleet.Approved}},
		{name: "the current commit, as pasted", value: " " + strings.ToUpper(current) + "\n", proposal: proposal, want: fleet.ApprovalDecision{State: fleet.Approved}},
		{name: "the commit approved last time", value: reviewed, proposal: proposal, published: approvedBefore, want: fleet.ApprovalDecision{State: fleet.NotApproved}},
		{name: "an older proposal commit", value: reviewed, proposal: proposal, published: publishedByHand, want: fleet.ApprovalDecision{State: fleet.ApprovalOutdated,
			Message: "the approved proposal " + reviewed + " is outdated: proposed/deployed-packages/v3 now proposes " + current + " (+edge01-upf upf/v2); nothing was published; " + howTo}},
		{name: "an older proposal commit, nothing published", value: reviewed, proposal: proposal, want: fleet.ApprovalDecision{State: fleet.ApprovalOutdated,
			Message: "the approved proposal " + reviewed + " is outdated: proposed/deployed-packages/v3 now proposes " + current + " (+edge01-upf upf/v2); nothing was published; " + howTo}},
		{name: "the revision form, even of the pending revision", value: "v3", proposal: proposal, want: fleet.ApprovalDecision{State: fleet.ApprovalInvalid,
			Message: "flotilla.dev/approve=v3 is refused: an approval names the full commit id of the proposal it approves (status.proposal.commit), not a revision; " + howTo + "; nothing was published"}},
		{name: "a short commit id", value: current[:12], proposal: proposal, want: fleet.ApprovalDecision{State: fleet.ApprovalInvalid,
			Message: `flotilla.dev/approve="222222222222" is refused: it is not a full commit id (40 hex digits, as in status.proposal.commit); ` + howTo + "; nothing was published"}},
		{name: "anything else", value: "yes", proposal: proposal, want: fleet.ApprovalDecision{State: fleet.ApprovalInvalid,
			Message: `flotilla.dev/approve="yes" is refused: it is not a full commit id (40 hex digits, as in status.proposal.commit); ` + howTo + "; nothing was published"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fleet.DecideApproval("edge01", tt.value, tt.proposal, tt.published)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DecideApproval(%q) (-want +got):\n%s", tt.value, diff)
			}
		})
	}
}

func TestApprovalValue(t *testing.T) {
	const commit = "2222222222222222222222222222222222222222"
	got, err := fleet.ApprovalValue(&v1alpha1.ProposalStatus{Branch: "proposed/deployed-packages/v3", Commit: commit})
	if err != nil || got != commit {
		t.Errorf("ApprovalValue = %q, %v; want %q", got, err, commit)
	}
	// What the CLI writes is what the controller approves.
	p := &v1alpha1.ProposalStatus{Branch: "proposed/deployed-packages/v3", Commit: commit}
	if d := fleet.DecideApproval("edge01", got, p, nil); d.State != fleet.Approved {
		t.Errorf("DecideApproval(ApprovalValue) = %+v, want Approved", d)
	}
	for _, p := range []*v1alpha1.ProposalStatus{nil, {Branch: "proposed/deployed-packages/v3"}} {
		if v, err := fleet.ApprovalValue(p); err == nil {
			t.Errorf("ApprovalValue(%+v) = %q, want an error", p, v)
		}
	}
}
