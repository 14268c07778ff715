package render

import (
	"fmt"
	"sort"
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
	repo, revision, path := pc.pin.RepoURL, pc.revision(), strings.TrimPrefix(pc.pin.Resolved.Directory, "/")
	if pc.pin.OCI() {
		// Argo CD reads an OCI artifact as a source with an oci:// repoURL, by digest.
		repo, revision, path = "oci://"+pc.pin.Resolved.Image, pc.pin.Resolved.Commit, "."
	}
	return []map[string]any{{
		"apiVersion": argoCDAPIVersion,
		"kind":       "Application",
		"metadata":   meta,
		"spec":       argoCDSpec(settings, repo, revision, path, pc.pin.Deployment.Spec.Namespace, pc.pin.Drain),
	}}
}

func argoCDSpec(s v1alpha1.ArgoCDSync, repo, revision, path, namespace string, allowEmpty bool) map[string]any {
	dest := map[string]any{}
	switch {
	case s.Destination.Name != "":
		dest["name"] = s.Destination.Name
	case s.Destination.Server != "":
		dest["server"] = s.Destination.Server
	default:
		dest["server"] = argoCDInCluster
	}
	automated := map[string]any{"prune": true, "selfHeal": true}
	if allowEmpty {
		// Automated sync refuses to prune everything unless told: a drain must.
		automated["allowEmpty"] = true
	}
	syncPolicy := map[string]any{"automated": automated}
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
// argoCDInCluster is how an Application names the cluster Argo CD runs in.
const argoCDInCluster = "https://kubernetes.default.svc"

// argoCDCentral reports whether the Applications deploy to another cluster than Argo CD's own:
// one central Argo CD for many workload clusters.
func argoCDCentral(s v1alpha1.ArgoCDSync) bool {
	return s.Destination.Name != "" && s.Destination.Name != "in-cluster" ||
		s.Destination.Server != "" && s.Destination.Server != argoCDInCluster
}

// Caveats are what the cluster's status says about deployments that work, but not as the user
// may expect, on the cluster's engine: dependsOn with Argo CD orders the child Applications only
// when Argo CD assesses Applications' health (docs/engines/argocd.md).
func Caveats(cluster *v1alpha1.WorkloadCluster, pins []Pin) []string {
	if Engine(cluster) != v1alpha1.EngineArgoCD {
		return nil
	}
	var ordered []string
	for _, p := range pins {
		if len(p.Deployment.Spec.DependsOn) > 0 {
			ordered = append(ordered, p.Deployment.Name)
		}
	}
	if len(ordered) == 0 {
		return nil
	}
	sort.Strings(ordered)
	return []string{fmt.Sprintf("dependsOn of %s becomes Argo CD sync waves, which wait for the dependencies only when Argo CD has the Application health check "+
		"(resource.customizations.health.argoproj.io_Application in argocd-cm, see docs/engines/argocd.md)", strings.Join(first(ordered, 3), ", "))}
}

func first(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("%d more", len(s)-n))
	}
	return s
}

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
