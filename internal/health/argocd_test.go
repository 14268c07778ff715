package health

import "testing"

// application is an Application synced and healthy at the pin, with the status Argo CD reports
// then.
const application = `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: upf-edge01, namespace: argocd, generation: 5}
spec:
  project: default
  source: {repoURL: "https://git.example/catalog.git", path: free5gc-upf, targetRevision: free5gc-upf/v7}
  destination: {server: "https://kubernetes.default.svc", namespace: free5gc}
  syncPolicy: {automated: {prune: true}}
status:
  sync:
    status: Synced
    revision: c442fca83b41cb445c46d8022ecf8868147cf8b2
    comparedTo:
      source: {repoURL: "https://git.example/catalog.git", path: free5gc-upf, targetRevision: free5gc-upf/v7}
      destination: {server: "https://kubernetes.default.svc", namespace: free5gc}
  health: {status: Healthy, lastTransitionTime: "2026-03-01T12:01:00Z"}
  operationState:
    phase: Succeeded
    message: successfully synced (all tasks run)
    startedAt: "2026-03-01T12:00:05Z"
    finishedAt: "2026-03-01T12:00:08Z"
    syncResult: {revision: c442fca83b41cb445c46d8022ecf8868147cf8b2}
  resources:
  - {group: apps, version: v1, kind: Deployment, namespace: free5gc, name: upf, status: Synced, health: {status: Healthy}}
  - {version: v1, kind: Service, namespace: free5gc, name: upf, status: Synced, health: {status: Healthy}}
  reconciledAt: "2026-03-01T12:03:00Z"
  sourceType: Directory
`

const degradedUPF = `
- {group: apps, version: v1, kind: Deployment, namespace: free5gc, name: upf, status: Synced, health: {status: Degraded, message: "Deployment \"upf\" exceeded its progress deadline"}}
- {version: v1, kind: Service, namespace: free5gc, name: upf, status: Synced, health: {status: Healthy}}`

func TestArgoCD(t *testing.T) {
	synced := Result{Synced: true, Reason: ReasonSynced, Message: "Application upf-edge01: free5gc-upf/v7 (commit c442fca) synced and healthy"}
	check(t, ArgoCD, application, map[string]evalCase{
		"synced and healthy": {want: synced},
		"revision reported as the tag": {
			edits: []edit{{"status.sync.revision", "free5gc-upf/v7"}},
			want:  synced,
		},
		"warnings do not matter": {
			edits: []edit{{"status.conditions", `[{type: SharedResourceWarning, message: "Service/upf is part of applications argocd/upf-edge01 and upf-old"}]`}},
			want:  synced,
		},
		"an old failed sync does not matter": {
			edits: []edit{{"status.operationState.phase", "Failed"}, {"status.operationState.syncResult.revision", oldCommit}},
			want:  synced,
		},
		"previous revision": {
			edits: []edit{{"status.sync.revision", oldCommit}},
			want:  Result{Reason: ReasonOldRevision, Message: "Application upf-edge01 is at revision 4e7aad8, waiting for Argo CD to move to free5gc-upf/v7 (commit c442fca)"},
		},
		"out of sync": {
			edits: []edit{{"status.sync.status", "OutOfSync"}},
			want:  Result{Reason: ReasonSyncing, Message: "Application upf-edge01 is OutOfSync at free5gc-upf/v7 (commit c442fca), waiting for Argo CD to sync"},
		},
		"not compared yet": {
			edits: []edit{{"status", ""}},
			want:  Result{Reason: ReasonSyncing, Message: "Application upf-edge01: waiting for Argo CD to compare with free5gc-upf/v7 (commit c442fca)"},
		},
		"tag cannot be resolved": {
			edits: []edit{{"status.sync.revision", oldCommit}, {"status.sync.status", "Unknown"}, {"status.conditions", `[{type: ComparisonError, message: "Failed to load target state: failed to generate manifest for source 1 of 1: rpc error: code = Unknown desc = unable to resolve 'free5gc-upf/v7' to a commit SHA"}]`}},
			want:  Result{Reason: ReasonSyncError, Message: "Application upf-edge01: ComparisonError: Failed to load target state: failed to generate manifest for source 1 of 1: rpc error: code = Unknown desc = unable to resolve 'free5gc-upf/v7' to a commit SHA"},
		},
		"sync of the pin failed": {
			edits: []edit{{"status.sync.status", "OutOfSync"}, {"status.operationState.phase", "Failed"}, {"status.operationState.message", `|-
  one or more objects failed to apply, reason: Deployment.apps "upf" is invalid: spec.template.spec.containers[0].image: Required value`}},
			want: Result{Reason: ReasonSyncError, Message: `Application upf-edge01: sync failed: one or more objects failed to apply, reason: Deployment.apps "upf" is invalid: spec.template.spec.containers[0].image: Required value`},
		},
		"progressing": {
			edits: []edit{{"status.health", "{status: Progressing}"}, {"status.resources", `[{group: apps, version: v1, kind: Deployment, namespace: free5gc, name: upf, status: Synced, health: {status: Progressing, message: "Waiting for rollout to finish: 1 of 3 updated replicas are available..."}}]`}},
			want:  Result{Reason: ReasonProgressing, Message: "Application upf-edge01: free5gc-upf/v7 (commit c442fca) synced, waiting for it to become healthy: Deployment free5gc/upf is Progressing: Waiting for rollout to finish: 1 of 3 updated replicas are available..."},
		},
		"degraded": {
			edits: []edit{{"status.health", "{status: Degraded}"}, {"status.resources", degradedUPF}},
			want:  Result{Reason: ReasonDegraded, Message: `Application upf-edge01: free5gc-upf/v7 (commit c442fca) synced but degraded: Deployment free5gc/upf is Degraded: Deployment "upf" exceeded its progress deadline`},
		},
		"resources missing": {
			edits: []edit{{"status.health", "{status: Missing}"}, {"status.resources", `[{version: v1, kind: ConfigMap, namespace: free5gc, name: upf-config, status: OutOfSync, health: {status: Missing}}]`}},
			want:  Result{Reason: ReasonDegraded, Message: "Application upf-edge01: free5gc-upf/v7 (commit c442fca) synced but missing: ConfigMap free5gc/upf-config is Missing"},
		},
		"health unknown": {
			edits: []edit{{"status.health", ""}},
			want:  Result{Reason: ReasonNotReady, Message: "Application upf-edge01: free5gc-upf/v7 (commit c442fca) synced, health Unknown"},
		},
	})
}
