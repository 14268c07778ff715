// Package image assembles flotilla's container image without a container runtime: one layer on
// an empty base with the static flotilla binary, CA certificates and a non-root user, the binary
// as the entrypoint (the install manifests pass `controller ...` as its arguments). The same
// inputs make the same bytes, so one commit always makes one image digest.
package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/x509"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/flotilla-dev/flotilla/internal/ocipkg"
)

// What the image holds and runs as.
const (
	// Name is the image's name: push it as REGISTRY/flotilla:VERSION, the name the install
	// manifests (config/manager, charts/flotilla) give the controller's image.
	Name = "flotilla"
	// Entrypoint is the binary's path in the image.
	Entrypoint = "/flotilla"
	// UID is the user (and group) the image runs as, as the install manifests' runAsUser.
	UID = 65532
	// CACertsPath is where the CA certificates are: where Go's crypto/x509 looks first on Linux.
	CACertsPath = "/etc/ssl/certs/ca-certificates.crt"
	// Source is the repository the image is built from (org.opencontainers.image.source).
	Source = "https://github.com/flotilla-dev/flotilla"
)

// OCI annotation keys the image carries as labels and manifest annotations.
const (
	LabelTitle       = "org.opencontainers.image.title"
	LabelDescription = "org.opencontainers.image.description"
	LabelVersion     = "org.opencontainers.image.version"
	LabelRevision    = "org.opencontainers.image.revision"
	LabelSource      = "org.opencontainers.image.source"
	LabelCreated     = "org.opencontainers.image.created"
	// refName names an image in an OCI layout: its tag.
	refName = "org.opencontainers.image.ref.name"
)

// Options are the image's inputs.
type Options struct {
	// Binary is the flotilla executable: a static (CGO_ENABLED=0) Linux binary for Platform.
	Binary []byte
	// CACerts is a PEM bundle of CA certificates.
	CACerts []byte
	// Platform is the binary's OS and architecture; only linux.
	Platform v1.Platform
	// Version and Revision are what the binary was stamped with (internal/buildinfo).
	Version, Revision string
	// Created is the time of every file and of the image: the commit's date, not the build's.
	Created time.Time
}

// Build assembles the image.
func Build(o Options) (v1.Image, error) {
	if err := checkBinary(o.Binary, o.Platform); err != nil {
		return nil, err
	}
	if err := checkCACerts(o.CACerts); err != nil {
		return nil, err
	}
	if o.Version == "" || o.Revision == "" {
		return nil, errors.New("the image needs the version and the revision the binary was stamped with")
	}
	created := o.Created.UTC()
	gz, err := buildLayer(rootFS(o.Binary, o.CACerts), created)
	if err != nil {
		return nil, err
	}
	layer, diffID, err := ocipkg.GzipLayer(gz)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{
		LabelTitle:       Name,
		LabelDescription: "flotilla: deploys kpt packages to fleets of Kubernetes clusters through GitOps",
		LabelVersion:     o.Version,
		LabelRevision:    o.Revision,
		LabelSource:      Source,
		LabelCreated:     created.Format(time.RFC3339),
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	if img, err = mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: types.OCILayer}); err != nil {
		return nil, err
	}
	// The whole config, replacing the one Append grew.
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: o.Platform.Architecture,
		OS:           o.Platform.OS,
		Variant:      o.Platform.Variant,
		Created:      v1.Time{Time: created},
		Config: v1.Config{
			Entrypoint: []string{Entrypoint},
			User:       fmt.Sprintf("%d:%d", UID, UID),
			Env: []string{
				"PATH=/usr/local/bin:/usr/bin:/bin",
				"SSL_CERT_FILE=" + CACertsPath,
				"HOME=/home/nonroot",
			},
			WorkingDir: "/",
			Labels:     labels,
		},
		RootFS:  v1.RootFS{Type: "layers", DiffIDs: []v1.Hash{diffID}},
		History: []v1.History{{Created: v1.Time{Time: created}, CreatedBy: "hack/image: " + Entrypoint + ", CA certificates, user nonroot (65532)"}},
	})
	if err != nil {
		return nil, err
	}
	return mutate.Annotations(img, labels).(v1.Image), nil
}

// file is one entry of the image's file system.
type file struct {
	path string
	mode int64 // permission bits; directories are the entries without data
	dir  bool
	uid  int
	data []byte
}

// rootFS is the image's file system, parents before children, in a fixed order.
func rootFS(binary, caCerts []byte) []file {
	return []file{
		{path: "etc/", mode: 0o755, dir: true},
		{path: "etc/group", mode: 0o644, data: []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", UID))},
		{path: "etc/passwd", mode: 0o644, data: []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", UID, UID))},
		{path: "etc/ssl/", mode: 0o755, dir: true},
		{path: "etc/ssl/certs/", mode: 0o755, dir: true},
		{path: CACertsPath[1:], mode: 0o644, data: caCerts},
		{path: Entrypoint[1:], mode: 0o755, data: binary},
		{path: "home/", mode: 0o755, dir: true},
		{path: "home/nonroot/", mode: 0o700, dir: true, uid: UID},
		{path: "tmp/", mode: 0o1777, dir: true},
	}
}

// buildLayer is the gzip'ed tar of files, every entry at mtime.
func buildLayer(files []file, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range files {
		h := &tar.Header{Name: f.path, Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: mtime, Format: tar.FormatPAX, Typeflag: tar.TypeReg, Size: int64(len(f.data))}
		if f.dir {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if f.uid == UID {
			h.Uname, h.Gname = "nonroot", "nonroot"
		} else {
			h.Uname, h.Gname = "root", "root"
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// machines are the ELF machines of the architectures Go builds Linux binaries for.
var machines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "arm": elf.EM_ARM, "386": elf.EM_386,
	"ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390, "riscv64": elf.EM_RISCV, "loong64": elf.EM_LOONGARCH,
}

// checkBinary refuses what would not run on an empty base image: not a Linux executable for the
// platform, or one that needs a dynamic loader (built with cgo).
func checkBinary(b []byte, p v1.Platform) error {
	if p.OS != "linux" {
		return fmt.Errorf("platform %s: the image is for linux only", p)
	}
	want, ok := machines[p.Architecture]
	if !ok {
		return fmt.Errorf("platform %s: unknown architecture", p)
	}
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("the binary is not a Linux executable (%w): build it with GOOS=linux", err)
	}
	defer f.Close()
	if f.Machine != want {
		return fmt.Errorf("the binary is for %s, not %s: build it with GOARCH=%s", f.Machine, p, p.Architecture)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return errors.New("the binary is dynamically linked (it needs a loader the image does not have): build it with CGO_ENABLED=0")
		}
	}
	return nil
}

// checkCACerts refuses a bundle without a certificate.
func checkCACerts(pem []byte) error {
	if !x509.NewCertPool().AppendCertsFromPEM(pem) {
		return errors.New("the CA certificates hold no PEM certificate")
	}
	return nil
}

// WriteLayout writes img as the only image of an OCI image layout at dir, named tag, replacing
// what dir held. crane push DIR REGISTRY/flotilla:TAG (or skopeo copy oci:DIR:TAG ...) pushes
// it.
func WriteLayout(dir string, img v1.Image, tag string) error {
	if _, err := name.NewTag(Name + ":" + tag); err != nil {
		return fmt.Errorf("tag %q: %w", tag, err)
	}
	// Next to dir, then renamed: an interrupted write leaves the previous layout whole.
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	p, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{refName: tag})); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}
