package health

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ArgoCD evaluates an Application. Argo CD keeps sync and health apart: status.sync says whether
// the live state matches the revision in status.sync.revision (the commit it resolved), and
// status.health whether what it applied works. The pin is applied when both say so at the pinned
// revision. Error conditions and a failed sync operation come first: they say why not.
func ArgoCD(obj *unstructured.Unstructured, pin Pin) Result {
	if obj == nil {
		return Missing("Application", "")
	}
	for _, c := range maps(obj, "status", "conditions") {
		if typ, _ := c["type"].(string); strings.HasSuffix(typ, "Error") {
			msg, _ := c["message"].(string)
			return Result{Reason: ReasonSyncError, Message: fmt.Sprintf("%s: %s: %s", id(obj), typ, clip(msg))}
		}
	}
	phase := str(obj, "status", "operationState", "phase")
	if opRev := str(obj, "status", "operationState", "syncResult", "revision"); (phase == "Failed" || phase == "Error") && (opRev == "" || argoAt(opRev, pin)) {
		return Result{Reason: ReasonSyncError, Message: fmt.Sprintf("%s: sync %s: %s", id(obj), strings.ToLower(phase), clip(str(obj, "status", "operationState", "message")))}
	}
	rev, sync := str(obj, "status", "sync", "revision"), str(obj, "status", "sync", "status")
	switch {
	case rev == "":
		return Result{Reason: ReasonSyncing, Message: fmt.Sprintf("%s: waiting for Argo CD to compare with %s", id(obj), pin)}
	case !argoAt(rev, pin):
		return Result{Reason: ReasonOldRevision, Message: fmt.Sprintf("%s is at revision %s, waiting for Argo CD to move to %s", id(obj), short(rev), pin)}
	case sync != "Synced":
		return Result{Reason: ReasonSyncing, Message: fmt.Sprintf("%s is %s at %s, waiting for Argo CD to sync", id(obj), orUnknown(sync), pin)}
	}
	health, detail := str(obj, "status", "health", "status"), argoUnhealthy(obj)
	switch health {
	case "Healthy":
		return Result{Synced: true, Reason: ReasonSynced, Message: fmt.Sprintf("%s: %s synced and healthy", id(obj), pin)}
	case "Progressing":
		return Result{Reason: ReasonProgressing, Message: fmt.Sprintf("%s: %s synced, waiting for it to become healthy%s", id(obj), pin, detail)}
	case "Degraded", "Missing":
		return Result{Reason: ReasonDegraded, Message: fmt.Sprintf("%s: %s synced but %s%s", id(obj), pin, strings.ToLower(health), detail)}
	case "Suspended":
		return Result{Reason: ReasonSuspended, Message: fmt.Sprintf("%s: %s synced, a resource is suspended%s", id(obj), pin, detail)}
	}
	return Result{Reason: ReasonNotReady, Message: fmt.Sprintf("%s: %s synced, health %s", id(obj), pin, orUnknown(health))}
}

// argoAt reports whether an Argo CD revision is the pin: Argo CD reports the commit it resolved
// the target revision to, or the tag for sources it does not resolve.
func argoAt(rev string, pin Pin) bool {
	return (pin.Commit != "" && sameCommit(rev, pin.Commit)) || (pin.Tag != "" && rev == pin.Tag)
}

// argoUnhealthy names the first resource Argo CD reports unhealthy, with its health message:
// the application's own health message is usually empty.
func argoUnhealthy(obj *unstructured.Unstructured) string {
	if msg := str(obj, "status", "health", "message"); msg != "" {
		return ": " + clip(msg)
	}
	for _, r := range maps(obj, "status", "resources") {
		h, _ := r["health"].(map[string]any)
		status, _ := h["status"].(string)
		if status == "" || status == "Healthy" {
			continue
		}
		kind, _ := r["kind"].(string)
		name, _ := r["name"].(string)
		if ns, _ := r["namespace"].(string); ns != "" {
			name = ns + "/" + name
		}
		msg, _ := h["message"].(string)
		return strings.TrimSuffix(fmt.Sprintf(": %s %s is %s: %s", kind, name, status, clip(msg)), ": ")
	}
	return ""
}

func orUnknown(s string) string {
	if s == "" {
		return "Unknown"
	}
	return s
}
