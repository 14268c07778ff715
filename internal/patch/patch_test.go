package patch

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// TestStatusChanged: a status is changed when the API server would see another one; metadata and
// spec never count, nor does a nil list against an empty one.
func TestStatusChanged(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC))
	base := func() *v1alpha1.Repository {
		return &v1alpha1.Repository{
			ObjectMeta: metav1.ObjectMeta{Name: "catalog", Namespace: "fleet"},
			Status: v1alpha1.RepositoryStatus{ObservedGeneration: 1, Head: "1111", Conditions: []metav1.Condition{
				{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Fetched", Message: "fetched", LastTransitionTime: at}}},
		}
	}
	tests := []struct {
		name   string
		change func(*v1alpha1.Repository)
		want   bool
	}{
		{name: "nothing", change: func(*v1alpha1.Repository) {}},
		{name: "metadata and spec only", change: func(r *v1alpha1.Repository) {
			r.Finalizers = append(r.Finalizers, "flotilla.dev/x")
			r.Spec.Interval = &metav1.Duration{Duration: time.Minute}
		}},
		{name: "the same time, another value", change: func(r *v1alpha1.Repository) {
			r.Status.Conditions[0].LastTransitionTime = metav1.NewTime(at.In(time.FixedZone("x", 3600)))
		}},
		{name: "head", change: func(r *v1alpha1.Repository) { r.Status.Head = "2222" }, want: true},
		{name: "a condition's message", change: func(r *v1alpha1.Repository) { r.Status.Conditions[0].Message = "other" }, want: true},
		{name: "a condition more", change: func(r *v1alpha1.Repository) {
			r.Status.Conditions = append(r.Status.Conditions, metav1.Condition{Type: "Stalled", Status: metav1.ConditionFalse, Reason: "Fetched", LastTransitionTime: at})
		}, want: true},
		{name: "no conditions", change: func(r *v1alpha1.Repository) { r.Status.Conditions = nil }, want: true},
		{name: "a transition a second later", change: func(r *v1alpha1.Repository) {
			r.Status.Conditions[0].LastTransitionTime = metav1.NewTime(at.Add(time.Second))
		}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, after := base(), base()
			tt.change(after)
			got, err := statusChanged(before, after)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("statusChanged = %t, want %t", got, tt.want)
			}
		})
	}

	// nil and empty lists are the same status to the API server (omitempty drops both).
	before, after := base(), base()
	before.Status.Conditions, after.Status.Conditions = nil, []metav1.Condition{}
	if got, err := statusChanged(before, after); err != nil || got {
		t.Errorf("nil against empty conditions: statusChanged = %t, %v, want false", got, err)
	}
}
