package ocipkg

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/flotilla-dev/flotilla/internal/bounded"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// Limits on a package, the same as for packages read from git: Push refuses what Fetch would.
const (
	maxFileSize     = pkgrepo.MaxFileSize
	maxPackageSize  = pkgrepo.MaxPackageSize
	maxPackageFiles = pkgrepo.MaxPackageFiles
	maxPathLen      = 4096
	// maxEntries counts directories too.
	maxEntries = 2 * maxPackageFiles
	// maxTarSize bounds the uncompressed layer: the files, plus headers, padding and PAX
	// records of every entry. A gzip bomb stops here, not in memory.
	maxTarSize = maxPackageSize + maxEntries*(4<<10)
	// maxLayerSize bounds the compressed layer: gzip grows incompressible data by a few
	// bytes per 64 KiB block at most.
	maxLayerSize = maxTarSize + maxTarSize/1000 + 1<<10
)

// epoch is every entry's mtime: the same files make the same bytes, whenever they are packed.
var epoch = time.Unix(0, 0).UTC()

// checkFiles validates a package before it is packed: a Kptfile, clean relative paths that stay
// inside the package, no file where another path needs a directory, and the limits.
func checkFiles(files map[string][]byte) error {
	if _, ok := files["Kptfile"]; !ok {
		return fmt.Errorf("%w: the package has no Kptfile at its root", pkgrepo.ErrInvalidPackage)
	}
	if len(files) > maxPackageFiles {
		return fmt.Errorf("%w: the package has %d files, more than the %d a package may have", pkgrepo.ErrInvalidPackage, len(files), maxPackageFiles)
	}
	var total int64
	for name, data := range files {
		if err := checkPath(name); err != nil {
			return err
		}
		if len(data) > maxFileSize {
			return fmt.Errorf("%w: %s is %d bytes, more than the %d a package file may have", pkgrepo.ErrInvalidPackage, name, len(data), maxFileSize)
		}
		if total += int64(len(data)); total > maxPackageSize {
			return fmt.Errorf("%w: the package is more than %d bytes", pkgrepo.ErrInvalidPackage, maxPackageSize)
		}
	}
	if err := checkClashes(files, nil); err != nil {
		return err
	}
	if n := len(files) + len(directories(files)); n > maxEntries {
		return fmt.Errorf("%w: the package has %d files and directories, more than %d", pkgrepo.ErrInvalidPackage, n, maxEntries)
	}
	return nil
}

// checkPath accepts a clean relative slash-separated path inside the package, outside .git.
func checkPath(name string) error {
	switch {
	case len(name) > maxPathLen:
		return fmt.Errorf("%w: path %s is longer than %d bytes", pkgrepo.ErrInvalidPackage, quote(name), maxPathLen)
	case path.IsAbs(name):
		return fmt.Errorf("%w: %s is an absolute path; package paths are relative to the package", pkgrepo.ErrInvalidPackage, quote(name))
	case strings.ContainsRune(name, '\\'):
		return fmt.Errorf("%w: %s contains a backslash; package paths use /", pkgrepo.ErrInvalidPackage, quote(name))
	}
	for _, seg := range strings.Split(name, "/") {
		switch seg {
		case "..":
			return fmt.Errorf("%w: %s escapes the package (..)", pkgrepo.ErrInvalidPackage, quote(name))
		case "", ".":
			return fmt.Errorf("%w: %s is not a clean path", pkgrepo.ErrInvalidPackage, quote(name))
		case ".git":
			return fmt.Errorf("%w: %s is inside .git", pkgrepo.ErrInvalidPackage, quote(name))
		}
	}
	return nil
}

// checkClashes refuses a path that is a file and a directory at once (a file "a" and a file
// "a/b", or a directory entry "a").
func checkClashes(files map[string][]byte, dirs map[string]bool) error {
	clash := func(name string) error {
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			if _, ok := files[d]; ok {
				return fmt.Errorf("%w: %s is both a file and a directory", pkgrepo.ErrInvalidPackage, quote(d))
			}
		}
		return nil
	}
	for name := range files {
		if dirs[name] {
			return fmt.Errorf("%w: %s is both a file and a directory", pkgrepo.ErrInvalidPackage, quote(name))
		}
		if err := clash(name); err != nil {
			return err
		}
	}
	for name := range dirs {
		if err := clash(name); err != nil {
			return err
		}
	}
	return nil
}

// directories returns every directory that holds a file, at any depth.
func directories(files map[string][]byte) map[string]bool {
	dirs := map[string]bool{}
	for name := range files {
		for d := path.Dir(name); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	return dirs
}

// buildLayer packs checked files as a deterministic tar+gzip: entries sorted by path, every
// directory as its own entry (mode 0755) before what it holds, files mode 0644, owner 0:0,
// mtime the epoch, no user or group names. Directory entries are not optional: Config Sync's
// extraction creates a file's directory only from its entry.
func buildLayer(files map[string][]byte) ([]byte, error) {
	entries := make([]string, 0, len(files))
	for name := range files {
		entries = append(entries, name)
	}
	for d := range directories(files) {
		entries = append(entries, d+"/")
	}
	// A directory "a/" sorts before every path under it: it is their prefix.
	sort.Strings(entries)

	// compress/flate has given the same bytes for the same input across Go releases; were a
	// release to change that, new pushes would get new digests, which is harmless: a tag is
	// never rewritten (only a re-push of old files would then be refused instead of a no-op).
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf) // no name, no mtime in the gzip header
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		hdr := &tar.Header{Name: e, ModTime: epoch, Typeflag: tar.TypeDir, Mode: 0o755}
		data, isFile := files[e]
		if isFile {
			hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeReg, 0o644, int64(len(data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("pack %s: %w", e, err)
		}
		if _, err := tw.Write(data); err != nil {
			return nil, fmt.Errorf("pack %s: %w", e, err)
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

// readLayer unpacks a tar+gzip layer from an untrusted registry into files, within the limits.
// It refuses anything but regular files and directories, and any path that is not a clean
// relative path inside the package; "./" prefixes (tar -C dir .) are accepted. It reads the
// stream to its end, so a digest check on r happens.
func readLayer(r io.Reader) (map[string][]byte, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("%w: the layer is not gzip-compressed: %w", pkgrepo.ErrInvalidPackage, err)
	}
	lr := bounded.NewReader(zr, maxTarSize, func() error { return errTooLarge })
	tr := tar.NewReader(lr)
	files := map[string][]byte{}
	dirs := map[string]bool{}
	var total int64
	for entries := 0; ; entries++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, layerError(err)
		}
		if entries >= maxEntries {
			return nil, fmt.Errorf("%w: the layer has more than %d entries", pkgrepo.ErrInvalidPackage, maxEntries)
		}
		name := strings.TrimPrefix(hdr.Name, "./")
		switch hdr.Typeflag {
		case tar.TypeXGlobalHeader:
			continue // PAX global metadata (git archive writes one): no file
		case tar.TypeDir:
			name = strings.TrimSuffix(name, "/")
			if name == "" {
				continue // the package root, "./"
			}
			if err := checkPath(name); err != nil {
				return nil, err
			}
			dirs[name] = true
			continue
		case tar.TypeReg:
		case tar.TypeSymlink, tar.TypeLink:
			return nil, fmt.Errorf("%w: %s is a link; packages hold regular files only", pkgrepo.ErrInvalidPackage, quote(hdr.Name))
		case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
			return nil, fmt.Errorf("%w: %s is a device or pipe; packages hold regular files only", pkgrepo.ErrInvalidPackage, quote(hdr.Name))
		default:
			return nil, fmt.Errorf("%w: %s has tar type %q; packages hold regular files only", pkgrepo.ErrInvalidPackage, quote(hdr.Name), hdr.Typeflag)
		}
		if err := checkPath(name); err != nil {
			return nil, err
		}
		switch _, dup := files[name]; {
		case dup:
			return nil, fmt.Errorf("%w: %s appears twice in the layer", pkgrepo.ErrInvalidPackage, quote(name))
		case len(files) >= maxPackageFiles:
			return nil, fmt.Errorf("%w: the package has more than %d files", pkgrepo.ErrInvalidPackage, maxPackageFiles)
		case hdr.Size > maxFileSize:
			return nil, fmt.Errorf("%w: %s is %d bytes, more than the %d a package file may have", pkgrepo.ErrInvalidPackage, quote(name), hdr.Size, maxFileSize)
		}
		if total += hdr.Size; total > maxPackageSize {
			return nil, fmt.Errorf("%w: the package is more than %d bytes uncompressed", pkgrepo.ErrInvalidPackage, maxPackageSize)
		}
		data, err := io.ReadAll(tr) // the tar reader stops at hdr.Size
		if err != nil {
			return nil, layerError(err)
		}
		files[name] = data
	}
	if err := checkClashes(files, dirs); err != nil {
		return nil, err
	}
	// The rest of the stream (tar padding, the gzip trailer with its CRC) is read too, so that
	// the digest of what came from the registry is verified.
	if _, err := io.Copy(io.Discard, lr); err != nil {
		return nil, layerError(err)
	}
	if err := zr.Close(); err != nil {
		return nil, layerError(err)
	}
	return files, nil
}

func layerError(err error) error {
	if errors.Is(err, errTooLarge) {
		return fmt.Errorf("%w: the layer is more than %d bytes uncompressed", pkgrepo.ErrInvalidPackage, maxTarSize)
	}
	return fmt.Errorf("%w: the layer is not a valid tar+gzip archive: %w", pkgrepo.ErrInvalidPackage, err)
}

var errTooLarge = errors.New("stream too large")

// quote quotes an untrusted name for a message, cut short: a name can be a megabyte long.
func quote(s string) string {
	const maxLen = 128
	if len(s) > maxLen {
		return fmt.Sprintf("%q...", s[:maxLen])
	}
	return fmt.Sprintf("%q", s)
}
