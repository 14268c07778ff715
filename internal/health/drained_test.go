package health

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// resourceGroup is the inventory Config Sync keeps beside rootSync, here still listing two objects.
const resourceGroup = `
apiVersion: kpt.dev/v1alpha1
kind: ResourceGroup
metadata: {name: root-sync, namespace: config-management-system}
spec:
  resources:
  - {group: apps, kind: Deployment, namespace: free5gc, name: upf}
  - {group: "", kind: Namespace, namespace: "", name: free5gc}
`

// TestDrained checks each engine's "synced the empty package, nothing left" verdict: the pin must
// be applied as For says, and the inventory (Config Sync's ResourceGroup, Flux's status.inventory,
// Argo CD's status.resources) empty.
func TestDrained(t *testing.T) {
	inventory := func(t *testing.T, doc string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: parse(t, doc).(map[string]any)}
	}
	withInventory := func(t *testing.T, rg string) func(*unstructured.Unstructured, Pin) Result {
		return func(obj *unstructured.Unstructured, p Pin) Result { return Drained(obj, inventory(t, rg), p) }
	}
	t.Run("ConfigSync", func(t *testing.T) {
		check(t, withInventory(t, resourceGroup), rootSync, map[string]evalCase{
			"pruning": {want: Result{Reason: ReasonPruning, Message: "RootSync upf-edge01: free5gc-upf/v7 (commit c442fca) applied, 2 objects still in its inventory (Deployment free5gc/upf, Namespace free5gc)"}},
			"not at the empty commit yet": {
				edits: []edit{{"status.source.commit", oldCommit}},
				want:  Result{Reason: ReasonOldRevision, Message: "RootSync upf-edge01: Config Sync fetched commit 4e7aad8, waiting for it to fetch free5gc-upf/v7 (commit c442fca)"},
			},
		})
		check(t, withInventory(t, "{apiVersion: kpt.dev/v1alpha1, kind: ResourceGroup, metadata: {name: root-sync}, spec: {resources: []}}"), rootSync, map[string]evalCase{
			"drained": {want: Result{Synced: true, Reason: "Drained", Message: "RootSync upf-edge01: free5gc-upf/v7 (commit c442fca) applied, nothing left in its inventory"}},
		})
		check(t, func(obj *unstructured.Unstructured, p Pin) Result { return Drained(obj, nil, p) }, rootSync, map[string]evalCase{
			"no ResourceGroup": {want: Result{Reason: ReasonSyncing, Message: "RootSync upf-edge01: free5gc-upf/v7 (commit c442fca) applied, waiting for Config Sync's ResourceGroup config-management-system/upf-edge01, its inventory"}},
		})
	})
	t.Run("Flux", func(t *testing.T) {
		drained := func(obj *unstructured.Unstructured, p Pin) Result { return Drained(obj, nil, p) }
		check(t, drained, kustomization, map[string]evalCase{
			"no inventory": {want: Result{Synced: true, Reason: "Drained", Message: "Kustomization upf-edge01: free5gc-upf/v7 (commit c442fca) applied, nothing left in its inventory"}},
			"entries left": {
				edits: []edit{{"status.inventory", `{entries: [{id: free5gc_upf_apps_Deployment, v: v1}, {id: _free5gc__Namespace, v: v1}, {id: a_b_c_D, v: v1}, {id: e_f_g_H, v: v1}]}`}},
				want:  Result{Reason: ReasonPruning, Message: "Kustomization upf-edge01: free5gc-upf/v7 (commit c442fca) applied, 4 objects still in its inventory (Deployment free5gc/upf, Namespace free5gc, D a/b and 1 more)"},
			},
		})
	})
	t.Run("ArgoCD", func(t *testing.T) {
		drained := func(obj *unstructured.Unstructured, p Pin) Result { return Drained(obj, nil, p) }
		check(t, drained, application, map[string]evalCase{
			"resources left": {want: Result{Reason: ReasonPruning, Message: "Application upf-edge01: free5gc-upf/v7 (commit c442fca) applied, 2 objects still in its inventory (Deployment free5gc/upf, Service free5gc/upf)"}},
			"none left": {
				edits: []edit{{"status.resources", ""}},
				want:  Result{Synced: true, Reason: "Drained", Message: "Application upf-edge01: free5gc-upf/v7 (commit c442fca) applied, nothing left in its inventory"},
			},
		})
	})
}
