// Package health reads a sync object back from a workload cluster and says whether its agent has
// applied the pin flotilla wrote, and if not, why. It is pure (the caller fetches the object), so
// each engine's status dialect is table-tested against the fields the engines document.
package health

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Pin is what a sync object should have applied.
type Pin struct{ Tag, Commit string }

// Result is the verdict, shaped for a condition: Reason is short CamelCase, Message tells the
// user what the agent reports (its error text, the revision it is at).
type Result struct {
	Synced          bool
	Reason, Message string
}

// Reasons. Every Result has one, so it can be a condition reason as is.
const (
	ReasonSynced          = "Synced"          // the pin is applied (and healthy, where the engine says)
	ReasonSyncing         = "Syncing"         // the agent is working toward the pin
	ReasonOldRevision     = "OldRevision"     // the agent reports another revision
	ReasonSourceError     = "SourceError"     // the agent cannot fetch the source
	ReasonRenderingError  = "RenderingError"  // the agent cannot render the source
	ReasonSyncError       = "SyncError"       // the agent cannot apply the source
	ReasonStalled         = "Stalled"         // the agent itself is stuck (Config Sync reconciler)
	ReasonNotReady        = "NotReady"        // the engine reports not ready
	ReasonDegraded        = "Degraded"        // applied, but the workload is not healthy
	ReasonProgressing     = "Progressing"     // applied, the workload is becoming healthy
	ReasonSuspended       = "Suspended"       // reconciliation is suspended in the cluster
	ReasonNotFound        = "NotFound"        // the sync object is not in the cluster
	ReasonUnsupportedKind = "UnsupportedKind" // flotilla has no evaluator for the kind
)

// maxMessage bounds what an agent's error text adds to a message: conditions stay readable and
// status small, and the first lines of an agent's error carry what matters.
const maxMessage = 1024

// For picks the evaluator for a sync object kind. It never returns nil: an unknown kind gets an
// evaluator that says so, so a caller can always put the result in a condition.
func For(kind string) func(*unstructured.Unstructured, Pin) Result {
	switch kind {
	case "RootSync", "RepoSync":
		return ConfigSync
	case "Kustomization":
		return Flux
	case "Application":
		return ArgoCD
	}
	return func(*unstructured.Unstructured, Pin) Result {
		return Result{Reason: ReasonUnsupportedKind, Message: fmt.Sprintf("flotilla cannot read the health of a %q sync object", kind)}
	}
}

// sameCommit reports whether two revisions an agent and flotilla write name the same commit or
// OCI digest: agents write a digest with or without its "sha256:" algorithm prefix.
func sameCommit(a, b string) bool {
	return strings.TrimPrefix(a, "sha256:") == strings.TrimPrefix(b, "sha256:")
}

// Missing is the result for a sync object the workload cluster does not have (yet).
func Missing(kind, name string) Result {
	return Result{Reason: ReasonNotFound, Message: fmt.Sprintf(
		"%s not found in the workload cluster: its agent has not applied the deployed-packages revision that declares it yet (see the cluster's Bootstrapped and Published conditions)",
		strings.TrimSpace(kind+" "+name))}
}

// String names a pin for messages.
func (p Pin) String() string {
	switch {
	case p.Commit == "":
		return p.Tag
	case strings.HasPrefix(p.Commit, "sha256:"):
		return fmt.Sprintf("%s (digest %s)", p.Tag, short(p.Commit))
	}
	return fmt.Sprintf("%s (commit %s)", p.Tag, short(p.Commit))
}

// short abbreviates a commit hash the way git does, leaving anything else alone.
func short(commit string) string {
	if hex, ok := strings.CutPrefix(commit, "sha256:"); ok && isCommit(hex) {
		return "sha256:" + hex[:12]
	}
	if isCommit(commit) {
		return commit[:7]
	}
	return commit
}

// id names the object in messages.
func id(obj *unstructured.Unstructured) string {
	return obj.GetKind() + " " + obj.GetName()
}

func str(obj *unstructured.Unstructured, fields ...string) string {
	s, _, _ := unstructured.NestedString(obj.Object, fields...)
	return s
}

func maps(obj *unstructured.Unstructured, fields ...string) []map[string]any {
	items, _, _ := unstructured.NestedSlice(obj.Object, fields...)
	var out []map[string]any
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// condition is one entry of status.conditions.
type condition struct{ status, reason, message string }

// findCondition returns the condition of a type, and whether the object has it.
func findCondition(obj *unstructured.Unstructured, typ string) (condition, bool) {
	for _, c := range maps(obj, "status", "conditions") {
		if c["type"] == typ {
			s, _ := c["status"].(string)
			r, _ := c["reason"].(string)
			m, _ := c["message"].(string)
			return condition{status: s, reason: r, message: m}, true
		}
	}
	return condition{}, false
}

// stale reports whether the status describes an older generation of the spec than the one in
// the object: until the agent catches up, nothing else in the status is about the current pin.
func stale(obj *unstructured.Unstructured) bool {
	observed, found, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	return found && observed < obj.GetGeneration()
}

// clip bounds agent text in a message.
func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage
	for cut > 0 && (s[cut]&0xC0) == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	return s[:cut] + "…"
}
