// Package render computes the deployed-packages package of a cluster from its pins. It is pure:
// no I/O, no clock, output bytes depend only on the input (sorted keys, stable names).
package render

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// Pin is one PackageDeployment resolved to an exact package revision.
type Pin struct {
	// Deployment is the PackageDeployment (spec and name are read).
	Deployment *v1alpha1.PackageDeployment
	// RepoURL is the URL the cluster's agent reads the package from (the repository's syncURL).
	RepoURL string
	// Branch is the package repository's branch.
	Branch string
	// Resolved is the revision the deployment pins.
	Resolved v1alpha1.ResolvedRevision
}

// Package is a rendered deployed-packages package.
type Package struct {
	// Files maps a path relative to the package directory to its content.
	Files map[string][]byte
	// Pins lists, sorted by deployment, what the package carries.
	Pins []v1alpha1.PublishedPin
}

// DeployedPackages renders the deployed-packages package of cluster: a Kptfile and one sync
// object per pin. Pins may come in any order; dependencies on deployments that are not pinned are
// left out, since the sync object would wait for them forever.
func DeployedPackages(cluster *v1alpha1.WorkloadCluster, pins []Pin) (Package, error) {
	sorted := append([]Pin(nil), pins...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Deployment.Name < sorted[j].Deployment.Name })

	refs := make(map[string]v1alpha1.SyncObjectReference, len(sorted))
	for _, p := range sorted {
		refs[p.Deployment.Name] = SyncObjectRef(cluster, p.Deployment)
	}

	pkgName := PackageName(cluster)
	kptfile, err := marshal(kptfile(path.Base(pkgName), cluster.Name))
	if err != nil {
		return Package{}, err
	}
	out := Package{Files: map[string][]byte{"Kptfile": kptfile}}
	for _, p := range sorted {
		obj, err := syncObject(cluster, p, refs)
		if err != nil {
			return Package{}, fmt.Errorf("deployment %s: %w", p.Deployment.Name, err)
		}
		b, err := marshal(obj)
		if err != nil {
			return Package{}, fmt.Errorf("deployment %s: %w", p.Deployment.Name, err)
		}
		out.Files[FileName(refs[p.Deployment.Name])] = b
		out.Pins = append(out.Pins, v1alpha1.PublishedPin{Deployment: p.Deployment.Name, Tag: p.Resolved.Tag})
	}
	return out, nil
}

// PackageName is the cluster's deployed-packages package name (a directory under the
// repository directory).
func PackageName(cluster *v1alpha1.WorkloadCluster) string {
	if cluster.Spec.Sync.Package != "" {
		return cluster.Spec.Sync.Package
	}
	return "deployed-packages"
}

// PackagePath joins a repository directory and a package name into the path used in tags
// (no leading slash).
func PackagePath(directory, pkg string) string {
	return strings.TrimPrefix(path.Join("/", directory, pkg), "/")
}

// FileName is the file in deployed-packages that holds a sync object.
func FileName(ref v1alpha1.SyncObjectReference) string {
	if ref.Kind == "RootSync" {
		return ref.Name + ".yaml"
	}
	return strings.ToLower(ref.Kind) + "-" + ref.Namespace + "-" + ref.Name + ".yaml"
}

func syncObject(cluster *v1alpha1.WorkloadCluster, p Pin, refs map[string]v1alpha1.SyncObjectReference) (map[string]any, error) {
	switch engine(cluster) {
	case v1alpha1.EngineConfigSync:
		return configSyncObject(cluster, p, refs), nil
	default:
		return nil, fmt.Errorf("sync engine %s is not supported yet: use ConfigSync", engine(cluster))
	}
}

func engine(cluster *v1alpha1.WorkloadCluster) v1alpha1.SyncEngine {
	if cluster.Spec.Sync.Engine == "" {
		return v1alpha1.EngineConfigSync
	}
	return cluster.Spec.Sync.Engine
}

func kptfile(name, cluster string) map[string]any {
	return map[string]any{
		"apiVersion": "kpt.dev/v1",
		"kind":       "Kptfile",
		"metadata": map[string]any{
			"name": name,
			"annotations": map[string]any{
				"config.kubernetes.io/local-config": "true",
			},
		},
		"info": map[string]any{
			"description": fmt.Sprintf("Sync objects of the packages deployed to cluster %s. Written by flotilla: edit the PackageDeployments, not these files.", cluster),
		},
	}
}

func marshal(obj map[string]any) ([]byte, error) {
	b, err := yaml.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode %v: %w", obj["kind"], err)
	}
	return b, nil
}
