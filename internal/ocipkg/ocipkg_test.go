package ocipkg

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/flotilla-dev/flotilla/internal/ocitest"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// newTLSRegistry serves an in-memory registry over https and returns its host and the PEM of
// its certificate.
func newTLSRegistry(t *testing.T) (string, []byte) {
	t.Helper()
	srv := httptest.NewUnstartedServer(ocitest.Handler())
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusted-certificate case fails handshakes
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return strings.TrimPrefix(srv.URL, "https://"), ca
}

func pkgFiles(version string) map[string][]byte {
	return map[string][]byte{
		"Kptfile":         []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: web\n"),
		"deploy.yaml":     []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels:\n    version: " + version + "\n"),
		"sub/dir/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n"),
	}
}

func mustPush(t *testing.T, ref string, files map[string][]byte, opts Options) Artifact {
	t.Helper()
	a, err := Push(context.Background(), ref, files, opts)
	if err != nil {
		t.Fatalf("Push(%s): %v", ref, err)
	}
	return a
}

func TestPushResolveFetch(t *testing.T) {
	plain := ocitest.NewRegistry(t, nil)
	tlsHost, ca := newTLSRegistry(t)
	for _, reg := range []struct {
		name string
		host string
		opts Options
	}{
		{"plain http", plain, Options{Insecure: true}},
		{"https with CA bundle", tlsHost, Options{CABundle: ca}},
	} {
		t.Run(reg.name, func(t *testing.T) {
			ctx := context.Background()
			image := reg.host + "/team/web"
			pushed := map[int]Artifact{
				1: mustPush(t, image+":v1", pkgFiles("1"), reg.opts),
				2: mustPush(t, image+":v2", pkgFiles("2"), reg.opts),
			}
			if pushed[1].Digest == pushed[2].Digest {
				t.Fatal("different files, same digest")
			}
			if diff := cmp.Diff(Artifact{Image: image, Tag: "v1", Digest: pushed[1].Digest}, pushed[1]); diff != "" {
				t.Errorf("Push (-want +got):\n%s", diff)
			}
			for _, tc := range []struct {
				revision string
				want     int
			}{
				{"latest", 2},
				{"v1", 1},
				{"v2", 2},
			} {
				rev, err := Resolve(ctx, reg.host+"/team", "web", tc.revision, reg.opts)
				if err != nil {
					t.Fatalf("Resolve(%s): %v", tc.revision, err)
				}
				want := Revision{Number: tc.want, Tag: fmt.Sprintf("v%d", tc.want), Image: image, Digest: pushed[tc.want].Digest}
				if diff := cmp.Diff(want, rev); diff != "" {
					t.Errorf("Resolve(%s) (-want +got):\n%s", tc.revision, diff)
				}
				files, err := Fetch(ctx, rev.Image, rev.Digest, reg.opts)
				if err != nil {
					t.Fatalf("Fetch(%s): %v", tc.revision, err)
				}
				if diff := cmp.Diff(pkgFiles(fmt.Sprint(tc.want)), files); diff != "" {
					t.Errorf("Fetch(%s) (-want +got):\n%s", tc.revision, diff)
				}
			}
		})
	}
}

func TestSameFilesSameDigest(t *testing.T) {
	host := ocitest.NewRegistry(t, nil)
	opts := Options{Insecure: true}
	a := mustPush(t, host+"/team-a/web:v1", pkgFiles("1"), opts)
	// Another registry path, same package name and revision: the same artifact.
	b := mustPush(t, ocitest.NewRegistry(t, nil)+"/team-b/web:v1", pkgFiles("1"), opts)
	if a.Digest != b.Digest {
		t.Errorf("same files, digests %s and %s", a.Digest, b.Digest)
	}
	// Publishing again is a no-op, not an error.
	again := mustPush(t, host+"/team-a/web:v1", pkgFiles("1"), opts)
	if diff := cmp.Diff(Artifact{Image: host + "/team-a/web", Tag: "v1", Digest: a.Digest, AlreadyPublished: true}, again); diff != "" {
		t.Errorf("re-push (-want +got):\n%s", diff)
	}
	changed := pkgFiles("1")
	changed["deploy.yaml"] = append(changed["deploy.yaml"], '\n')
	if c := mustPush(t, host+"/team-a/web:v2", changed, opts); c.Digest == a.Digest {
		t.Error("a changed file kept the digest")
	}
}

func TestPushRefusesExistingTag(t *testing.T) {
	host := ocitest.NewRegistry(t, nil)
	opts := Options{Insecure: true}
	first := mustPush(t, host+"/team/web:v1", pkgFiles("1"), opts)

	_, err := Push(context.Background(), host+"/team/web:v1", pkgFiles("other"), opts)
	if !errors.Is(err, ErrTagExists) || !errors.Is(err, pkgrepo.ErrTagExists) {
		t.Fatalf("push over v1: err = %v, want ErrTagExists", err)
	}
	for _, s := range []string{host + "/team/web:v1", first.Digest, "publish a new revision"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
	rev, err := Resolve(context.Background(), host+"/team", "web", "v1", opts)
	if err != nil {
		t.Fatal(err)
	}
	if rev.Digest != first.Digest {
		t.Errorf("v1 moved from %s to %s", first.Digest, rev.Digest)
	}
}

func TestPushRefusesInvalidInput(t *testing.T) {
	files := pkgFiles("1")
	for _, tc := range []struct {
		name  string
		ref   string
		files map[string][]byte
		want  string
	}{
		{"no tag", "localhost:5000/team/web", files, "has no tag"},
		{"latest", "localhost:5000/team/web:latest", files, `tag "latest" of localhost:5000/team/web is not a revision: write REGISTRY/REPO/PKG:vN`},
		{"v0", "localhost:5000/team/web:v0", files, "not a revision"},
		{"leading zero", "localhost:5000/team/web:v01", files, "not a revision"},
		{"no v", "localhost:5000/team/web:1", files, "not a revision"},
		{"semver", "localhost:5000/team/web:v1.2.0", files, "not a revision"},
		{"no registry", "team/web:v1", files, "invalid OCI repository"},
		{"uppercase", "localhost:5000/team/Web:v1", files, "invalid OCI repository"},
		{"scheme", "https://localhost:5000/team/web:v1", files, "without a scheme or credentials"},
		{"userinfo", "bob:s3cret@localhost:5000/team/web:v1", files, "without a scheme or credentials"},
		{"digest", "localhost:5000/team/web@sha256:" + strings.Repeat("a", 64), files, "without a scheme or credentials"},
		{"dot-dot repository", "localhost:5000/team/../web:v1", files, "path elements are not names"},
		{"no Kptfile", "localhost:5000/team/web:v1", map[string][]byte{"a.yaml": nil}, "no Kptfile"},
		{"dot-dot", "localhost:5000/team/web:v1", with(files, "../x", "x"), `"../x" escapes the package`},
		{"absolute", "localhost:5000/team/web:v1", with(files, "/etc/x", "x"), "absolute path"},
		{"unclean", "localhost:5000/team/web:v1", with(files, "a//b", "x"), "not a clean path"},
		{".git", "localhost:5000/team/web:v1", with(files, ".git/config", "x"), "inside .git"},
		{"file and directory", "localhost:5000/team/web:v1", with(files, "sub", "x"), `"sub" is both a file and a directory`},
		{"big file", "localhost:5000/team/web:v1", with(files, "big", strings.Repeat("x", maxFileSize+1)), "more than the 8388608"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Nothing listens on localhost:5000: each is refused before any request.
			_, err := Push(context.Background(), tc.ref, tc.files, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to say %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}

func with(files map[string][]byte, name, data string) map[string][]byte {
	out := map[string][]byte{name: []byte(data)}
	for k, v := range files {
		out[k] = v
	}
	return out
}

func TestResolveIgnoresOtherTags(t *testing.T) {
	host := ocitest.NewRegistry(t, nil)
	opts := Options{Insecure: true}
	mustPush(t, host+"/team/web:v1", pkgFiles("1"), opts)
	v3 := mustPush(t, host+"/team/web:v3", pkgFiles("3"), opts)
	// Tags flotilla never writes, on other content: none is a revision.
	other, err := packageImage(pkgFiles("9"), "web", "latest")
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range []string{"latest", "v10-rc1", "v010", "v11.0", "12"} {
		if err := remote.Write(mustRef(t, host+"/team/web:"+tag), other); err != nil {
			t.Fatal(err)
		}
	}

	rev, err := Resolve(context.Background(), host+"/team", "web", "latest", opts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Revision{Number: 3, Tag: "v3", Image: host + "/team/web", Digest: v3.Digest}, rev); diff != "" {
		t.Errorf("latest (-want +got):\n%s", diff)
	}

	_, err = Resolve(context.Background(), host+"/team", "web", "v2", opts)
	if !errors.Is(err, pkgrepo.ErrRevisionNotFound) || errors.Is(err, pkgrepo.ErrPackageNotFound) {
		t.Fatalf("v2: err = %v, want ErrRevisionNotFound only", err)
	}
	if !strings.HasSuffix(err.Error(), "the package has v1, v3") {
		t.Errorf("v2: error %q does not list v1, v3", err)
	}
}

func TestResolveMissingPackage(t *testing.T) {
	host := ocitest.NewRegistry(t, nil)
	opts := Options{Insecure: true}
	for _, pkg := range []string{"nothing", "only-latest"} {
		if pkg == "only-latest" {
			img, err := packageImage(pkgFiles("1"), pkg, "latest")
			if err != nil {
				t.Fatal(err)
			}
			if err := remote.Write(mustRef(t, host+"/team/only-latest:latest"), img); err != nil {
				t.Fatal(err)
			}
		}
		for _, revision := range []string{"latest", "v1"} {
			_, err := Resolve(context.Background(), host+"/team", pkg, revision, opts)
			if !errors.Is(err, pkgrepo.ErrRevisionNotFound) || !errors.Is(err, pkgrepo.ErrPackageNotFound) {
				t.Errorf("%s %s: err = %v, want ErrRevisionNotFound and ErrPackageNotFound", pkg, revision, err)
			} else if !strings.Contains(err.Error(), "no published revision") {
				t.Errorf("%s %s: error %q does not say there is no revision", pkg, revision, err)
			}
		}
	}
	if _, err := Resolve(context.Background(), host+"/team", "../web", "v1", opts); err == nil || !strings.Contains(err.Error(), "path elements are not names") {
		t.Errorf("package ../web: err = %v", err)
	}
	for _, revision := range []string{"v0", "3", "", "V1"} {
		if _, err := Resolve(context.Background(), host+"/team", "web", revision, opts); err == nil || !strings.Contains(err.Error(), "invalid revision") {
			t.Errorf("revision %q: err = %v, want invalid revision", revision, err)
		}
	}
}

// TestNoHEAD: Push and Resolve still work with a registry that refuses HEAD on manifests,
// through GET. (The library's own push needs HEAD: only the first push goes without.)
func TestNoHEAD(t *testing.T) {
	var refuseHEAD atomic.Bool
	host := ocitest.NewRegistry(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if refuseHEAD.Load() && r.Method == http.MethodHead && strings.Contains(r.URL.Path, "/manifests/") {
				http.Error(w, "", http.StatusMethodNotAllowed)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	opts := Options{Insecure: true}
	a := mustPush(t, host+"/team/web:v1", pkgFiles("1"), opts)
	refuseHEAD.Store(true)
	if _, err := Push(context.Background(), host+"/team/web:v1", pkgFiles("2"), opts); !errors.Is(err, ErrTagExists) {
		t.Errorf("push over v1: err = %v, want ErrTagExists", err)
	}
	rev, err := Resolve(context.Background(), host+"/team", "web", "v1", opts)
	if err != nil || rev.Digest != a.Digest {
		t.Errorf("Resolve = %+v, %v; want digest %s", rev, err, a.Digest)
	}
}

// entry is one tar entry of a crafted layer.
type entry struct {
	name     string
	typeflag byte
	data     string
	size     int // zeros, when data is empty
	linkname string
}

func tarOf(t *testing.T, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		typeflag := e.typeflag
		if typeflag == 0 {
			typeflag = tar.TypeReg
		}
		data := []byte(e.data)
		if e.size > 0 {
			data = make([]byte, e.size)
		}
		hdr := &tar.Header{Name: e.name, Typeflag: typeflag, Mode: 0o644, Linkname: e.linkname}
		if typeflag == tar.TypeReg {
			hdr.Size = int64(len(data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if typeflag == tar.TypeReg {
			if _, err := tw.Write(data); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// craftedImage is an OCI image manifest with one layer per tarball, each of media type mt;
// the tarball helpers gzip them.
func craftedImage(t *testing.T, mt types.MediaType, tars ...[]byte) v1.Image {
	t.Helper()
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	for _, b := range tars {
		layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(b)), nil
		}, tarball.WithMediaType(mt))
		if err != nil {
			t.Fatal(err)
		}
		if img, err = mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: mt}); err != nil {
			t.Fatal(err)
		}
	}
	return img
}

func TestFetchRefusesHostileArtifacts(t *testing.T) {
	host := ocitest.NewRegistry(t, nil)
	kptfile := entry{name: "Kptfile", data: "kind: Kptfile\n"}
	many := []entry{kptfile}
	for i := range maxPackageFiles {
		many = append(many, entry{name: fmt.Sprintf("f%d.yaml", i), data: "x"})
	}
	huge := []entry{kptfile}
	for i := range maxPackageSize/maxFileSize + 1 {
		huge = append(huge, entry{name: fmt.Sprintf("f%d", i), size: maxFileSize})
	}
	ok := tarOf(t, []entry{kptfile})
	for _, tc := range []struct {
		name string
		img  func() v1.Image
		want string
		kind error
	}{
		{"dot-dot", layerOf(t, kptfile, entry{name: "../x", data: "x"}), `"../x" escapes the package`, pkgrepo.ErrInvalidPackage},
		{"nested dot-dot", layerOf(t, kptfile, entry{name: "a/../../x", data: "x"}), "escapes the package", pkgrepo.ErrInvalidPackage},
		{"dot-dot directory", layerOf(t, kptfile, entry{name: "../d/", typeflag: tar.TypeDir}), "escapes the package", pkgrepo.ErrInvalidPackage},
		{"absolute", layerOf(t, kptfile, entry{name: "/etc/cron.d/x", data: "x"}), "is an absolute path", pkgrepo.ErrInvalidPackage},
		{"symlink", layerOf(t, kptfile, entry{name: "passwd", typeflag: tar.TypeSymlink, linkname: "/etc/passwd"}), `"passwd" is a link`, pkgrepo.ErrInvalidPackage},
		{"hard link", layerOf(t, kptfile, entry{name: "k", typeflag: tar.TypeLink, linkname: "Kptfile"}), `"k" is a link`, pkgrepo.ErrInvalidPackage},
		{"device", layerOf(t, kptfile, entry{name: "null", typeflag: tar.TypeChar}), "is a device or pipe", pkgrepo.ErrInvalidPackage},
		{"fifo", layerOf(t, kptfile, entry{name: "p", typeflag: tar.TypeFifo}), "is a device or pipe", pkgrepo.ErrInvalidPackage},
		{"duplicate", layerOf(t, kptfile, kptfile), `"Kptfile" appears twice`, pkgrepo.ErrInvalidPackage},
		{"file and directory", layerOf(t, kptfile, entry{name: "a", data: "x"}, entry{name: "a/b", data: "x"}), `"a" is both a file and a directory`, pkgrepo.ErrInvalidPackage},
		{"oversized file", layerOf(t, kptfile, entry{name: "big", size: maxFileSize + 1}), `"big" is 8388609 bytes, more than the 8388608`, pkgrepo.ErrInvalidPackage},
		{"oversized package", layerOf(t, huge...), "the package is more than 67108864 bytes uncompressed", pkgrepo.ErrInvalidPackage},
		{"too many files", layerOf(t, many...), "more than 10000 files", pkgrepo.ErrInvalidPackage},
		{"no Kptfile", layerOf(t, entry{name: "a.yaml", data: "x"}), "no Kptfile", pkgrepo.ErrPackageNotFound},
		{"two layers", func() v1.Image { return craftedImage(t, types.OCILayer, ok, ok) }, "the artifact has 2 layers", pkgrepo.ErrInvalidPackage},
		{"no layer", func() v1.Image { return craftedImage(t, types.OCILayer) }, "the artifact has 0 layers", pkgrepo.ErrInvalidPackage},
		{"docker layer", func() v1.Image { return craftedImage(t, types.DockerLayer, ok) }, "the layer is application/vnd.docker.image.rootfs.diff.tar.gzip, not application/vnd.oci.image.layer.v1.tar+gzip", pkgrepo.ErrInvalidPackage},
		{"zstd layer", func() v1.Image { return craftedImage(t, types.OCILayerZStd, ok) }, "not application/vnd.oci.image.layer.v1.tar+gzip", pkgrepo.ErrInvalidPackage},
		{"docker manifest", func() v1.Image {
			return mutate.MediaType(craftedImage(t, types.OCILayer, ok), types.DockerManifestSchema2)
		}, "not an OCI image manifest", pkgrepo.ErrInvalidPackage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			image := host + "/crafted/" + strings.ToLower(strings.ReplaceAll(tc.name, " ", "-"))
			img := tc.img()
			if err := remote.Write(mustRef(t, image+":v1"), img); err != nil {
				t.Fatal(err)
			}
			digest, err := img.Digest()
			if err != nil {
				t.Fatal(err)
			}
			files, err := Fetch(context.Background(), image, digest.String(), Options{Insecure: true})
			if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Fetch = %d files, %v; want an error wrapping %v that says %q", len(files), err, tc.kind, tc.want)
			}
		})
	}

	t.Run("index", func(t *testing.T) {
		idx := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: craftedImage(t, types.OCILayer, ok)})
		ref := mustRef(t, host+"/crafted/index:v1")
		if err := remote.WriteIndex(ref, idx); err != nil {
			t.Fatal(err)
		}
		digest, err := idx.Digest()
		if err != nil {
			t.Fatal(err)
		}
		_, err = Fetch(context.Background(), host+"/crafted/index", digest.String(), Options{Insecure: true})
		if !errors.Is(err, pkgrepo.ErrInvalidPackage) || !strings.Contains(err.Error(), "not an OCI image manifest") {
			t.Fatalf("Fetch(index) = %v", err)
		}
	})

	t.Run("unknown digest", func(t *testing.T) {
		_, err := Fetch(context.Background(), host+"/crafted/dot-dot", "sha256:"+strings.Repeat("0", 64), Options{Insecure: true})
		if !errors.Is(err, pkgrepo.ErrRevisionNotFound) {
			t.Fatalf("Fetch(unknown digest) = %v, want ErrRevisionNotFound", err)
		}
	})

	t.Run("invalid digest", func(t *testing.T) {
		_, err := Fetch(context.Background(), host+"/crafted/dot-dot", "v1", Options{Insecure: true})
		if err == nil || !strings.Contains(err.Error(), "invalid digest") {
			t.Fatalf("Fetch(v1) = %v, want invalid digest", err)
		}
	})
}

func layerOf(t *testing.T, entries ...entry) func() v1.Image {
	return func() v1.Image { return craftedImage(t, types.OCILayer, tarOf(t, entries)) }
}

// TestArtifactLayout pins what Config Sync, Flux and Argo CD read: the manifest, the config and
// the layer's entries. It also reads the image as Config Sync does, flattened by mutate.Extract.
func TestArtifactLayout(t *testing.T) {
	host := ocitest.NewRegistry(t, nil)
	a := mustPush(t, host+"/team/web:v7", pkgFiles("7"), Options{Insecure: true})
	ref := mustRef(t, a.Image+"@"+a.Digest)
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Layers) != 1 {
		t.Fatalf("%d layers", len(m.Layers))
	}
	got := map[string]any{
		"mediaType":       m.MediaType,
		"config":          m.Config.MediaType,
		"layer":           m.Layers[0].MediaType,
		"annotations":     m.Annotations,
		"layerAnnotation": m.Layers[0].Annotations,
	}
	want := map[string]any{
		"mediaType":       types.OCIManifestSchema1,
		"config":          types.OCIConfigJSON,
		"layer":           types.OCILayer,
		"annotations":     map[string]string{AnnotationTitle: "web", AnnotationVersion: "v7"},
		"layerAnnotation": map[string]string(nil),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("manifest (-want +got):\n%s", diff)
	}

	raw, err := img.RawConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	layer, err := img.LayerByDigest(m.Layers[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	id, err := layer.DiffID()
	if err != nil {
		t.Fatal(err)
	}
	wantCfg := map[string]any{
		"architecture": "unknown",
		"os":           "unknown",
		"created":      "0001-01-01T00:00:00Z",
		"config":       map[string]any{},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []any{id.String()}},
	}
	if diff := cmp.Diff(wantCfg, cfg); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}

	// The layer's own entries.
	type hdr struct {
		Name     string
		Type     byte
		Mode     int64
		UID, GID int
		Uname    string
		ModTime  int64
	}
	var hdrs []hdr
	rc, err := layer.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		hdrs = append(hdrs, hdr{h.Name, h.Typeflag, h.Mode, h.Uid, h.Gid, h.Uname, h.ModTime.Unix()})
	}
	wantHdrs := []hdr{
		{Name: "Kptfile", Type: tar.TypeReg, Mode: 0o644},
		{Name: "deploy.yaml", Type: tar.TypeReg, Mode: 0o644},
		{Name: "sub/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "sub/dir/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "sub/dir/cm.yaml", Type: tar.TypeReg, Mode: 0o644},
	}
	if diff := cmp.Diff(wantHdrs, hdrs); diff != "" {
		t.Errorf("layer entries (-want +got):\n%s", diff)
	}

	// Flattened as Config Sync reads it.
	files := map[string][]byte{}
	flat := mutate.Extract(img)
	defer flat.Close()
	tr = tar.NewReader(flat)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if files[h.Name], err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
	if diff := cmp.Diff(pkgFiles("7"), files); diff != "" {
		t.Errorf("flattened files (-want +got):\n%s", diff)
	}
}

func TestBasicAuth(t *testing.T) {
	const user, password = "robot", "hunter2-very-secret"
	host := ocitest.NewRegistry(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != user || p != password {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				// A careless registry that echoes what it was sent.
				http.Error(w, "denied: "+r.Header.Get("Authorization"), http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	good := Options{Username: user, Password: password, Insecure: true}
	a := mustPush(t, host+"/team/web:v1", pkgFiles("1"), good)
	rev, err := Resolve(context.Background(), host+"/team", "web", "latest", good)
	if err != nil || rev.Digest != a.Digest {
		t.Fatalf("Resolve = %+v, %v", rev, err)
	}
	if _, err := Fetch(context.Background(), rev.Image, rev.Digest, good); err != nil {
		t.Fatal(err)
	}

	const wrong = "wrong-password-42"
	for _, opts := range []Options{
		{Username: user, Password: wrong, Insecure: true},
		{Insecure: true},
	} {
		calls := map[string]error{}
		_, calls["push"] = Push(context.Background(), host+"/team/web:v2", pkgFiles("2"), opts)
		_, calls["resolve"] = Resolve(context.Background(), host+"/team", "web", "latest", opts)
		_, calls["fetch"] = Fetch(context.Background(), rev.Image, rev.Digest, opts)
		for call, err := range calls {
			if !errors.Is(err, pkgrepo.ErrAuthentication) {
				t.Errorf("%s with %v: err = %v, want ErrAuthentication", call, opts, err)
				continue
			}
			msg := err.Error()
			for _, secret := range []string{wrong, password, base64.StdEncoding.EncodeToString([]byte(user + ":" + wrong))} {
				if strings.Contains(msg, secret) {
					t.Errorf("%s: the error shows a credential: %s", call, msg)
				}
			}
			// The library error that holds the echoed credential must not be reachable either.
			for e := errors.Unwrap(err); e != nil; e = errors.Unwrap(e) {
				if strings.Contains(e.Error(), wrong) {
					t.Errorf("%s: a wrapped error shows the password: %s", call, e)
				}
			}
		}
	}

	s := fmt.Sprintf("%v %+v %#v %s %q", good, good, good, good, good)
	if strings.Contains(s, password) {
		t.Errorf("Options print the password: %s", s)
	}
}

func TestTLSAndPlainHTTP(t *testing.T) {
	tlsHost, _ := newTLSRegistry(t)
	plain := ocitest.NewRegistry(t, nil)
	for _, tc := range []struct {
		name string
		ref  string
		opts Options
		kind error
		want string
	}{
		{"untrusted certificate", tlsHost + "/team/web:v1", Options{}, pkgrepo.ErrCertificateUntrusted, "give its certificate (PEM) as the CA bundle"},
		{"CA bundle without certificate", tlsHost + "/team/web:v1", Options{CABundle: []byte("not a certificate")}, pkgrepo.ErrCredentials, "holds no PEM certificate"},
		{"CA bundle and transport", tlsHost + "/team/web:v1", Options{CABundle: []byte("x"), Transport: http.DefaultTransport}, nil, "CABundle applies to the default transport only"},
		{"plain http without Insecure", plain + "/team/web:v1", Options{}, errPlainHTTP, "set insecure"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Push(context.Background(), tc.ref, pkgFiles("1"), tc.opts)
			if err == nil || (tc.kind != nil && !errors.Is(err, tc.kind)) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one wrapping %v that says %q", err, tc.kind, tc.want)
			}
		})
	}
}

func TestScrub(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"denied: Basic cm9ib3Q6aHVudGVyMg==", "denied: Basic <redacted>"},
		{"echo Bearer eyJhbGciOiJIUzI1NiJ9.e30.abc", "echo Bearer <redacted>"},
		{`Get "https://bob:pw@host/v2/": EOF`, `Get "https://<redacted>@host/v2/": EOF`},
		{`GET https://s3.example/blob?X-Amz-Signature=abc&X-Amz-Credential=k: 403`, `GET https://s3.example/blob?<redacted>: 403`},
		{"password hunter2 leaked", "password <redacted> leaked"},
		{"basic auth required, Bearer realm", "basic auth required, Bearer realm"},
	} {
		if got := scrub(tc.in, []string{"hunter2"}); got != tc.want {
			t.Errorf("scrub(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestReadDir(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("Kptfile", "kind: Kptfile\n")
	write("deploy.yaml", "kind: Deployment\n")
	write("sub/dir/cm.yaml", "kind: ConfigMap\n")
	write(".git/config", "[core]\n")
	write("sub/.git", "gitdir: elsewhere\n")
	if err := os.MkdirAll(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{
		"Kptfile":         []byte("kind: Kptfile\n"),
		"deploy.yaml":     []byte("kind: Deployment\n"),
		"sub/dir/cm.yaml": []byte("kind: ConfigMap\n"),
	}
	got, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadDir (-want +got):\n%s", diff)
	}

	// dir itself may be a symlink; a symlink inside it may not.
	link := filepath.Join(t.TempDir(), "pkg")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadDir(link); err != nil || len(got) != len(want) {
		t.Errorf("ReadDir(symlink to dir) = %d files, %v", len(got), err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "sub", "passwd")); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadDir(dir); !errors.Is(err, pkgrepo.ErrInvalidPackage) || !strings.Contains(err.Error(), "sub/passwd is a symlink") {
		t.Errorf("ReadDir with a symlink: err = %v", err)
	}
}

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	ref, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}
