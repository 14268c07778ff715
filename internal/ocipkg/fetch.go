package ocipkg

import (
	"context"
	"errors"
	"fmt"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// Fetch pulls image (REGISTRY/REPO/PKG) at digest (sha256:..., as Resolve returned it) and
// returns the files of its single tar+gzip layer, by path relative to the package root.
//
// The registry is not trusted: the manifest must be an OCI image manifest with exactly one
// layer of media type application/vnd.oci.image.layer.v1.tar+gzip; the layer may hold only
// regular files and directories, at clean relative paths, within pkgrepo's limits (file size,
// package size uncompressed, file count); and the package must have a Kptfile. Anything else
// is an error wrapping pkgrepo.ErrInvalidPackage (pkgrepo.ErrPackageNotFound without a
// Kptfile). The manifest and the layer are checked against their digests.
func Fetch(ctx context.Context, image, digest string, opts Options) (map[string][]byte, error) {
	repo, err := parseRepository(image, opts)
	if err != nil {
		return nil, err
	}
	h, err := v1.NewHash(digest)
	if err != nil || h.Algorithm != "sha256" {
		return nil, fmt.Errorf("fetch %s: invalid digest %s: want sha256:<64 hex digits>", repo, quote(digest))
	}
	ref := repo.Digest(h.String())
	c, err := newClient(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", ref, err)
	}
	desc, err := remote.Get(ref, c.remote...)
	if err != nil {
		return nil, c.wrap("fetch", ref.String(), err)
	}
	if desc.MediaType != types.OCIManifestSchema1 {
		return nil, fmt.Errorf("fetch %s: %w: the manifest is %s, not an OCI image manifest (%s); publish the package with flotilla publish",
			ref, pkgrepo.ErrInvalidPackage, desc.MediaType, types.OCIManifestSchema1)
	}
	img, err := desc.Image()
	if err != nil {
		return nil, c.wrap("fetch", ref.String(), err)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w: the manifest does not parse: %w", ref, pkgrepo.ErrInvalidPackage, err)
	}
	if len(m.Layers) != 1 {
		return nil, fmt.Errorf("fetch %s: %w: the artifact has %d layers; a package artifact has exactly one", ref, pkgrepo.ErrInvalidPackage, len(m.Layers))
	}
	ld := m.Layers[0]
	switch {
	case ld.MediaType != types.OCILayer:
		return nil, fmt.Errorf("fetch %s: %w: the layer is %s, not %s", ref, pkgrepo.ErrInvalidPackage, ld.MediaType, types.OCILayer)
	case ld.Size < 0 || ld.Size > maxLayerSize:
		return nil, fmt.Errorf("fetch %s: %w: the layer is %d bytes compressed, more than the %d a package may have", ref, pkgrepo.ErrInvalidPackage, ld.Size, int64(maxLayerSize))
	}
	layer, err := img.LayerByDigest(ld.Digest)
	if err != nil {
		return nil, c.wrap("fetch", ref.String(), err)
	}
	// The library checks the blob against the descriptor's size and digest as it is read.
	rc, err := layer.Compressed()
	if err != nil {
		return nil, c.wrap("fetch", ref.String(), err)
	}
	defer rc.Close()
	src := &sourceReader{r: rc}
	files, err := readLayer(src)
	switch {
	case src.err != nil:
		// The download failed, or the blob does not match its digest: not the package's fault.
		return nil, c.wrap("fetch", ref.String(), src.err)
	case err != nil:
		return nil, fmt.Errorf("fetch %s: %w", ref, err)
	}
	if _, ok := files["Kptfile"]; !ok {
		return nil, fmt.Errorf("fetch %s: %w: the artifact has no Kptfile at its root: it is not a kpt package", ref, pkgrepo.ErrPackageNotFound)
	}
	return files, nil
}

// sourceReader keeps the first error of the blob download, so that a failed download is told
// apart from a malformed layer.
type sourceReader struct {
	r   io.Reader
	err error
}

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && s.err == nil {
		s.err = err
	}
	return n, err
}
