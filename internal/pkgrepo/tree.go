package pkgrepo

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// Trees are built straight in the mirror's object store: a package
// directory is replaced by writing its new subtree and the trees on the path
// up to the root, reusing every other entry by hash. No checkout is needed,
// and "nothing changed" is a comparison of two tree hashes.

// cleanPackage validates a package path and returns it without leading or
// trailing slashes.
func cleanPackage(pkg string) (string, error) {
	p := strings.Trim(pkg, "/")
	if p == "" || path.Clean(p) != p || hasDotSegment(p) {
		return "", fmt.Errorf("invalid package path %q", pkg)
	}
	// Its tags and proposal branches must be valid ref names.
	if err := plumbing.ReferenceName("refs/tags/" + p + "/v1").Validate(); err != nil {
		return "", fmt.Errorf("invalid package path %q: %w", pkg, err)
	}
	return p, nil
}

func hasDotSegment(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." || isDotGit(seg) {
			return true
		}
	}
	return false
}

// isDotGit tells whether a path segment is a checkout's .git directory on some file system: any
// case (case-insensitive file systems), with trailing dots and spaces (NTFS drops them) or a
// stream after a colon (.git::$INDEX_ALLOCATION), its NTFS short name git~1, or with the code
// points HFS+ ignores inside it. git refuses such paths on
// checkout (core.protectNTFS, core.protectHFS) for this reason: a tree that holds one can write
// hooks into a clone's .git on those systems.
func isDotGit(seg string) bool {
	seg = strings.Map(func(r rune) rune {
		if hfsIgnorable(r) {
			return -1
		}
		return r
	}, seg)
	if i := strings.IndexByte(seg, ':'); i >= 0 {
		seg = seg[:i] // NTFS: what follows a colon names a stream of the file before it
	}
	seg = strings.TrimRight(seg, ". ")
	return strings.EqualFold(seg, ".git") || strings.EqualFold(seg, "git~1")
}

// hfsIgnorable: the code points HFS+ leaves out when it compares names (as git's is_hfs_dotgit).
func hfsIgnorable(r rune) bool {
	return (r >= 0x200c && r <= 0x200f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x206a && r <= 0x206f) || r == 0xfeff
}

// validateFiles checks a package's files before any I/O: relative, clean
// paths that stay inside the package, and a Kptfile, without which the
// revision could not be resolved.
func validateFiles(files map[string][]byte) error {
	if _, ok := files["Kptfile"]; !ok {
		return errors.New("the package has no Kptfile")
	}
	for name := range files {
		if !validFilePath(name) {
			return fmt.Errorf("invalid file path %q", name)
		}
	}
	return nil
}

func validFilePath(name string) bool {
	return !path.IsAbs(name) && path.Clean(name) == name && !hasDotSegment(name)
}

// dirNode is a directory being assembled from a flat file map.
type dirNode struct {
	files map[string][]byte
	dirs  map[string]*dirNode
}

// buildPackageTree writes files (relative paths) as a tree and returns its
// hash. Every file is a regular, non-executable file.
func buildPackageTree(s storer.EncodedObjectStorer, files map[string][]byte) (plumbing.Hash, error) {
	root := &dirNode{files: map[string][]byte{}, dirs: map[string]*dirNode{}}
	for name, data := range files {
		if !validFilePath(name) {
			return plumbing.ZeroHash, fmt.Errorf("invalid file path %q", name)
		}
		segs := strings.Split(name, "/")
		n := root
		for _, seg := range segs[:len(segs)-1] {
			if _, clash := n.files[seg]; clash {
				return plumbing.ZeroHash, fmt.Errorf("file path %q: %s is also a file", name, seg)
			}
			child, ok := n.dirs[seg]
			if !ok {
				child = &dirNode{files: map[string][]byte{}, dirs: map[string]*dirNode{}}
				n.dirs[seg] = child
			}
			n = child
		}
		base := segs[len(segs)-1]
		if _, clash := n.dirs[base]; clash {
			return plumbing.ZeroHash, fmt.Errorf("file path %q is also a directory", name)
		}
		n.files[base] = data
	}
	return root.write(s)
}

func (n *dirNode) write(s storer.EncodedObjectStorer) (plumbing.Hash, error) {
	entries := make([]object.TreeEntry, 0, len(n.files)+len(n.dirs))
	for name, data := range n.files {
		h, err := writeBlob(s, data)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries = append(entries, object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: h})
	}
	for name, child := range n.dirs {
		h, err := child.write(s)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries = append(entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h})
	}
	return writeTree(s, entries)
}

func writeBlob(s storer.EncodedObjectStorer, data []byte) (plumbing.Hash, error) {
	obj := s.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(data); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return store(s, obj)
}

// store writes obj unless the repository has it already: most blobs and trees of a new
// deployed-packages revision are those of the previous one, and writing a loose object (a
// temporary file, then a rename) costs far more than checking for it.
func store(s storer.EncodedObjectStorer, obj plumbing.EncodedObject) (plumbing.Hash, error) {
	if h := obj.Hash(); s.HasEncodedObject(h) == nil {
		return h, nil
	}
	return s.SetEncodedObject(obj)
}

// writeTree stores a tree with its entries in git's order (a directory
// sorts as if its name ended in "/"), which git fsck and every other
// implementation expect.
func writeTree(s storer.EncodedObjectStorer, entries []object.TreeEntry) (plumbing.Hash, error) {
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(entries, func(i, j int) bool { return key(entries[i]) < key(entries[j]) })
	obj := s.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return store(s, obj)
}

// subtree returns the hash of directory p in tree root, zero when root is
// zero or p is not a directory in it.
func subtree(s storer.EncodedObjectStorer, root plumbing.Hash, p string) (plumbing.Hash, error) {
	h := root
	for _, seg := range strings.Split(p, "/") {
		if h.IsZero() {
			return h, nil
		}
		t, err := getTree(s, h)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		h = plumbing.ZeroHash
		for _, e := range t.Entries {
			if e.Name == seg && e.Mode == filemode.Dir {
				h = e.Hash
				break
			}
		}
	}
	return h, nil
}

// maxTreeBytes bounds one tree object read from a repository: go-git decodes a tree whole, and
// a tree of millions of entries naming one object compresses into a small pack. 8 MiB is about
// 100,000 entries, five times the most a package's walk visits (MaxPackageEntries).
const maxTreeBytes = 8 << 20

// maxCommitBytes bounds a commit or an annotated tag read from a repository (a message of a few
// hundred lines is a few KB): go-git decodes them whole, their messages included.
const maxCommitBytes = 1 << 20

// getCommit reads commit h, refusing one larger than maxCommitBytes before it is decoded.
func getCommit(s storer.EncodedObjectStorer, h plumbing.Hash) (*object.Commit, error) {
	if n, err := s.EncodedObjectSize(h); err == nil && n > maxCommitBytes {
		return nil, fmt.Errorf("%w: commit %s is %d bytes, more than the %d flotilla reads", ErrInvalidPackage, h, n, maxCommitBytes)
	}
	return object.GetCommit(s, h)
}

// getTree reads tree h, refusing one larger than maxTreeBytes before it is decoded.
func getTree(s storer.EncodedObjectStorer, h plumbing.Hash) (*object.Tree, error) {
	if n, err := s.EncodedObjectSize(h); err == nil && n > maxTreeBytes {
		return nil, fmt.Errorf("%w: tree %s is %d bytes, more than the %d flotilla reads", ErrInvalidPackage, h, n, maxTreeBytes)
	}
	return object.GetTree(s, h)
}

// replaceSubtree returns root with directory p replaced by sub (removed when
// sub is zero), creating the directories on the way. Other entries are kept
// as they are. A tree left empty is dropped, except the root.
func replaceSubtree(s storer.EncodedObjectStorer, root plumbing.Hash, p string, sub plumbing.Hash) (plumbing.Hash, error) {
	h, err := splice(s, root, strings.Split(p, "/"), sub)
	if err != nil || !h.IsZero() {
		return h, err
	}
	return writeTree(s, nil)
}

func splice(s storer.EncodedObjectStorer, base plumbing.Hash, segs []string, sub plumbing.Hash) (plumbing.Hash, error) {
	var entries []object.TreeEntry
	var old plumbing.Hash
	if !base.IsZero() {
		t, err := getTree(s, base)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		for _, e := range t.Entries {
			if e.Name != segs[0] {
				entries = append(entries, e)
			} else if e.Mode == filemode.Dir {
				old = e.Hash
			}
		}
	}
	child := sub
	if len(segs) > 1 {
		var err error
		if child, err = splice(s, old, segs[1:], sub); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	if !child.IsZero() {
		entries = append(entries, object.TreeEntry{Name: segs[0], Mode: filemode.Dir, Hash: child})
	}
	if len(entries) == 0 {
		return plumbing.ZeroHash, nil
	}
	return writeTree(s, entries)
}

// commitTree returns the tree of commit h, zero when h is zero.
func commitTree(s storer.EncodedObjectStorer, h plumbing.Hash) (plumbing.Hash, error) {
	if h.IsZero() {
		return h, nil
	}
	c, err := getCommit(s, h)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return c.TreeHash, nil
}

// writeCommit stores a commit of tree on parent (none when zero).
func writeCommit(s storer.EncodedObjectStorer, tree, parent plumbing.Hash, msg string, author Signature, when time.Time) (plumbing.Hash, error) {
	sig := object.Signature{Name: author.Name, Email: author.Email, When: when}
	c := &object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: tree}
	if !parent.IsZero() {
		c.ParentHashes = []plumbing.Hash{parent}
	}
	obj := s.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.SetEncodedObject(obj)
}

// peel follows annotated tags to the commit they point at.
func peel(s storer.EncodedObjectStorer, h plumbing.Hash) (plumbing.Hash, error) {
	for range 10 {
		obj, err := s.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if obj.Type() != plumbing.TagObject {
			return h, nil
		}
		if obj.Size() > maxCommitBytes {
			return plumbing.ZeroHash, fmt.Errorf("%w: tag %s is %d bytes, more than the %d flotilla reads", ErrInvalidPackage, h, obj.Size(), maxCommitBytes)
		}
		tag, err := object.DecodeTag(s, obj)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		h = tag.Target
	}
	return plumbing.ZeroHash, errors.New("tag chain too long")
}
