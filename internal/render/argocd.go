package render

import (
	"strconv"
	"strings"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

const (
	argoCDAPIVersion         = "argoproj.io/v1alpha1"
	argoCDResourcesFinalizer = "resources-finalizer.argocd.argoproj.io"
	argoCDSyncWave           = "argocd.argoproj.io/sync-wave"
)

// argoCDObjects renders an Application pinned to the package's tag (or its commit), synced automatically with
// prune and self-heal. Delete adds Argo CD's resources finalizer, so deleting the Application
// deletes what it applied; dependencies become sync waves.
func argoCDObjects(pc pinContext) []map[string]any {
	settings := argoCDSettings(pc.cluster)
	meta := metadata(pc, pc.ref.Name, pc.ref.Namespace, map[string]any{argoCDSyncWave: strconv.Itoa(pc.wave)})
	if pc.pin.Deployment.Spec.DeletionPolicy != v1alpha1.DeletionPolicyOrphan {
		meta["finalizers"] = []any{argoCDResourcesFinalizer}
	}
	return []map[string]any{{
		"apiVersion": argoCDAPIVersion,
		"kind":       "Application",
		"metadata":   meta,
		"spec":       argoCDSpec(settings, pc.pin.RepoURL, pc.revision(), strings.TrimPrefix(pc.pin.Resolved.Directory, "/"), pc.pin.Deployment.Spec.Namespace),
	}}
}

func argoCDSpec(s v1alpha1.ArgoCDSync, repo, revision, path, namespace string) map[string]any {
	dest := map[string]any{}
	switch {
	case s.Destination.Name != "":
		dest["name"] = s.Destination.Name
	case s.Destination.Server != "":
		dest["server"] = s.Destination.Server
	default:
		dest["server"] = "https://kubernetes.default.svc"
	}
	syncPolicy := map[string]any{"automated": map[string]any{"prune": true, "selfHeal": true}}
	if namespace != "" {
		dest["namespace"] = namespace
		syncPolicy["syncOptions"] = []any{"CreateNamespace=true"}
	}
	return map[string]any{
		"project":     s.Project,
		"source":      map[string]any{"repoURL": repo, "targetRevision": revision, "path": path},
		"destination": dest,
		"syncPolicy":  syncPolicy,
	}
}

// argoCDSettings is the cluster's Argo CD settings with defaults filled in.
func argoCDSettings(cluster *v1alpha1.WorkloadCluster) v1alpha1.ArgoCDSync {
	s := v1alpha1.ArgoCDSync{}
	if cluster.Spec.Sync.ArgoCD != nil {
		s = *cluster.Spec.Sync.ArgoCD
	}
	if s.Namespace == "" {
		s.Namespace = "argocd"
	}
	if s.Project == "" {
		s.Project = "default"
	}
	return s
}
