package render

import (
	"sort"
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

func configSyncObject(cluster *v1alpha1.WorkloadCluster, p Pin, refs map[string]v1alpha1.SyncObjectReference) map[string]any {
	ref := refs[p.Deployment.Name]
	git := map[string]any{
		"repo":     p.RepoURL,
		"branch":   p.Branch,
		"dir":      p.Resolved.Directory,
		"revision": p.Resolved.Tag,
		"auth":     gitAuth(cluster),
	}
	if s := cluster.Spec.Sync.Git.SecretRef; s != nil {
		git["secretRef"] = map[string]any{"name": s.Name}
	}
	if e := cluster.Spec.Sync.Git.GCPServiceAccountEmail; e != "" {
		git["gcpServiceAccountEmail"] = e
	}
	annotations := map[string]any{annotationDeletionPropagation: propagation(p.Deployment.Spec.DeletionPolicy)}
	if deps := dependsOn(p.Deployment, refs); deps != "" {
		annotations[annotationDependsOn] = deps
	}
	return map[string]any{
		"apiVersion": ref.APIVersion,
		"kind":       ref.Kind,
		"metadata": map[string]any{
			"name":        ref.Name,
			"namespace":   ref.Namespace,
			"annotations": annotations,
			"labels":      labels(p.Deployment),
		},
		"spec": map[string]any{
			"sourceFormat": "unstructured",
			"sourceType":   "git",
			"git":          git,
		},
	}
}

func gitAuth(cluster *v1alpha1.WorkloadCluster) string {
	if a := cluster.Spec.Sync.Git.Auth; a != "" {
		return a
	}
	return "none"
}

func propagation(policy v1alpha1.DeletionPolicy) string {
	if policy == v1alpha1.DeletionPolicyOrphan {
		return "Orphan"
	}
	return "Foreground"
}

func labels(pd *v1alpha1.PackageDeployment) map[string]any {
	return map[string]any{
		"app.kubernetes.io/managed-by": "flotilla",
		v1alpha1.LabelDeployment:       pd.Name,
	}
}

// dependsOn renders config.kubernetes.io/depends-on for the pinned dependencies of pd, sorted.
func dependsOn(pd *v1alpha1.PackageDeployment, refs map[string]v1alpha1.SyncObjectReference) string {
	var deps []string
	for _, d := range pd.Spec.DependsOn {
		ref, ok := refs[d.Name]
		if !ok {
			continue
		}
		deps = append(deps, configSyncGroup+"/namespaces/"+ref.Namespace+"/"+ref.Kind+"/"+ref.Name)
	}
	sort.Strings(deps)
	return strings.Join(deps, ",")
}
