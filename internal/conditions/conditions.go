// Package conditions sets kstatus conditions (Ready, Reconciling, Stalled) consistently, so
// `kubectl wait --for=condition=Ready` and GitOps dashboards read every flotilla kind the same way.
package conditions

import (
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// Ready marks the object done: Ready=True, no Reconciling, no Stalled.
func Ready(conds *[]metav1.Condition, gen int64, reason, msg string) {
	set(conds, gen, v1alpha1.ConditionReady, metav1.ConditionTrue, reason, msg)
	meta.RemoveStatusCondition(conds, v1alpha1.ConditionReconciling)
	meta.RemoveStatusCondition(conds, v1alpha1.ConditionStalled)
}

// Progressing marks work under way or waiting for something that will happen by itself (or by
// approval): Ready=False and Reconciling=True with the same reason.
func Progressing(conds *[]metav1.Condition, gen int64, reason, msg string) {
	set(conds, gen, v1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg)
	set(conds, gen, v1alpha1.ConditionReconciling, metav1.ConditionTrue, reason, msg)
	meta.RemoveStatusCondition(conds, v1alpha1.ConditionStalled)
}

// Stalled marks an error that needs the user: Ready=False and Stalled=True. Flotilla keeps
// retrying, but nothing changes until the cause is fixed.
func Stalled(conds *[]metav1.Condition, gen int64, reason, msg string) {
	set(conds, gen, v1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg)
	set(conds, gen, v1alpha1.ConditionStalled, metav1.ConditionTrue, reason, msg)
	meta.RemoveStatusCondition(conds, v1alpha1.ConditionReconciling)
}

// Set sets one condition of any type.
func Set(conds *[]metav1.Condition, gen int64, typ string, status bool, reason, msg string) {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	set(conds, gen, typ, s, reason, msg)
}

func set(conds *[]metav1.Condition, gen int64, typ string, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(conds, metav1.Condition{Type: typ, Status: status, ObservedGeneration: gen, Reason: reason, Message: bound(msg)})
}

// maxMessage bounds a condition message well below the API's 32768 characters: messages quote
// what registries, git servers and workload clusters answer, and a status that the API server
// refuses would never be written again.
const maxMessage = 8192

func bound(msg string) string {
	if len(msg) <= maxMessage {
		return msg
	}
	cut := maxMessage
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + " … (truncated)"
}

// Observed reports whether conds has Ready for generation gen: the reconciler has processed the
// object's current spec, whatever the outcome.
func Observed(conds []metav1.Condition, gen int64) bool {
	c := meta.FindStatusCondition(conds, v1alpha1.ConditionReady)
	return c != nil && c.ObservedGeneration == gen
}

// ObserveGeneration sets *observed (status.observedGeneration) to gen once the reconciler has
// written Ready for gen, whatever the outcome: kstatus reads an object whose observedGeneration
// lags as still in progress, so a failure that needs a person must bring it up to date too.
// Every reconciler calls it just before writing status: one rule for every kind.
func ObserveGeneration(conds []metav1.Condition, gen int64, observed *int64) {
	if Observed(conds, gen) {
		*observed = gen
	}
}
