package ocipkg

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Annotations of the manifest (github.com/opencontainers/image-spec annotations.md). Argo CD
// shows them; Flux copies them into the OCIRepository's artifact metadata.
const (
	AnnotationTitle   = "org.opencontainers.image.title"
	AnnotationVersion = "org.opencontainers.image.version"
)

// Push publishes files (paths relative to the package root, a Kptfile among them) as the
// artifact ref, REGISTRY/REPO/PKG:vN, and returns its digest.
//
// The artifact is an OCI image manifest (application/vnd.oci.image.manifest.v1+json) with
//   - a minimal image config (application/vnd.oci.image.config.v1+json): os and architecture
//     "unknown", as for any artifact no runtime runs, and rootfs naming the layer;
//   - one layer (application/vnd.oci.image.layer.v1.tar+gzip) holding the files, packed
//     deterministically (see buildLayer);
//   - annotations org.opencontainers.image.title (PKG, the last path element of the
//     repository) and org.opencontainers.image.version (vN). No creation time: the same files
//     pushed to the same PKG:vN give the same digest, wherever and whenever they are pushed.
//
// A single tar+gzip layer in an image manifest is what all three readers take: Config Sync
// flattens the image's layers (go-containerregistry's mutate.Extract), Flux extracts the first
// layer (or the one its layerSelector names) and needs it tar+gzip, and Argo CD wants exactly
// one content layer of an allowed media type, this one by default.
//
// Push never moves a tag. When ref exists and names another digest it returns an error
// wrapping ErrTagExists; when it names this very artifact (a retried publish) it writes
// nothing and returns it with AlreadyPublished set.
func Push(ctx context.Context, ref string, files map[string][]byte, opts Options) (Artifact, error) {
	tag, err := parseTag(ref, opts)
	if err != nil {
		return Artifact{}, err
	}
	if err := checkFiles(files); err != nil {
		return Artifact{}, fmt.Errorf("push %s: %w", tag, err)
	}
	img, err := packageImage(files, path.Base(tag.RepositoryStr()), tag.TagStr())
	if err != nil {
		return Artifact{}, fmt.Errorf("push %s: %w", tag, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return Artifact{}, fmt.Errorf("push %s: %w", tag, err)
	}
	a := Artifact{Image: tag.Repository.Name(), Tag: tag.TagStr(), Digest: digest.String()}
	c, err := newClient(ctx, opts)
	if err != nil {
		return Artifact{}, fmt.Errorf("push %s: %w", tag, err)
	}

	// The registry protocol has no "create only": a manifest PUT to a tag replaces whatever the
	// tag named. So this check and the write below are two requests, and a second publisher
	// of the same tag between them wins the tag without either noticing. Tag immutability
	// settings of the registry (ECR, Artifact Registry, Harbor, ...) close that window where
	// they exist; flotilla itself guards against the tag moving later, as Resolve pins the digest.
	existing, err := c.head(tag)
	switch {
	case err == nil && existing.Digest == digest:
		a.AlreadyPublished = true
		return a, nil
	case err == nil:
		return Artifact{}, fmt.Errorf("push %s: %w: it names %s; revisions are immutable: publish a new revision (the next vN) instead",
			tag, ErrTagExists, existing.Digest)
	case !isNotFound(err):
		return Artifact{}, c.wrap("push", tag.String(), err)
	}
	if err := remote.Write(tag, img, c.remote...); err != nil {
		return Artifact{}, c.wrap("push", tag.String(), err)
	}
	return a, nil
}

// GzipLayer is an OCI layer of the gzipped tar gz, byte for byte (tarball only gunzips it for the
// diff ID, which it returns too).
func GzipLayer(gz []byte) (v1.Layer, v1.Hash, error) {
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(gz)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, v1.Hash{}, err
	}
	diffID, err := layer.DiffID()
	return layer, diffID, err
}

// packageImage builds the artifact of files for package pkg at revision tag.
func packageImage(files map[string][]byte, pkg, tag string) (v1.Image, error) {
	gz, err := buildLayer(files)
	if err != nil {
		return nil, err
	}
	layer, diffID, err := GzipLayer(gz)
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	if img, err = mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: types.OCILayer}); err != nil {
		return nil, err
	}
	// The whole config, replacing the one Append grew (its history entry says nothing).
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: "unknown",
		OS:           "unknown",
		RootFS:       v1.RootFS{Type: "layers", DiffIDs: []v1.Hash{diffID}},
	})
	if err != nil {
		return nil, err
	}
	return mutate.Annotations(img, map[string]string{
		AnnotationTitle:   pkg,
		AnnotationVersion: tag,
	}).(v1.Image), nil
}
