package health

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Flux evaluates a Kustomization. kustomize-controller sets status.lastAppliedRevision only
// after an apply (and its health checks) succeeded, so a last applied revision that names the
// pin means the pin is applied. Ready=False says why not. Ready=Unknown alone is not a problem:
// Flux marks it at the start of every periodic reconcile, and the applied revision stays.
func Flux(obj *unstructured.Unstructured, pin Pin) Result {
	if obj == nil {
		return Missing("Kustomization", "")
	}
	if suspended, _, _ := unstructured.NestedBool(obj.Object, "spec", "suspend"); suspended {
		return Result{Reason: ReasonSuspended, Message: fmt.Sprintf("%s is suspended; resume it with `flux resume kustomization %s -n %s`", id(obj), obj.GetName(), obj.GetNamespace())}
	}
	if stale(obj) {
		return Result{Reason: ReasonSyncing, Message: fmt.Sprintf("%s: waiting for kustomize-controller to reconcile the new spec (%s)", id(obj), pin)}
	}
	ready, found := findCondition(obj, "Ready")
	if ready.status == "False" {
		reason := ReasonNotReady
		if ready.reason == "HealthCheckFailed" {
			reason = ReasonDegraded
		}
		return Result{Reason: reason, Message: fmt.Sprintf("%s is not ready (%s): %s", id(obj), ready.reason, clip(ready.message))}
	}
	applied := str(obj, "status", "lastAppliedRevision")
	switch {
	case fluxApplied(applied, pin):
		return Result{Synced: true, Reason: ReasonSynced, Message: fmt.Sprintf("%s: %s applied", id(obj), pin)}
	case applied != "":
		return Result{Reason: ReasonOldRevision, Message: fmt.Sprintf("%s applied %s, waiting for it to apply %s", id(obj), applied, pin)}
	case !found:
		return Result{Reason: ReasonSyncing, Message: fmt.Sprintf("%s: waiting for kustomize-controller to report", id(obj))}
	}
	return Result{Reason: ReasonSyncing, Message: fmt.Sprintf("%s: applying %s", id(obj), pin)}
}

// fluxApplied reports whether a Flux artifact revision is the pin. The commit decides when both
// are known (a tag never moves in flotilla, but a commit cannot lie); otherwise the tag does.
func fluxApplied(revision string, pin Pin) bool {
	if revision == "" {
		return false
	}
	ref, commit := fluxRevision(revision)
	if commit != "" && pin.Commit != "" {
		return sameCommit(commit, pin.Commit)
	}
	return ref != "" && ref == pin.Tag
}

// fluxRevision splits a Flux artifact revision into the reference it names and the commit.
// Flux 2 writes "<ref>@sha1:<commit>" (the ref is the tag without "refs/tags/"), or
// "sha1:<commit>" without a ref; Flux before 2.0 wrote "<ref>/<commit>".
func fluxRevision(revision string) (ref, commit string) {
	if i := strings.LastIndex(revision, "@"); i >= 0 {
		ref, revision = revision[:i], revision[i+1:]
	}
	if _, digest, ok := strings.Cut(revision, ":"); ok {
		return ref, digest
	}
	if i := strings.LastIndex(revision, "/"); ref == "" && i >= 0 && isCommit(revision[i+1:]) {
		return revision[:i], revision[i+1:]
	}
	return ref, revision
}

// isCommit reports whether s is a full SHA-1 or SHA-256 commit hash.
func isCommit(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	return strings.Trim(s, "0123456789abcdef") == ""
}
