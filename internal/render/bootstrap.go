package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"strings"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// BootstrapName is the name of the root sync object that makes a cluster sync its
// deployed-packages.
const BootstrapName = "flotilla-deployed-packages"

// RootName is the name of cluster's root sync object: BootstrapName, except for Argo CD when the
// Applications go to a central Argo CD (spec.sync.argoCD.destination names another cluster), where
// the roots of many clusters share one namespace: flotilla-<cluster>-<hash>, unique per cluster.
func RootName(cluster *v1alpha1.WorkloadCluster) string {
	if Engine(cluster) != v1alpha1.EngineArgoCD || !argoCDCentral(argoCDSettings(cluster)) {
		return BootstrapName
	}
	sum := sha256.Sum256([]byte("root\x00" + cluster.Namespace + "/" + cluster.Name))
	hash := hex.EncodeToString(sum[:])[:nameHash]
	prefix := "flotilla-" + cluster.Name
	if room := maxSyncObjectName - len(hash) - 1; len(prefix) > room {
		prefix = prefix[:room]
	}
	return strings.TrimRight(strings.ReplaceAll(prefix, ".", "-"), "-") + "-" + hash
}

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
			"name":      RootName(cluster),
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
			"spec":       argoCDSpec(s, src.RepoURL, src.Branch, path.Clean(dir[1:]), "", false),
		}
		// The root applies Applications: into Argo CD's own namespace of Argo CD's own cluster,
		// whatever cluster the child Applications deploy to.
		app["spec"].(map[string]any)["destination"] = map[string]any{"server": argoCDInCluster, "namespace": s.Namespace}
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
