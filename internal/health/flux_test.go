package health

import "testing"

// kustomization is a Kustomization that applied the pin, with the status kustomize-controller
// reports then.
const kustomization = `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: upf-edge01, namespace: flux-system, generation: 1}
spec:
  interval: 1m0s
  path: ./free5gc-upf
  prune: true
  sourceRef: {kind: GitRepository, name: upf-edge01}
status:
  observedGeneration: 1
  lastAppliedRevision: free5gc-upf/v7@sha1:c442fca83b41cb445c46d8022ecf8868147cf8b2
  lastAttemptedRevision: free5gc-upf/v7@sha1:c442fca83b41cb445c46d8022ecf8868147cf8b2
  conditions:
  - type: Ready
    status: "True"
    reason: ReconciliationSucceeded
    message: "Applied revision: free5gc-upf/v7@sha1:c442fca83b41cb445c46d8022ecf8868147cf8b2"
    observedGeneration: 1
    lastTransitionTime: "2026-03-01T12:00:09Z"
`

func TestFlux(t *testing.T) {
	applied := Result{Synced: true, Reason: ReasonSynced, Message: "Kustomization upf-edge01: free5gc-upf/v7 (commit c442fca) applied"}
	check(t, Flux, kustomization, map[string]evalCase{
		"applied":                  {want: applied},
		"revision without a ref":   {edits: []edit{{"status.lastAppliedRevision", "sha1:" + newCommit}}, want: applied},
		"revision before Flux 2.0": {edits: []edit{{"status.lastAppliedRevision", "free5gc-upf/v7/" + newCommit}}, want: applied},
		"pin without commit": {
			pin:   Pin{Tag: "free5gc-upf/v7"},
			want:  Result{Synced: true, Reason: ReasonSynced, Message: "Kustomization upf-edge01: free5gc-upf/v7 applied"},
			edits: []edit{{"status.lastAppliedRevision", "free5gc-upf/v7@sha1:" + oldCommit}},
		},
		"periodic reconcile of the applied pin": {
			edits: []edit{{"status.conditions", `[{type: Ready, status: Unknown, reason: Progressing, message: Reconciliation in progress}, {type: Reconciling, status: "True", reason: Progressing, message: "Detecting drift for revision free5gc-upf/v7@sha1:c442fca83b41cb445c46d8022ecf8868147cf8b2 with a timeout of 1m0s"}]`}},
			want:  applied,
		},
		"previous revision applied": {
			edits: []edit{{"status.lastAppliedRevision", "free5gc-upf/v6@sha1:" + oldCommit}},
			want:  Result{Reason: ReasonOldRevision, Message: "Kustomization upf-edge01 applied free5gc-upf/v6@sha1:" + oldCommit + ", waiting for it to apply free5gc-upf/v7 (commit c442fca)"},
		},
		"same tag, other commit": {
			edits: []edit{{"status.lastAppliedRevision", "free5gc-upf/v7@sha1:" + oldCommit}},
			want:  Result{Reason: ReasonOldRevision, Message: "Kustomization upf-edge01 applied free5gc-upf/v7@sha1:" + oldCommit + ", waiting for it to apply free5gc-upf/v7 (commit c442fca)"},
		},
		"first apply in progress": {
			edits: []edit{{"status.lastAppliedRevision", ""}, {"status.conditions", `[{type: Ready, status: Unknown, reason: Progressing, message: Reconciliation in progress}]`}},
			want:  Result{Reason: ReasonSyncing, Message: "Kustomization upf-edge01: applying free5gc-upf/v7 (commit c442fca)"},
		},
		"health check failed": {
			edits: []edit{{"status.lastAppliedRevision", "free5gc-upf/v6@sha1:" + oldCommit}, {"status.conditions", `[{type: Ready, status: "False", reason: HealthCheckFailed, message: "health check failed after 4m30s: timeout waiting for: [Deployment/free5gc/upf status: 'InProgress']"}]`}},
			want:  Result{Reason: ReasonDegraded, Message: "Kustomization upf-edge01 is not ready (HealthCheckFailed): health check failed after 4m30s: timeout waiting for: [Deployment/free5gc/upf status: 'InProgress']"},
		},
		"path missing in the artifact": {
			edits: []edit{{"status.conditions", `[{type: Ready, status: "False", reason: ArtifactFailed, message: "kustomization path not found: stat /tmp/kustomization-1234/free5gc-upf: no such file or directory"}]`}},
			want:  Result{Reason: ReasonNotReady, Message: "Kustomization upf-edge01 is not ready (ArtifactFailed): kustomization path not found: stat /tmp/kustomization-1234/free5gc-upf: no such file or directory"},
		},
		"suspended": {
			edits: []edit{{"spec.suspend", "true"}},
			want:  Result{Reason: ReasonSuspended, Message: "Kustomization upf-edge01 is suspended; resume it with `flux resume kustomization upf-edge01 -n flux-system`"},
		},
		"spec not reconciled yet": {
			edits: []edit{{"metadata.generation", "2"}},
			want:  Result{Reason: ReasonSyncing, Message: "Kustomization upf-edge01: waiting for kustomize-controller to reconcile the new spec (free5gc-upf/v7 (commit c442fca))"},
		},
		"no status yet": {
			edits: []edit{{"status", ""}},
			want:  Result{Reason: ReasonSyncing, Message: "Kustomization upf-edge01: waiting for kustomize-controller to report"},
		},
	})
}
