package ocipkg

import (
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// ReadDir reads the kpt package in dir for Push: every regular file, by slash-separated path
// relative to dir, skipping .git. It refuses symlinks (dir itself may be one), devices and
// other special files, and packages over the limits Push and Fetch enforce, with errors
// wrapping pkgrepo.ErrInvalidPackage. It does not require a Kptfile: Push does.
func ReadDir(dir string) (map[string][]byte, error) {
	// os.Root keeps every open inside dir, whatever is renamed meanwhile.
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("read package: %w", err)
	}
	defer root.Close()
	fsys := root.FS()
	files := map[string][]byte{}
	var total int64
	err = fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.Name() == ".git" && name != ".":
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil // a worktree's .git file
		case d.IsDir():
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			return fmt.Errorf("%w: %s is a symlink; packages hold regular files only (copy the file in)", pkgrepo.ErrInvalidPackage, name)
		case !d.Type().IsRegular():
			return fmt.Errorf("%w: %s is not a regular file (%s)", pkgrepo.ErrInvalidPackage, name, d.Type())
		case len(files) >= maxPackageFiles:
			return fmt.Errorf("%w: the package has more than %d files", pkgrepo.ErrInvalidPackage, maxPackageFiles)
		}
		data, err := readFile(root, name)
		if err != nil {
			return err
		}
		if total += int64(len(data)); total > maxPackageSize {
			return fmt.Errorf("%w: the package is more than %d bytes", pkgrepo.ErrInvalidPackage, maxPackageSize)
		}
		files[name] = data
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read package %s: %w", dir, err)
	}
	return files, nil
}

// readFile reads name, refusing it past maxFileSize without reading it whole.
func readFile(root *os.Root, name string) ([]byte, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("%w: %s is more than the %d bytes a package file may have", pkgrepo.ErrInvalidPackage, name, maxFileSize)
	}
	return data, nil
}
