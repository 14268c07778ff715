package workloadcluster

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/fleet"
)

// TestSetPublishedApproval: a refused approval is reported on Ready with the verdict's message; an
// outdated one is still a proposal waiting (Reconciling), an invalid annotation needs a person
// (Stalled).
func TestSetPublishedApproval(t *testing.T) {
	const commit = "2222222222222222222222222222222222222222"
	proposal := &v1alpha1.ProposalStatus{Revision: 1, Branch: "proposed/deployed-packages/v1", Commit: commit, Summary: "+a x/v1"}
	type cond struct{ Type, Status, Reason, Message string }
	byType := cmpopts.SortSlices(func(a, b cond) bool { return a.Type < b.Type })
	tests := []struct {
		name     string
		approval fleet.ApprovalDecision
		want     []cond
	}{
		{name: "waiting", want: []cond{
			{"Ready", "False", "WaitingForApproval", "proposed/deployed-packages/v1 (+a x/v1) waits for approval: flotilla approve edge01, or kubectl annotate workloadcluster edge01 flotilla.dev/approve=" + commit},
			{"Reconciling", "True", "WaitingForApproval", "proposed/deployed-packages/v1 (+a x/v1) waits for approval: flotilla approve edge01, or kubectl annotate workloadcluster edge01 flotilla.dev/approve=" + commit},
		}},
		{name: "outdated", approval: fleet.ApprovalDecision{State: fleet.ApprovalOutdated, Message: "outdated"}, want: []cond{
			{"Ready", "False", "ApprovalOutdated", "outdated"},
			{"Reconciling", "True", "ApprovalOutdated", "outdated"},
		}},
		{name: "invalid", approval: fleet.ApprovalDecision{State: fleet.ApprovalInvalid, Message: "refused"}, want: []cond{
			{"Ready", "False", "ApprovalInvalid", "refused"},
			{"Stalled", "True", "ApprovalInvalid", "refused"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Name: "edge01", Generation: 2}}
			// A stale Stalled from an earlier verdict must not survive.
			meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: "Stalled", Status: "True", Reason: "Old", Message: "old"})
			setPublished(c, fleet.Outcome{Proposal: proposal, Approval: tt.approval})
			var got []cond
			for _, c := range c.Status.Conditions {
				got = append(got, cond{c.Type, string(c.Status), c.Reason, c.Message})
			}
			if diff := cmp.Diff(tt.want, got, byType); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if c.Status.ObservedGeneration != 2 {
				t.Errorf("observedGeneration = %d, want 2", c.Status.ObservedGeneration)
			}
		})
	}
}
