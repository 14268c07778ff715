package render

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

const (
	// maxSyncObjectName is Config Sync's limit on RootSync/RepoSync names (it derives other
	// resource names from them).
	maxSyncObjectName = 38
	// maxRepoSyncNameAndNamespace bounds a RepoSync's name and namespace together: Config Sync
	// names its reconciler Deployment ns-reconciler-<namespace>-<name>-<len(name)>, at most 63
	// characters.
	maxRepoSyncNameAndNamespace = 45
	// nameHash is how many hex digits of the hash every sync object name keeps: they make names
	// unique, so no shortening drops them.
	nameHash = 8
	// MaxRepoSyncNamespace is the longest namespace a RepoSync of flotilla fits in: its name is
	// then the hash alone.
	MaxRepoSyncNamespace = maxRepoSyncNameAndNamespace - nameHash
)

// ErrNotAccepted is wrapped by Accepts' errors.
var ErrNotAccepted = errors.New("the cluster's sync engine cannot deploy this PackageDeployment")

// SyncObjectName derives the sync object's name from its PackageDeployment: a readable prefix of
// the deployment's name and a hash of namespace/name, at most 38 characters. It is stable across
// upgrades and distinct for distinct deployments.
func SyncObjectName(namespace, deployment string) string {
	return syncObjectName(namespace, deployment, maxSyncObjectName)
}

// syncObjectName is SyncObjectName within limit characters (at least nameHash). A lower limit
// only shortens the readable prefix, so a name that already fits limit comes out unchanged: a
// sync object is never renamed (which would redeploy its workloads) by a tighter limit.
func syncObjectName(namespace, deployment string, limit int) string {
	sum := sha256.Sum256([]byte(namespace + "/" + deployment))
	hash := hex.EncodeToString(sum[:])[:nameHash]
	prefix := deployment
	if room := limit - len(hash) - 1; len(prefix) > room {
		prefix = prefix[:max(room, 0)]
	}
	prefix = strings.TrimRight(strings.ReplaceAll(prefix, ".", "-"), "-")
	switch {
	case prefix != "":
		return prefix + "-" + hash
	case len("pkg-")+len(hash) <= limit:
		return "pkg-" + hash
	}
	return hash
}

// WorkloadKinds are the kinds flotilla writes to workload clusters (the sync objects and Flux
// sources of every engine), all namespaced: clients of workload clusters map them without
// asking the API server's discovery.
func WorkloadKinds() []schema.GroupVersionKind {
	var kinds []schema.GroupVersionKind
	for apiVersion, names := range map[string][]string{
		configSyncAPIVersion:    {"RootSync", "RepoSync"},
		argoCDAPIVersion:        {"Application"},
		fluxKustomizeAPIVersion: {"Kustomization"},
		fluxSourceAPIVersion:    {"GitRepository", "OCIRepository"},
	} {
		for _, kind := range names {
			kinds = append(kinds, schema.FromAPIVersionAndKind(apiVersion, kind))
		}
	}
	return kinds
}

// SyncObjectRef is the sync object that deploys pd on cluster: for Config Sync a RootSync
// (RepoSync in spec.namespace, its name short enough for Config Sync's reconciler name), for
// Argo CD an Application, for Flux a Kustomization (its GitRepository has the same name and
// namespace).
func SyncObjectRef(cluster *v1alpha1.WorkloadCluster, pd *v1alpha1.PackageDeployment) v1alpha1.SyncObjectReference {
	name := SyncObjectName(pd.Namespace, pd.Name)
	switch Engine(cluster) {
	case v1alpha1.EngineArgoCD:
		return v1alpha1.SyncObjectReference{APIVersion: argoCDAPIVersion, Kind: "Application", Namespace: argoCDSettings(cluster).Namespace, Name: name}
	case v1alpha1.EngineFlux:
		return v1alpha1.SyncObjectReference{APIVersion: fluxKustomizeAPIVersion, Kind: "Kustomization", Namespace: fluxSettings(cluster).Namespace, Name: name}
	}
	if ns := pd.Spec.Namespace; ns != "" {
		limit := max(nameHash, min(maxSyncObjectName, maxRepoSyncNameAndNamespace-len(ns)))
		return v1alpha1.SyncObjectReference{APIVersion: configSyncAPIVersion, Kind: "RepoSync", Namespace: ns, Name: syncObjectName(pd.Namespace, pd.Name, limit)}
	}
	return v1alpha1.SyncObjectReference{APIVersion: configSyncAPIVersion, Kind: "RootSync", Namespace: configSyncNamespace, Name: name}
}

// Accepts returns why cluster's sync engine cannot deploy pd (wrapping ErrNotAccepted), nil when
// it can. DeployedPackages leaves such a deployment out; its own status says why. These are
// facts of one engine, so they are checked here and not in the PackageDeployment's schema: the
// same deployment is valid on a Flux or Argo CD cluster.
func Accepts(cluster *v1alpha1.WorkloadCluster, pd *v1alpha1.PackageDeployment) error {
	ns := pd.Spec.Namespace
	if Engine(cluster) != v1alpha1.EngineConfigSync || ns == "" {
		return nil
	}
	switch {
	case ns == configSyncNamespace:
		return fmt.Errorf("%w: Config Sync takes no RepoSync in %s, which holds its RootSyncs; remove spec.namespace to deploy the package cluster-wide with a RootSync, or choose another namespace",
			ErrNotAccepted, configSyncNamespace)
	case len(ns) > MaxRepoSyncNamespace:
		return fmt.Errorf("%w: namespace %s has %d characters, too many for a Config Sync RepoSync (its reconciler, ns-reconciler-<namespace>-<name>-<length>, must fit 63 characters and flotilla's names need 8 of them); use a namespace of at most %d characters",
			ErrNotAccepted, ns, len(ns), MaxRepoSyncNamespace)
	}
	return nil
}
