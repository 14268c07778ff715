package render

import (
	"fmt"
	"path"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// BootstrapName is the name of the root sync object that makes a cluster sync its
// deployed-packages.
const BootstrapName = "flotilla-deployed-packages"

// Source is where a cluster's agent reads its deployed-packages from.
type Source struct {
	// RepoURL is the cluster repository's syncURL.
	RepoURL string
	// Branch is the cluster repository's branch.
	Branch string
	// Directory is the cluster repository's directory.
	Directory string
}

// Bootstrap renders the root sync object(s) of cluster: they follow the branch (no pinned
// revision) and apply the deployed-packages directory, pruning what leaves it. namespace
// overrides the engine's default namespace for them.
func Bootstrap(cluster *v1alpha1.WorkloadCluster, src Source, namespace string) ([]byte, error) {
	if err := checkSettings(cluster); err != nil {
		return nil, fmt.Errorf("cluster %s: %w", cluster.Name, err)
	}
	url, err := engineURL(cluster, src.RepoURL)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", cluster.Name, err)
	}
	src.RepoURL = url
	dir := "/" + PackagePath(src.Directory, PackageName(cluster))
	meta := func(ns string) map[string]any {
		if namespace != "" {
			ns = namespace
		}
		return map[string]any{
			"name":      BootstrapName,
			"namespace": ns,
			"labels":    map[string]any{"app.kubernetes.io/managed-by": "flotilla", "flotilla.dev/cluster": cluster.Name},
		}
	}
	switch Engine(cluster) {
	case v1alpha1.EngineConfigSync:
		return marshal(map[string]any{
			"apiVersion": configSyncAPIVersion,
			"kind":       "RootSync",
			"metadata":   meta(configSyncNamespace),
			"spec": map[string]any{
				"sourceFormat": "unstructured",
				"sourceType":   "git",
				"git":          configSyncGit(cluster, src.RepoURL, src.Branch, dir, ""),
			},
		})
	case v1alpha1.EngineArgoCD:
		s := argoCDSettings(cluster)
		app := map[string]any{
			"apiVersion": argoCDAPIVersion,
			"kind":       "Application",
			"metadata":   meta(s.Namespace),
			"spec":       argoCDSpec(s, src.RepoURL, src.Branch, path.Clean(dir[1:]), ""),
		}
		app["metadata"].(map[string]any)["finalizers"] = []any{argoCDResourcesFinalizer}
		return marshal(app)
	case v1alpha1.EngineFlux:
		s := fluxSettings(cluster)
		source := fluxGitRepository(cluster, s, src.RepoURL, map[string]any{"branch": src.Branch})
		source["metadata"] = meta(s.Namespace)
		return marshal(source, map[string]any{
			"apiVersion": fluxKustomizeAPIVersion,
			"kind":       "Kustomization",
			"metadata":   meta(s.Namespace),
			"spec":       fluxKustomizationSpec(s, BootstrapName, dir, true),
		})
	}
	return nil, fmt.Errorf("sync engine %q is not supported: use ConfigSync, ArgoCD or Flux", Engine(cluster))
}
