package patch

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

func benchPD() *v1alpha1.PackageDeployment {
	at := metav1.NewTime(time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC))
	pd := &v1alpha1.PackageDeployment{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "y", Labels: map[string]string{"a": "b"}}}
	pd.Status.Resolved = &v1alpha1.ResolvedRevision{Repository: "catalog", Revision: 2, Tag: "pkg/v2", Commit: "1111111111111111111111111111111111111111", Directory: "/pkg"}
	for _, t := range []string{"Ready", "Published", "Synced", "Reconciling", "Stalled"} {
		pd.Status.Conditions = append(pd.Status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: "Because", Message: "a message of some length for " + t, LastTransitionTime: at, ObservedGeneration: 3})
	}
	return pd
}

func BenchmarkStatusChangedEqual(b *testing.B) {
	before, after := benchPD(), benchPD()
	for b.Loop() {
		_, _ = statusChanged(before, after)
	}
}

func BenchmarkStatusChangedDiffers(b *testing.B) {
	before, after := benchPD(), benchPD()
	after.Status.Conditions[4].Message = "other"
	for b.Loop() {
		_, _ = statusChanged(before, after)
	}
}

func BenchmarkChangedUnstructured(b *testing.B) {
	before, after := benchPD(), benchPD()
	for b.Loop() {
		_, _ = changed(before, after, "status")
	}
}
