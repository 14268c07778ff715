package render

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// maxSyncObjectName is Config Sync's limit on RootSync/RepoSync names (it derives other
// resource names from them).
const maxSyncObjectName = 38

// SyncObjectName derives the sync object's name from its PackageDeployment: a readable prefix of
// the deployment's name and a hash of namespace/name, at most 38 characters. It is stable across
// upgrades and distinct for distinct deployments.
func SyncObjectName(namespace, deployment string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + deployment))
	hash := hex.EncodeToString(sum[:])[:8]
	prefix := deployment
	if max := maxSyncObjectName - len(hash) - 1; len(prefix) > max {
		prefix = prefix[:max]
	}
	prefix = strings.TrimRight(strings.ReplaceAll(prefix, ".", "-"), "-")
	if prefix == "" {
		return "pkg-" + hash
	}
	return prefix + "-" + hash
}

// SyncObjectRef is the sync object that deploys pd on cluster: for Config Sync a RootSync
// (RepoSync in spec.namespace), for Argo CD an Application, for Flux a Kustomization (its
// GitRepository has the same name and namespace).
func SyncObjectRef(cluster *v1alpha1.WorkloadCluster, pd *v1alpha1.PackageDeployment) v1alpha1.SyncObjectReference {
	name := SyncObjectName(pd.Namespace, pd.Name)
	switch Engine(cluster) {
	case v1alpha1.EngineArgoCD:
		return v1alpha1.SyncObjectReference{APIVersion: argoCDAPIVersion, Kind: "Application", Namespace: argoCDSettings(cluster).Namespace, Name: name}
	case v1alpha1.EngineFlux:
		return v1alpha1.SyncObjectReference{APIVersion: fluxKustomizeAPIVersion, Kind: "Kustomization", Namespace: fluxSettings(cluster).Namespace, Name: name}
	}
	if pd.Spec.Namespace != "" {
		return v1alpha1.SyncObjectReference{APIVersion: configSyncAPIVersion, Kind: "RepoSync", Namespace: pd.Spec.Namespace, Name: name}
	}
	return v1alpha1.SyncObjectReference{APIVersion: configSyncAPIVersion, Kind: "RootSync", Namespace: configSyncNamespace, Name: name}
}
