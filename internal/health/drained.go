package health

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ReasonPruning: the agent synced the empty package and still lists objects it applied.
const ReasonPruning = "Pruning"

// ResourceGroupGVK is the kind of Config Sync's inventory: one ResourceGroup per RootSync or
// RepoSync, with its name and namespace, lists every object the sync object applied.
var ResourceGroupGVK = schema.GroupVersionKind{Group: "kpt.dev", Version: "v1alpha1", Kind: "ResourceGroup"}

// NeedsInventory reports whether Drained needs the inventory object of a sync object kind (Config
// Sync keeps it apart; Flux and Argo CD keep theirs in the sync object's status).
func NeedsInventory(kind string) bool {
	return kind == "RootSync" || kind == "RepoSync"
}

// Drained says whether a sync object pointed at the empty package (pin) has pruned everything it
// applied: it reports the pin synced (as For does) and its inventory holds no object. Config
// Sync's inventory is its ResourceGroup (inventory, nil when the cluster has none), Flux's the
// Kustomization's status.inventory, Argo CD's the Application's status.resources. Until then the
// result says what the agent still lists; Synced is true only when nothing is left.
func Drained(obj, inventory *unstructured.Unstructured, pin Pin) Result {
	if obj == nil {
		return Missing("sync object", "")
	}
	kind := obj.GetKind()
	if h := For(kind)(obj, pin); !h.Synced {
		return h
	}
	var left []string
	switch kind {
	case "RootSync", "RepoSync":
		if inventory == nil {
			return Result{Reason: ReasonSyncing, Message: fmt.Sprintf("%s: %s applied, waiting for Config Sync's ResourceGroup %s/%s, its inventory",
				id(obj), pin, obj.GetNamespace(), obj.GetName())}
		}
		for _, r := range maps(inventory, "spec", "resources") {
			left = append(left, objectName(r["kind"], r["namespace"], r["name"]))
		}
	case "Kustomization":
		for _, e := range maps(obj, "status", "inventory", "entries") {
			left = append(left, fluxEntry(e["id"]))
		}
	case "Application":
		for _, r := range maps(obj, "status", "resources") {
			left = append(left, objectName(r["kind"], r["namespace"], r["name"]))
		}
	}
	if n := len(left); n > 0 {
		more := ""
		if n > 3 {
			more = fmt.Sprintf(" and %d more", n-3)
			left = left[:3]
		}
		return Result{Reason: ReasonPruning, Message: fmt.Sprintf("%s: %s applied, %d objects still in its inventory (%s%s)",
			id(obj), pin, n, strings.Join(left, ", "), more)}
	}
	return Result{Synced: true, Reason: "Drained", Message: fmt.Sprintf("%s: %s applied, nothing left in its inventory", id(obj), pin)}
}

// objectName names an inventory entry: Kind namespace/name (no namespace for cluster objects).
func objectName(kind, namespace, name any) string {
	k, _ := kind.(string)
	ns, _ := namespace.(string)
	n, _ := name.(string)
	if ns != "" {
		n = ns + "/" + n
	}
	return strings.TrimSpace(k + " " + n)
}

// fluxEntry names a Flux inventory entry, whose id is namespace_name_group_kind.
func fluxEntry(v any) string {
	s, _ := v.(string)
	parts := strings.Split(s, "_")
	if len(parts) != 4 {
		return s
	}
	return objectName(parts[3], parts[0], parts[1])
}
