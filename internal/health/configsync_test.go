package health

import "testing"

// rootSync is a RootSync that applied the pin, with the status Config Sync reports then.
const rootSync = `
apiVersion: configsync.gke.io/v1beta1
kind: RootSync
metadata: {name: upf-edge01, namespace: config-management-system, generation: 2}
spec:
  sourceFormat: unstructured
  git: {repo: "https://git.example/catalog.git", branch: main, dir: /free5gc-upf, revision: free5gc-upf/v7, auth: none}
status:
  observedGeneration: 2
  reconciler: root-reconciler-upf-edge01
  lastSyncedCommit: c442fca83b41cb445c46d8022ecf8868147cf8b2
  source:
    commit: c442fca83b41cb445c46d8022ecf8868147cf8b2
    gitStatus: {repo: "https://git.example/catalog.git", revision: free5gc-upf/v7, branch: main, dir: free5gc-upf}
    lastUpdate: "2026-03-01T12:00:05Z"
  rendering:
    commit: c442fca83b41cb445c46d8022ecf8868147cf8b2
    message: Rendering skipped
    lastUpdate: "2026-03-01T12:00:05Z"
  sync:
    commit: c442fca83b41cb445c46d8022ecf8868147cf8b2
    gitStatus: {repo: "https://git.example/catalog.git", revision: free5gc-upf/v7, branch: main, dir: free5gc-upf}
    lastUpdate: "2026-03-01T12:00:09Z"
  conditions:
  - {type: Reconciling, status: "False", reason: DeploymentReady, message: Reconciler deployment reconciled}
  - {type: Stalled, status: "False", reason: DeploymentReady, message: Reconciler deployment reconciled}
  - {type: Syncing, status: "False", reason: Sync, message: Sync Completed, commit: c442fca83b41cb445c46d8022ecf8868147cf8b2}
`

const syncingNow = `
- {type: Syncing, status: "True", reason: Sync, message: Syncing, commit: c442fca83b41cb445c46d8022ecf8868147cf8b2}`

func TestConfigSync(t *testing.T) {
	check(t, ConfigSync, rootSync, map[string]evalCase{
		"applied": {want: Result{Synced: true, Reason: ReasonSynced, Message: "RootSync upf-edge01: free5gc-upf/v7 (commit c442fca) applied"}},
		"spec not observed yet": {
			edits: []edit{{"metadata.generation", "3"}},
			want:  Result{Reason: ReasonSyncing, Message: "RootSync upf-edge01: waiting for Config Sync to pick up the new spec (free5gc-upf/v7 (commit c442fca))"},
		},
		"nothing reported yet": {
			edits: []edit{{"status", "{observedGeneration: 2}"}},
			want:  Result{Reason: ReasonSyncing, Message: "RootSync upf-edge01: waiting for Config Sync to fetch free5gc-upf/v7 (commit c442fca)"},
		},
		"fetched the previous revision": {
			edits: []edit{{"status.source.commit", oldCommit}, {"status.sync.commit", oldCommit}},
			want:  Result{Reason: ReasonOldRevision, Message: "RootSync upf-edge01: Config Sync fetched commit 4e7aad8, waiting for it to fetch free5gc-upf/v7 (commit c442fca)"},
		},
		"fetched, applying": {
			edits: []edit{{"status.sync.commit", oldCommit}, {"status.conditions", syncingNow}},
			want:  Result{Reason: ReasonSyncing, Message: "RootSync upf-edge01: applying free5gc-upf/v7 (commit c442fca)"},
		},
		"commits match, still syncing": {
			edits: []edit{{"status.conditions", syncingNow}},
			want:  Result{Reason: ReasonSyncing, Message: "RootSync upf-edge01: waiting for Config Sync to finish syncing free5gc-upf/v7 (commit c442fca)"},
		},
		"no Syncing condition": {
			edits: []edit{{"status.conditions", ""}},
			want:  Result{Reason: ReasonSyncing, Message: "RootSync upf-edge01: waiting for Config Sync to finish syncing free5gc-upf/v7 (commit c442fca)"},
		},
		"tag not found": {
			edits: []edit{{"status.source.commit", oldCommit}, {"status.source.errors", `
- code: "2004"
  errorMessage: |-
    KNV2004: error in the git-sync container: couldn't find remote ref refs/tags/free5gc-upf/v7

    For more information, see https://g.co/cloud/acm-errors#knv2004`}, {"status.source.errorSummary", "{totalCount: 1, errorCountAfterTruncation: 1}"}},
			want: Result{Reason: ReasonSourceError, Message: "RootSync upf-edge01: KNV2004: error in the git-sync container: couldn't find remote ref refs/tags/free5gc-upf/v7\n\nFor more information, see https://g.co/cloud/acm-errors#knv2004"},
		},
		"rendering fails": {
			edits: []edit{{"status.rendering.errors", `[{code: "1068", errorMessage: "KNV1068: failed to run kustomize build in /repo/source/free5gc-upf: accumulating resources: missing file"}]`}},
			want:  Result{Reason: ReasonRenderingError, Message: "RootSync upf-edge01: KNV1068: failed to run kustomize build in /repo/source/free5gc-upf: accumulating resources: missing file"},
		},
		"apply errors, truncated": {
			edits: []edit{{"status.sync.errors", `
- {code: "2009", errorMessage: "KNV2009: failed to apply Deployment.apps, free5gc/upf: admission webhook \"policy.example\" denied the request: image not signed"}
- {code: "2009", errorMessage: "KNV2009: failed to apply Service, free5gc/upf: namespaces \"free5gc\" not found"}`}, {"status.sync.errorSummary", "{totalCount: 3, errorCountAfterTruncation: 2, truncated: true}"}},
			want: Result{Reason: ReasonSyncError, Message: `RootSync upf-edge01: KNV2009: failed to apply Deployment.apps, free5gc/upf: admission webhook "policy.example" denied the request: image not signed (and 2 more errors)`},
		},
		"errors counted, not listed": {
			edits: []edit{{"status.sync.errorSummary", "{totalCount: 4}"}},
			want:  Result{Reason: ReasonSyncError, Message: "RootSync upf-edge01: 4 sync errors (see its status.sync)"},
		},
		"reconciler stalled": {
			edits: []edit{{"status.conditions", `[{type: Stalled, status: "True", reason: Deployment, message: "Reconciler deployment failed to become available: ImagePullBackOff"}]`}},
			want:  Result{Reason: ReasonStalled, Message: "RootSync upf-edge01: Config Sync's reconciler is stalled: Reconciler deployment failed to become available: ImagePullBackOff"},
		},
	})
}
