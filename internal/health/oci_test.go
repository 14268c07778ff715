package health

import "testing"

// OCI packages are pinned by digest: each engine reports it in its own spelling (Flux
// "vN@sha256:HEX", Config Sync and Argo CD the digest with or without "sha256:").
func TestOCIDigests(t *testing.T) {
	hex := "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	ociPin := Pin{Tag: "free5gc-upf:v7", Commit: "sha256:" + hex}
	check(t, Flux, kustomization, map[string]evalCase{
		"Flux applied the digest": {pin: ociPin, edits: []edit{{"status.lastAppliedRevision", "v7@sha256:" + hex}},
			want: Result{Synced: true, Reason: ReasonSynced, Message: "Kustomization upf-edge01: free5gc-upf:v7 (digest sha256:9f86d081884c) applied"}},
		"Flux applied another digest": {pin: ociPin, edits: []edit{{"status.lastAppliedRevision", "v6@sha256:" + oldCommit}},
			want: Result{Reason: ReasonOldRevision, Message: "Kustomization upf-edge01 applied v6@sha256:" + oldCommit + ", waiting for it to apply free5gc-upf:v7 (digest sha256:9f86d081884c)"}},
	})
	check(t, ConfigSync, rootSync, map[string]evalCase{
		"Config Sync at the digest without its prefix": {pin: ociPin, edits: []edit{{"status.source.commit", hex}, {"status.sync.commit", hex}},
			want: Result{Synced: true, Reason: ReasonSynced, Message: "RootSync upf-edge01: free5gc-upf:v7 (digest sha256:9f86d081884c) applied"}},
	})
}
