package render

import (
	"strings"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

const (
	configSyncAPIVersion = "configsync.gke.io/v1beta1"
	configSyncGroup      = "configsync.gke.io"
	configSyncNamespace  = "config-management-system"

	annotationDeletionPropagation = "configsync.gke.io/deletion-propagation-policy"
	annotationDependsOn           = "config.kubernetes.io/depends-on"
)

// configSyncObjects renders a RootSync (RepoSync when the deployment is namespaced) pinned to the
// package's tag (or its commit, spec.sync.pinBy), with Foreground deletion propagation for Delete.
func configSyncObjects(pc pinContext) []map[string]any {
	annotations := map[string]any{annotationDeletionPropagation: propagation(pc.pin.Deployment.Spec.DeletionPolicy)}
	if len(pc.deps) > 0 {
		var deps []string
		for _, d := range pc.deps {
			deps = append(deps, configSyncGroup+"/namespaces/"+d.Namespace+"/"+d.Kind+"/"+d.Name)
		}
		annotations[annotationDependsOn] = strings.Join(deps, ",")
	}
	return []map[string]any{{
		"apiVersion": pc.ref.APIVersion,
		"kind":       pc.ref.Kind,
		"metadata":   metadata(pc, pc.ref.Name, pc.ref.Namespace, annotations),
		"spec":       configSyncSpec(pc),
	}}
}

// configSyncSpec is the source of a RootSync/RepoSync: a git tag or commit, or an OCI artifact
// by digest.
func configSyncSpec(pc pinContext) map[string]any {
	if !pc.pin.OCI() {
		return map[string]any{
			"sourceFormat": "unstructured",
			"sourceType":   "git",
			"git":          configSyncGit(pc.cluster, pc.pin.RepoURL, pc.pin.Branch, pc.pin.Resolved.Directory, pc.revision()),
		}
	}
	a := pc.cluster.Spec.Sync.OCI
	// The package is the whole artifact: its files are at the image's root.
	oci := map[string]any{"image": pc.image(), "dir": "/", "auth": a.Auth}
	if a.Auth == "" {
		oci["auth"] = "none"
	}
	if a.GCPServiceAccountEmail != "" {
		oci["gcpServiceAccountEmail"] = a.GCPServiceAccountEmail
	}
	return map[string]any{"sourceFormat": "unstructured", "sourceType": "oci", "oci": oci}
}

// configSyncGit is the spec.git of a RootSync/RepoSync; revision "" follows the branch.
func configSyncGit(cluster *v1alpha1.WorkloadCluster, repo, branch, dir, revision string) map[string]any {
	auth := cluster.Spec.Sync.Git.Auth
	if auth == "" {
		auth = "none"
	}
	git := map[string]any{"repo": repo, "branch": branch, "dir": dir, "auth": auth}
	if revision != "" {
		git["revision"] = revision
	}
	if s := cluster.Spec.Sync.Git.SecretRef; s != nil {
		git["secretRef"] = map[string]any{"name": s.Name}
	}
	if e := cluster.Spec.Sync.Git.GCPServiceAccountEmail; e != "" {
		git["gcpServiceAccountEmail"] = e
	}
	return git
}

func propagation(policy v1alpha1.DeletionPolicy) string {
	if policy == v1alpha1.DeletionPolicyOrphan {
		return "Orphan"
	}
	return "Foreground"
}
