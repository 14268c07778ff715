// Package render computes the deployed-packages package of a cluster from its pins, for Config
// Sync, Argo CD or Flux. It is pure: no I/O, no clock, output bytes depend only on the input
// (sorted keys, stable names).
package render

import (
	"bytes"
	"fmt"
	"path"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/giturl"
)

// Pin is one PackageDeployment resolved to an exact package revision.
type Pin struct {
	// Deployment is the PackageDeployment (spec and name are read).
	Deployment *v1alpha1.PackageDeployment
	// RepoURL is the URL the cluster's agent reads the package from (the repository's syncURL).
	RepoURL string
	// Branch is the package repository's branch.
	Branch string
	// Resolved is the revision the deployment pins: a git tag and commit, or, with Resolved.Image,
	// an OCI artifact and its digest.
	Resolved v1alpha1.ResolvedRevision
	// Insecure lets the agent pull the OCI artifact over plain HTTP (the Repository's
	// spec.oci.insecure; written where the engine has the setting, Flux's OCIRepository).
	Insecure bool
	// Drain marks the pin of a deployment that drains (EmptyFirst): Resolved is the empty
	// package, which the engine must be allowed to sync to nothing (Argo CD's allowEmpty).
	Drain bool
}

// OCI reports whether the pin is an OCI artifact.
func (p Pin) OCI() bool { return p.Resolved.Image != "" }

// Package is a rendered deployed-packages package.
type Package struct {
	// Files maps a path relative to the package directory to its content.
	Files map[string][]byte
	// Pins lists, sorted by deployment, what the package carries.
	Pins []v1alpha1.PublishedPin
}

// AnnotationPinnedTag records, on every generated object, the package revision it pins; it lets
// flotilla read a published deployed-packages back whatever the engine.
const AnnotationPinnedTag = "flotilla.dev/pinned-tag"

// AnnotationDeployment names, on a generated object, the PackageDeployment it comes from when
// the name is too long for the flotilla.dev/deployment label (label values have at most 63
// characters, object names up to 253). Shorter names stay in the label alone, so objects
// rendered before it existed render the same.
const AnnotationDeployment = "flotilla.dev/deployment"

// pinContext is what an engine needs to render one pin.
type pinContext struct {
	cluster *v1alpha1.WorkloadCluster
	pin     Pin
	ref     v1alpha1.SyncObjectReference
	// deps are the sync objects of the pinned dependencies, sorted by name.
	deps []v1alpha1.SyncObjectReference
	// wave is the pin's depth in the dependency graph: 0 without dependencies.
	wave int
}

// DeployedPackages renders the deployed-packages package of cluster: a Kptfile and one file per
// pin holding its sync object(s). Pins may come in any order. A pin the engine does not accept
// (see Accepts) is left out, as are dependencies on deployments that are not pinned, since the
// sync object would wait for them forever; a dependency cycle is an error, and so is a repository
// URL the engine cannot read.
func DeployedPackages(cluster *v1alpha1.WorkloadCluster, pins []Pin) (Package, error) {
	sorted := make([]Pin, 0, len(pins))
	for _, p := range pins {
		if Accepts(cluster, p.Deployment) == nil {
			sorted = append(sorted, p)
		}
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Deployment.Name < sorted[j].Deployment.Name })
	render, ok := engines[Engine(cluster)]
	if !ok {
		return Package{}, fmt.Errorf("sync engine %q is not supported: use ConfigSync, ArgoCD or Flux", Engine(cluster))
	}
	if err := checkSettings(cluster); err != nil {
		return Package{}, err
	}
	refs := make(map[string]v1alpha1.SyncObjectReference, len(sorted))
	for _, p := range sorted {
		refs[p.Deployment.Name] = SyncObjectRef(cluster, p.Deployment)
	}
	waves, err := dependencyWaves(sorted)
	if err != nil {
		return Package{}, err
	}

	kptfile, err := marshal(kptfile(path.Base(PackageName(cluster)), cluster.Name))
	if err != nil {
		return Package{}, err
	}
	out := Package{Files: map[string][]byte{"Kptfile": kptfile}}
	for _, p := range sorted {
		if !p.OCI() {
			url, err := engineURL(cluster, p.RepoURL)
			if err != nil {
				return Package{}, fmt.Errorf("deployment %s, repository %s: %w", p.Deployment.Name, p.Resolved.Repository, err)
			}
			p.RepoURL = url
		}
		pc := pinContext{cluster: cluster, pin: p, ref: refs[p.Deployment.Name], wave: waves[p.Deployment.Name]}
		for _, d := range p.Deployment.Spec.DependsOn {
			if ref, ok := refs[d.Name]; ok {
				pc.deps = append(pc.deps, ref)
			}
		}
		sort.Slice(pc.deps, func(i, j int) bool { return pc.deps[i].Name < pc.deps[j].Name })
		b, err := marshal(render(pc)...)
		if err != nil {
			return Package{}, fmt.Errorf("deployment %s: %w", p.Deployment.Name, err)
		}
		out.Files[FileName(pc.ref)] = b
		out.Pins = append(out.Pins, v1alpha1.PublishedPin{Deployment: p.Deployment.Name, Tag: p.Resolved.Tag})
	}
	return out, nil
}

// engines renders the sync object(s) of one pin, per engine.
var engines = map[v1alpha1.SyncEngine]func(pinContext) []map[string]any{
	v1alpha1.EngineConfigSync: configSyncObjects,
	v1alpha1.EngineArgoCD:     argoCDObjects,
	v1alpha1.EngineFlux:       fluxObjects,
}

// checkSettings refuses engine settings of cluster that would make objects the engine refuses.
func checkSettings(cluster *v1alpha1.WorkloadCluster) error {
	if Engine(cluster) == v1alpha1.EngineFlux {
		return checkFluxSettings(cluster)
	}
	return nil
}

// engineURL is the repository address raw as the cluster's engine reads it: Flux takes only
// http(s) and ssh URLs (see fluxURL). Addresses carrying credentials are refused for every engine.
func engineURL(cluster *v1alpha1.WorkloadCluster, raw string) (string, error) {
	if err := giturl.Check(raw); err != nil {
		return "", err
	}
	if Engine(cluster) == v1alpha1.EngineFlux {
		return fluxURL(raw)
	}
	return raw, nil
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

// ClusterPackagePath is the directory cluster's deployed-packages takes in repo, its git
// Repository (as in its tags): the repository's directory and PackageName.
func ClusterPackagePath(cluster *v1alpha1.WorkloadCluster, repo *v1alpha1.Repository) string {
	return PackagePath(repo.Spec.Git.Directory, PackageName(cluster))
}

// FileName is the file in deployed-packages that holds a pin's sync object(s). Sync object names
// derive from unique deployment names, so they are unique per cluster whatever their kind.
func FileName(ref v1alpha1.SyncObjectReference) string {
	return ref.Name + ".yaml"
}

// Engine is the cluster's sync engine, ConfigSync by default.
func Engine(cluster *v1alpha1.WorkloadCluster) v1alpha1.SyncEngine {
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

// image is the OCI artifact a pin's sync objects pull, pinned by digest: REGISTRY/REPO/PKG@sha256:...
func (pc pinContext) image() string {
	return pc.pin.Resolved.Image + "@" + pc.pin.Resolved.Commit
}

// revision is what the pin's sync objects name as their revision (spec.sync.pinBy): the tag, or
// the commit the tag named when it was pinned.
func (pc pinContext) revision() string {
	if pc.cluster.Spec.Sync.PinBy == v1alpha1.PinByCommit {
		return pc.pin.Resolved.Commit
	}
	return pc.pin.Resolved.Tag
}

// metadata is the metadata every generated object carries.
func metadata(pc pinContext, name, namespace string, annotations map[string]any) map[string]any {
	if annotations == nil {
		annotations = map[string]any{}
	}
	annotations[AnnotationPinnedTag] = pc.pin.Resolved.Tag
	labels := map[string]any{"app.kubernetes.io/managed-by": "flotilla"}
	if d := pc.pin.Deployment.Name; len(validation.IsValidLabelValue(d)) == 0 {
		labels[v1alpha1.LabelDeployment] = d
	} else {
		annotations[AnnotationDeployment] = d
	}
	return map[string]any{
		"name":        name,
		"namespace":   namespace,
		"annotations": annotations,
		"labels":      labels,
	}
}

// marshal encodes objects as one YAML stream.
func marshal(objs ...map[string]any) ([]byte, error) {
	var b bytes.Buffer
	for i, obj := range objs {
		y, err := toYAML(obj)
		if err != nil {
			return nil, fmt.Errorf("encode %v: %w", obj["kind"], err)
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(y)
	}
	return b.Bytes(), nil
}
