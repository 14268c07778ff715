// Command image writes flotilla's container image as an OCI image layout, without a container
// runtime: `make image` builds the static binary and runs it. See internal/image.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/flotilla-dev/flotilla/internal/image"
)

func main() {
	binary := flag.String("binary", "", "the static flotilla binary (CGO_ENABLED=0 GOOS=linux)")
	caCerts := flag.String("ca-certs", image.CACertsPath, "PEM bundle of CA certificates to put in the image")
	platform := flag.String("platform", "linux/amd64", "the binary's OS/ARCH")
	version := flag.String("version", "", "the version the binary is stamped with: the image's tag")
	revision := flag.String("revision", "", "the commit the binary is built from")
	created := flag.String("created", "", "the commit's date, RFC 3339: the time of the image and of its files")
	out := flag.String("o", "bin/image", "the OCI layout directory to write")
	flag.Parse()
	if err := run(*binary, *caCerts, *platform, *version, *revision, *created, *out); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(binary, caCerts, platform, version, revision, created, out string) error {
	if binary == "" || version == "" || revision == "" {
		return errors.New("-binary, -version and -revision are required (make image gives them)")
	}
	p, err := v1.ParsePlatform(platform)
	if err != nil {
		return fmt.Errorf("-platform %q: %w", platform, err)
	}
	t := time.Unix(0, 0)
	if created != "" {
		if t, err = time.Parse(time.RFC3339, created); err != nil {
			return fmt.Errorf("-created %q: %w", created, err)
		}
	}
	bin, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	certs, err := os.ReadFile(caCerts)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("CA certificates: %s does not exist on this machine: install its ca-certificates package, or pass -ca-certs FILE (make image CA_CERTS=FILE)", caCerts)
	}
	if err != nil {
		return fmt.Errorf("CA certificates: %w", err)
	}
	img, err := image.Build(image.Options{Binary: bin, CACerts: certs, Platform: *p, Version: version, Revision: revision, Created: t})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	if err := image.WriteLayout(out, img, version); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s: an OCI image layout of %s:%s (%s), %s\n", out, image.Name, version, p, digest)
	fmt.Printf("push it: go run github.com/google/go-containerregistry/cmd/crane@%s push %s REGISTRY/%s:%s\n", craneVersion(), out, image.Name, version)
	return nil
}

// craneVersion is the go-containerregistry this program is built with: crane of the same release
// reads the layout it writes.
func craneVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/google/go-containerregistry" {
				return d.Version
			}
		}
	}
	return "latest"
}
