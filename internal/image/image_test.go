package image

import (
	"archive/tar"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/flotilla-dev/flotilla/internal/buildinfo"
	"github.com/flotilla-dev/flotilla/internal/ocitest"
)

const (
	stampedVersion  = "v1.2.3-4-gabcdef0"
	stampedRevision = "abcdef0123456789abcdef0123456789abcdef01"
	stampedDate     = "2026-01-02T03:04:05Z"
)

var platform = v1.Platform{OS: "linux", Architecture: runtime.GOARCH}

var (
	buildOnce sync.Once
	binary    []byte
	buildErr  error
)

// flotillaBinary is flotilla built as `make image` builds it: static, stamped.
func flotillaBinary(t *testing.T) []byte {
	t.Helper()
	if testing.Short() {
		t.Skip("builds flotilla")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "flotilla-image-test-")
		if err != nil {
			buildErr = err
			return
		}
		defer os.RemoveAll(dir)
		const pkg = "github.com/flotilla-dev/flotilla/internal/buildinfo"
		ldflags := fmt.Sprintf("-s -w -X %s.version=%s -X %s.commit=%s -X %s.date=%s", pkg, stampedVersion, pkg, stampedRevision, pkg, stampedDate)
		bin := filepath.Join(dir, "flotilla")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags, "-o", bin, "github.com/flotilla-dev/flotilla/cmd/flotilla")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %w\n%s", err, out)
			return
		}
		binary, buildErr = os.ReadFile(bin)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

// testCACerts is a PEM bundle with one self-signed CA.
func testCACerts(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "flotilla test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func options(t *testing.T) Options {
	created, err := time.Parse(time.RFC3339, stampedDate)
	if err != nil {
		t.Fatal(err)
	}
	return Options{Binary: flotillaBinary(t), CACerts: testCACerts(t), Platform: platform, Version: stampedVersion, Revision: stampedRevision, Created: created}
}

// TestImage pushes the image to a registry, pulls it back and checks what a container runtime
// would run: the config, the files, and the binary itself.
func TestImage(t *testing.T) {
	o := options(t)
	img, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag(ocitest.NewRegistry(t, nil) + "/fleet/flotilla:" + stampedVersion)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	if got, _ := pulled.Digest(); got != want {
		t.Errorf("pulled %s, pushed %s", got, want)
	}

	manifest, err := pulled.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if manifest.MediaType != types.OCIManifestSchema1 || manifest.Config.MediaType != types.OCIConfigJSON || len(manifest.Layers) != 1 || manifest.Layers[0].MediaType != types.OCILayer {
		t.Errorf("manifest: %s, config %s, %d layers", manifest.MediaType, manifest.Config.MediaType, len(manifest.Layers))
	}
	labels := map[string]string{
		LabelTitle:       "flotilla",
		LabelDescription: "flotilla: deploys kpt packages to fleets of Kubernetes clusters through GitOps",
		LabelVersion:     stampedVersion,
		LabelRevision:    stampedRevision,
		LabelSource:      "https://github.com/flotilla-dev/flotilla",
		LabelCreated:     stampedDate,
	}
	if diff := cmp.Diff(labels, manifest.Annotations); diff != "" {
		t.Errorf("manifest annotations (-want +got):\n%s", diff)
	}
	cfg, err := pulled.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	wantConfig := v1.Config{
		Entrypoint: []string{"/flotilla"},
		User:       "65532:65532",
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt", "HOME=/home/nonroot"},
		WorkingDir: "/",
		Labels:     labels,
	}
	if diff := cmp.Diff(wantConfig, cfg.Config); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH || cfg.Created.UTC().Format(time.RFC3339) != stampedDate {
		t.Errorf("config: %s/%s created %s", cfg.OS, cfg.Architecture, cfg.Created)
	}

	files := extract(t, pulled)
	wantFiles := map[string]string{
		"etc":                               "dir 755 0:0",
		"etc/group":                         "file 644 0:0",
		"etc/passwd":                        "file 644 0:0",
		"etc/ssl":                           "dir 755 0:0",
		"etc/ssl/certs":                     "dir 755 0:0",
		"etc/ssl/certs/ca-certificates.crt": "file 644 0:0",
		"flotilla":                          "file 755 0:0",
		"home":                              "dir 755 0:0",
		"home/nonroot":                      "dir 700 65532:65532",
		"tmp":                               "dir 1777 0:0",
	}
	got := map[string]string{}
	for p, f := range files {
		got[p] = f.kind
	}
	if diff := cmp.Diff(wantFiles, got); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if !bytes.Equal(files["etc/ssl/certs/ca-certificates.crt"].data, o.CACerts) {
		t.Error("the image's CA certificates are not the ones given")
	}
	if !strings.Contains(string(files["etc/passwd"].data), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no user 65532:\n%s", files["etc/passwd"].data)
	}
	for p, f := range files {
		if !f.modTime.Equal(o.Created) {
			t.Errorf("%s: mtime %s, want the commit's date %s", p, f.modTime, o.Created)
		}
	}

	// The binary from the layer runs, and says what it was stamped with.
	bin := filepath.Join(t.TempDir(), "flotilla")
	if err := os.WriteFile(bin, files["flotilla"].data, 0o755); err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "linux" {
		t.Skip("the binary is for linux")
	}
	out, err := exec.Command(bin, "version", "-o", "json").Output()
	if err != nil {
		t.Fatalf("flotilla version: %v", err)
	}
	var info buildinfo.Info
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if info.Version != stampedVersion || info.Commit != stampedRevision || info.Date != stampedDate {
		t.Errorf("flotilla version in the image: %+v, want %s %s %s", info, stampedVersion, stampedRevision, stampedDate)
	}
}

type entry struct {
	kind    string // "file 644 0:0"
	modTime time.Time
	data    []byte
}

// extract reads the image's file system as a container runtime lays it out.
func extract(t *testing.T, img v1.Image) map[string]entry {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	out := map[string]entry{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		kind := "file"
		if h.Typeflag == tar.TypeDir {
			kind = "dir"
		}
		out[h.Name] = entry{kind: fmt.Sprintf("%s %o %d:%d", kind, h.Mode, h.Uid, h.Gid), modTime: h.ModTime, data: data}
	}
}

// TestImageIsReproducible: one commit, one digest, and an OCI layout that names it by its tag.
func TestImageIsReproducible(t *testing.T) {
	o := options(t)
	a, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	da, _ := a.Digest()
	if db, _ := b.Digest(); da != db {
		t.Errorf("two builds of the same inputs: %s and %s", da, db)
	}

	dir := filepath.Join(t.TempDir(), "image")
	for range 2 { // the second write replaces the first
		if err := WriteLayout(dir, a, stampedVersion); err != nil {
			t.Fatal(err)
		}
	}
	index, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].Digest != da || m.Manifests[0].Annotations[refName] != stampedVersion {
		t.Fatalf("layout index: %+v", m.Manifests)
	}
	fromLayout, err := index.Image(da)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(fromLayout); err != nil {
		t.Error(err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(dir)); len(entries) != 1 {
		t.Errorf("left next to the layout: %v", entries)
	}
}

func TestBuildRefuses(t *testing.T) {
	o := options(t)
	other := "arm64"
	if runtime.GOARCH == "arm64" {
		other = "amd64"
	}
	for _, tc := range []struct {
		name   string
		change func(o *Options)
		want   string
	}{
		{"not an executable", func(o *Options) { o.Binary = []byte("#!/bin/sh\necho flotilla\n") }, "the binary is not a Linux executable"},
		{"another architecture", func(o *Options) { o.Platform.Architecture = other }, "build it with GOARCH=" + other},
		{"not linux", func(o *Options) { o.Platform.OS = "darwin" }, "the image is for linux only"},
		{"no certificates", func(o *Options) { o.CACerts = []byte("# nothing here\n") }, "the CA certificates hold no PEM certificate"},
		{"no version", func(o *Options) { o.Version = "" }, "the version and the revision"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := o
			tc.change(&o)
			if _, err := Build(o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
	if err := WriteLayout(filepath.Join(t.TempDir(), "image"), nil, "v1+build"); err == nil || !strings.Contains(err.Error(), `tag "v1+build"`) {
		t.Errorf("WriteLayout with tag v1+build: %v", err)
	}
}

// TestBuildRefusesDynamicBinaries: a cgo binary needs a loader the image does not have.
func TestBuildRefusesDynamicBinaries(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs a Linux executable")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip(err)
	}
	b, err := os.ReadFile(sh)
	if err != nil {
		t.Fatal(err)
	}
	err = checkBinary(b, platform)
	if err == nil {
		t.Skipf("%s is static", sh)
	}
	if !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("err = %v, want the advice to build with CGO_ENABLED=0", err)
	}
}
