package health

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ConfigSync evaluates a RootSync or RepoSync. Config Sync reports three stages, each with the
// commit it is at and its errors: source (fetched), rendering (hydrated, when the package needs
// it) and sync (applied). The pin is applied when the fetched and the applied commit are both
// the pinned one, no stage reports an error, and the Syncing condition is False (the reconciler
// finished with that commit).
func ConfigSync(obj *unstructured.Unstructured, pin Pin) Result {
	if obj == nil {
		return Missing("RootSync or RepoSync", "")
	}
	for _, stage := range []struct{ field, reason string }{
		{"source", ReasonSourceError},
		{"rendering", ReasonRenderingError},
		{"sync", ReasonSyncError},
	} {
		if msg := configSyncErrors(obj, stage.field); msg != "" {
			return Result{Reason: stage.reason, Message: fmt.Sprintf("%s: %s", id(obj), msg)}
		}
	}
	if c, _ := findCondition(obj, "Stalled"); c.status == "True" {
		return Result{Reason: ReasonStalled, Message: fmt.Sprintf("%s: Config Sync's reconciler is stalled: %s", id(obj), clip(c.message))}
	}
	if stale(obj) {
		return Result{Reason: ReasonSyncing, Message: fmt.Sprintf("%s: waiting for Config Sync to pick up the new spec (%s)", id(obj), pin)}
	}
	fetched, applied := str(obj, "status", "source", "commit"), str(obj, "status", "sync", "commit")
	switch {
	case fetched == "":
		return Result{Reason: ReasonSyncing, Message: fmt.Sprintf("%s: waiting for Config Sync to fetch %s", id(obj), pin)}
	case !sameCommit(fetched, pin.Commit):
		return Result{Reason: ReasonOldRevision, Message: fmt.Sprintf("%s: Config Sync fetched commit %s, waiting for it to fetch %s", id(obj), short(fetched), pin)}
	case !sameCommit(applied, pin.Commit):
		return Result{Reason: ReasonSyncing, Message: fmt.Sprintf("%s: applying %s", id(obj), pin)}
	}
	if c, ok := findCondition(obj, "Syncing"); !ok || c.status != "False" {
		return Result{Reason: ReasonSyncing, Message: fmt.Sprintf("%s: waiting for Config Sync to finish syncing %s", id(obj), pin)}
	}
	return Result{Synced: true, Reason: ReasonSynced, Message: fmt.Sprintf("%s: %s applied", id(obj), pin)}
}

// configSyncErrors sums up one stage's errors: the first error's text (Config Sync's KNV code
// leads it) and how many more there are. errorSummary counts errors beyond the listed ones.
func configSyncErrors(obj *unstructured.Unstructured, stage string) string {
	errs := maps(obj, "status", stage, "errors")
	total, _, _ := unstructured.NestedInt64(obj.Object, "status", stage, "errorSummary", "totalCount")
	n := max(int(total), len(errs))
	switch {
	case n == 0:
		return ""
	case len(errs) == 0:
		return fmt.Sprintf("%d %s errors (see its status.%s)", n, stage, stage)
	}
	msg, _ := errs[0]["errorMessage"].(string)
	msg = clip(msg)
	if n > 1 {
		msg += fmt.Sprintf(" (and %d more errors)", n-1)
	}
	return msg
}
