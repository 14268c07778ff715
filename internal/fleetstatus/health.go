package fleetstatus

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// Health is one word for how an object is doing, read from its kstatus conditions. It means the
// same on every kind, in `flotilla status` and in the dashboard (each with one colour there).
type Health string

// Healths, from the worst.
const (
	// Degraded needs someone: Stalled, or the cluster's agent reports an error.
	Degraded Health = "Degraded"
	// Waiting waits for a person: an approval, a paused rollout.
	Waiting Health = "Waiting"
	// Progressing is work under way, or a wait for something that happens by itself.
	Progressing Health = "Progressing"
	// Unknown has no status yet.
	Unknown Health = "Unknown"
	// Suspended is suspended by its spec: nothing moves, on purpose.
	Suspended Health = "Suspended"
	// Healthy is Ready, and Synced where the cluster reports health (as a rollout counts it).
	Healthy Health = "Healthy"
)

// Healths lists every health from the worst.
var Healths = []Health{Degraded, Waiting, Progressing, Unknown, Suspended, Healthy}

func (h Health) rank() int {
	for i, x := range Healths {
		if x == h {
			return i
		}
	}
	return len(Healths)
}

// Worse reports whether h is worse than o.
func (h Health) Worse(o Health) bool { return h.rank() < o.rank() }

// Status is an object's health and the condition that says why.
type Status struct {
	Health  Health `json:"health"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// personReasons are the Ready=False reasons that wait for a person (troubleshooting.md: "waits
// for a person, as a proposal waits for approval").
var personReasons = map[string]bool{"WaitingForApproval": true, "ApprovalOutdated": true, "RolloutPaused": true}

// objectHealth reads Ready and Stalled, the conditions every kind has: Stalled is Degraded, Ready
// True Healthy (Suspended when its reason says so), Ready False Progressing or, for a person,
// Waiting. A Ready older than the object's generation is Progressing: the spec changed since.
func objectHealth(conds []metav1.Condition, generation int64) Status {
	if c := meta.FindStatusCondition(conds, v1alpha1.ConditionStalled); c != nil && c.Status == metav1.ConditionTrue {
		return Status{Health: Degraded, Reason: c.Reason, Message: c.Message}
	}
	c := meta.FindStatusCondition(conds, v1alpha1.ConditionReady)
	switch {
	case c == nil:
		return Status{Health: Unknown, Reason: "NoStatus", Message: "flotilla has not reported on it yet"}
	case c.Status == metav1.ConditionTrue && c.ObservedGeneration < generation:
		return Status{Health: Progressing, Reason: c.Reason, Message: "the spec changed; flotilla has not reported on the change yet"}
	case c.Status == metav1.ConditionTrue && c.Reason == "Suspended":
		return Status{Health: Suspended, Reason: c.Reason, Message: c.Message}
	case c.Status == metav1.ConditionTrue:
		return Status{Health: Healthy, Reason: c.Reason, Message: c.Message}
	case personReasons[c.Reason]:
		return Status{Health: Waiting, Reason: c.Reason, Message: c.Message}
	}
	return Status{Health: Progressing, Reason: c.Reason, Message: c.Message}
}

// syncingReasons are the Synced=False reasons of an agent on its way (troubleshooting.md#synced);
// the others are errors, but Suspended.
var syncingReasons = map[string]bool{"Syncing": true, "OldRevision": true, "NotFound": true, "Progressing": true}

// DeploymentHealth is a deployment's health: its own conditions, then what the cluster's agent
// reports (Synced, with health feedback). Without health feedback a published pin is Healthy, as
// a rollout counts it.
func DeploymentHealth(pd *v1alpha1.PackageDeployment) Status {
	st := objectHealth(pd.Status.Conditions, pd.Generation)
	if st.Health != Healthy {
		return st
	}
	c := meta.FindStatusCondition(pd.Status.Conditions, v1alpha1.ConditionSynced)
	switch {
	case c == nil || c.Status == metav1.ConditionTrue:
		return st
	case c.Reason == "Suspended":
		return Status{Health: Suspended, Reason: c.Reason, Message: c.Message}
	case syncingReasons[c.Reason]:
		return Status{Health: Progressing, Reason: c.Reason, Message: c.Message}
	}
	return Status{Health: Degraded, Reason: c.Reason, Message: c.Message}
}

// ClusterHealth is a cluster's own health (Ready, Stalled, and Bootstrapped: a root sync object
// that cannot be applied), without its deployments'.
func ClusterHealth(wc *v1alpha1.WorkloadCluster) Status {
	st := objectHealth(wc.Status.Conditions, wc.Generation)
	if st.Health == Degraded {
		return st
	}
	if c := meta.FindStatusCondition(wc.Status.Conditions, v1alpha1.ConditionBootstrapped); c != nil && c.Status == metav1.ConditionFalse {
		return Status{Health: Degraded, Reason: c.Reason, Message: c.Message}
	}
	return st
}

// SetHealth is a PackageSet's health.
func SetHealth(set *v1alpha1.PackageSet) Status {
	return objectHealth(set.Status.Conditions, set.Generation)
}

// VariantHealth is a PackageVariant's health.
func VariantHealth(pv *v1alpha1.PackageVariant) Status {
	return objectHealth(pv.Status.Conditions, pv.Generation)
}

// worst is the worse of a and b (a when they are as bad).
func worst(a, b Status) Status {
	if b.Health.Worse(a.Health) {
		return b
	}
	return a
}
