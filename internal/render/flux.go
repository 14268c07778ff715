package render

import (
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/giturl"
)

const (
	fluxSourceAPIVersion    = "source.toolkit.fluxcd.io/v1"
	fluxKustomizeAPIVersion = "kustomize.toolkit.fluxcd.io/v1"
)

// fluxObjects renders a GitRepository pinned to the package's tag (or its commit) and a Kustomization applying
// the package directory from it; prune follows the deletion policy, dependencies become dependsOn.
func fluxObjects(pc pinContext) []map[string]any {
	s := fluxSettings(pc.cluster)
	var source map[string]any
	if pc.pin.OCI() {
		source = fluxOCIRepository(pc, s)
	} else {
		source = fluxGitRepository(pc.cluster, s, pc.pin.RepoURL, fluxRef(pc))
	}
	source["metadata"] = metadata(pc, pc.ref.Name, pc.ref.Namespace, nil)

	dir := pc.pin.Resolved.Directory
	if pc.pin.OCI() {
		dir = "/" // the artifact's root
	}
	spec := fluxKustomizationSpec(s, pc.ref.Name, dir, pc.pin.Deployment.Spec.DeletionPolicy != v1alpha1.DeletionPolicyOrphan)
	if pc.pin.OCI() {
		spec["sourceRef"] = map[string]any{"kind": "OCIRepository", "name": pc.ref.Name}
	}
	// Ready then means the applied objects are healthy, not only applied: health feedback and
	// rollouts rely on it.
	spec["wait"] = true
	if ns := pc.pin.Deployment.Spec.Namespace; ns != "" {
		spec["targetNamespace"] = ns
	}
	if len(pc.deps) > 0 {
		var deps []any
		for _, d := range pc.deps {
			deps = append(deps, map[string]any{"name": d.Name})
		}
		spec["dependsOn"] = deps
	}
	return []map[string]any{source, {
		"apiVersion": fluxKustomizeAPIVersion,
		"kind":       "Kustomization",
		"metadata":   metadata(pc, pc.ref.Name, pc.ref.Namespace, nil),
		"spec":       spec,
	}}
}

// fluxRef is the GitRepository ref of a pin: its tag, or its commit alone (a commit takes
// precedence over every other ref field, and needs no branch).
func fluxRef(pc pinContext) map[string]any {
	if pc.cluster.Spec.Sync.PinBy == v1alpha1.PinByCommit {
		return map[string]any{"commit": pc.pin.Resolved.Commit}
	}
	return map[string]any{"tag": pc.pin.Resolved.Tag}
}

// OCILayerMediaType is the media type of the one layer of a package artifact (flotilla publish
// --oci): a tar+gzip of the package files, which Flux is told to extract.
const OCILayerMediaType = "application/vnd.oci.image.layer.v1.tar+gzip"

// fluxOCIRepository renders the OCIRepository of an OCI pin, by digest, extracting the package
// layer.
func fluxOCIRepository(pc pinContext, s v1alpha1.FluxSync) map[string]any {
	spec := map[string]any{
		"interval":      s.Interval.Duration.String(),
		"url":           "oci://" + pc.pin.Resolved.Image,
		"ref":           map[string]any{"digest": pc.pin.Resolved.Commit},
		"layerSelector": map[string]any{"mediaType": OCILayerMediaType, "operation": "extract"},
	}
	if pc.pin.Insecure {
		spec["insecure"] = true
	}
	if sr := pc.cluster.Spec.Sync.OCI.SecretRef; sr != nil {
		spec["secretRef"] = map[string]any{"name": sr.Name}
	}
	return map[string]any{"apiVersion": fluxSourceAPIVersion, "kind": "OCIRepository", "spec": spec}
}

func fluxGitRepository(cluster *v1alpha1.WorkloadCluster, s v1alpha1.FluxSync, url string, ref map[string]any) map[string]any {
	spec := map[string]any{"interval": s.Interval.Duration.String(), "url": url, "ref": ref}
	if sr := cluster.Spec.Sync.Git.SecretRef; sr != nil {
		spec["secretRef"] = map[string]any{"name": sr.Name}
	}
	return map[string]any{"apiVersion": fluxSourceAPIVersion, "kind": "GitRepository", "spec": spec}
}

func fluxKustomizationSpec(s v1alpha1.FluxSync, source, dir string, prune bool) map[string]any {
	return map[string]any{
		"interval":  s.Interval.Duration.String(),
		"sourceRef": map[string]any{"kind": "GitRepository", "name": source},
		"path":      "./" + strings.TrimPrefix(dir, "/"),
		"prune":     prune,
	}
}

// fluxSettings is the cluster's Flux settings with defaults filled in.
func fluxSettings(cluster *v1alpha1.WorkloadCluster) v1alpha1.FluxSync {
	s := v1alpha1.FluxSync{}
	if cluster.Spec.Sync.Flux != nil {
		s = *cluster.Spec.Sync.Flux
	}
	if s.Namespace == "" {
		s.Namespace = "flux-system"
	}
	if s.Interval == nil || s.Interval.Duration <= 0 {
		s.Interval = &metav1.Duration{Duration: time.Minute}
	}
	return s
}

// errFluxScheme is fluxURL's error for an address Flux's source-controller cannot read.
var errFluxScheme = errors.New("the GitRepository of Flux reads only http://, https:// and ssh:// URLs (and user@host:path, written as ssh://): give the Repository a spec.git.syncURL of that form")

// fluxURL is raw as Flux's GitRepository accepts it (spec.url must match ^(http|https|ssh)://):
// an scp-style address user@host:path becomes ssh://user@host/path, the form Flux documents for
// git hosting services. A home-relative path on a plain ssh server (host:repos/x.git) needs an
// ssh:// URL with the full path instead. git:// and file:// URLs are an error.
func fluxURL(raw string) (string, error) {
	if _, ok := giturl.SCP(raw); ok {
		host := strings.Index(raw, "@") + 1 // 0 without a user
		colon := strings.Index(raw[host:], ":")
		if j := strings.Index(raw[host:], "]:"); strings.HasPrefix(raw[host:], "[") && j >= 0 {
			// [::1]:path: the address's ':' is the one after the bracket.
			colon = j + 1
		}
		colon += host
		return "ssh://" + raw[:colon] + "/" + strings.TrimPrefix(raw[colon+1:], "/"), nil
	}
	// The CRD's pattern is case-sensitive.
	scheme, _, _ := strings.Cut(raw, "://")
	switch scheme {
	case "http", "https", "ssh":
		return raw, nil
	}
	return "", errFluxScheme
}

// checkFluxSettings refuses settings the Flux CRDs would refuse: an interval is written as Go
// prints it, and Flux's pattern has no unit below ms.
func checkFluxSettings(cluster *v1alpha1.WorkloadCluster) error {
	if d := fluxSettings(cluster).Interval.Duration; d < time.Millisecond {
		return fmt.Errorf("spec.sync.flux.interval %s is shorter than Flux accepts: use at least 1ms (Flux's default is 1m)", d)
	}
	return nil
}
