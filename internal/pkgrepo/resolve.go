package pkgrepo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// Revision is a published revision of a package: tag Package/vNumber on
// Commit (annotated tags peeled).
type Revision struct {
	Package string
	Number  int
	Tag     string
	Commit  string
}

// Resolve finds revision ("vN", or "latest" for the highest N) of pkg and
// checks that pkg/Kptfile exists in its commit. It reads the mirror as last
// refreshed and fetches first only when the mirror is older than
// RefreshInterval, so a caller that needs the newest tags calls Refresh.
func (s *Store) Resolve(ctx context.Context, r Remote, pkg, revision string) (Revision, error) {
	pkg, err := cleanPackage(pkg)
	if err != nil {
		return Revision{}, err
	}
	want, err := parseRevision(revision)
	if err != nil {
		return Revision{}, err
	}
	m, ep, unlock, err := s.lock(r)
	if err != nil {
		return Revision{}, err
	}
	defer unlock()
	key := pkg + "\x00" + revision
	if err := s.ensureFresh(ctx, m, ep); err != nil {
		if rev, ok := m.exact[key]; ok && m.credential == ep.credential {
			// Tags are never moved: an exact revision resolved before is still what it was
			// while the remote is unreachable (only "latest" needs the remote).
			return rev, nil
		}
		return Revision{}, err
	}
	if rev, ok := m.resolved[key]; ok {
		return rev, nil
	}

	revs, err := m.revisions(pkg)
	if err != nil {
		return Revision{}, fmt.Errorf("%s: list tags of %s: %w", ep.display, pkg, err)
	}
	if len(revs) == 0 {
		return Revision{}, fmt.Errorf("%s: %w: %s has no published revision (no tag %s/v<N>)", ep.display, ErrPackageNotFound, pkg, pkg)
	}
	if want == 0 {
		want = highest(revs)
	}
	if _, ok := revs[want]; !ok {
		return Revision{}, fmt.Errorf("%s: %w: %s/v%d does not exist", ep.display, ErrRevisionNotFound, pkg, want)
	}
	rev, err := m.revision(pkg, want, revs[want])
	if err != nil {
		return Revision{}, fmt.Errorf("%s: %w", ep.display, err)
	}
	if err := m.checkKptfile(rev); err != nil {
		return Revision{}, fmt.Errorf("%s: %s: %w", ep.display, rev.Tag, err)
	}
	if m.resolved == nil {
		m.resolved = map[string]Revision{}
	}
	m.resolved[key] = rev
	if revision != "latest" {
		if m.exact == nil {
			m.exact = map[string]Revision{}
		}
		m.exact[key] = rev
	}
	return rev, nil
}

// checkKptfile makes sure the revision's commit has <package>/Kptfile: a
// tag alone does not make a package.
func (m *mirror) checkKptfile(rev Revision) error {
	commit, err := getCommit(m.repo.Storer, plumbing.NewHash(rev.Commit))
	if err != nil {
		return err
	}
	tree, err := subtree(m.repo.Storer, commit.TreeHash, rev.Package)
	if err != nil {
		return err
	}
	if tree.IsZero() {
		return fmt.Errorf("%w: no directory %s", ErrPackageNotFound, rev.Package)
	}
	t, err := getTree(m.repo.Storer, tree)
	if err != nil {
		return err
	}
	for _, e := range t.Entries {
		if e.Name == "Kptfile" && e.Mode.IsFile() {
			return nil
		}
	}
	return fmt.Errorf("%w: no %s/Kptfile", ErrPackageNotFound, rev.Package)
}

// Latest returns the highest published revision of pkg, false when there is
// none. Like Resolve it reads the mirror unless it is stale.
func (s *Store) Latest(ctx context.Context, r Remote, pkg string) (Revision, bool, error) {
	pkg, err := cleanPackage(pkg)
	if err != nil {
		return Revision{}, false, err
	}
	m, ep, unlock, err := s.lock(r)
	if err != nil {
		return Revision{}, false, err
	}
	defer unlock()
	if err := s.ensureFresh(ctx, m, ep); err != nil {
		return Revision{}, false, err
	}
	rev, err := m.latest(pkg)
	if err != nil {
		return Revision{}, false, fmt.Errorf("%s: %w", ep.display, err)
	}
	return rev, rev.Number > 0, nil
}

// ReadPackage returns the files of directory pkg at commit, keyed by path
// relative to pkg. A commit the mirror lacks triggers one fetch.
func (s *Store) ReadPackage(ctx context.Context, r Remote, pkg, commit string) (map[string][]byte, error) {
	pkg, err := cleanPackage(pkg)
	if err != nil {
		return nil, err
	}
	if !plumbing.IsHash(commit) {
		return nil, fmt.Errorf("invalid commit %q", commit)
	}
	m, ep, unlock, err := s.lock(r)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := s.ensureFresh(ctx, m, ep); err != nil {
		return nil, err
	}
	c, err := getCommit(m.repo.Storer, plumbing.NewHash(commit))
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		if err := s.fetch(ctx, m, ep); err != nil {
			return nil, err
		}
		c, err = getCommit(m.repo.Storer, plumbing.NewHash(commit))
	}
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return nil, fmt.Errorf("%s: %w: commit %s not found", ep.display, ErrRevisionNotFound, commit)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: commit %s: %w", ep.display, commit, err)
	}
	files, err := readTree(m, c.TreeHash, pkg)
	if err != nil {
		return nil, fmt.Errorf("%s: %s at %s: %w", ep.display, pkg, commit, err)
	}
	return files, nil
}

// readTree returns the files of directory pkg in tree root, ErrPackageNotFound
// when there is no such directory.
func readTree(m *mirror, root plumbing.Hash, pkg string) (map[string][]byte, error) {
	h, err := subtree(m.repo.Storer, root, pkg)
	if err != nil {
		return nil, err
	}
	if h.IsZero() {
		return nil, fmt.Errorf("%w: no directory %s", ErrPackageNotFound, pkg)
	}
	r := treeReader{s: m.repo.Storer, files: map[string][]byte{}}
	if err := r.read(h, ""); err != nil {
		return nil, err
	}
	return r.files, nil
}

// treeReader reads a package's tree, within the package limits. It walks the trees itself: a tree
// that names one subtree many times, level after level, is a few objects that a walk visits
// without end (1,000 names for one subtree, four levels deep: 10^12 entries), and go-git's file
// iterator, which reaches files only, would never meet a limit when the last level is empty. It
// also skips submodules without a word, which would leave them out of the package silently.
type treeReader struct {
	s       storer.EncodedObjectStorer
	files   map[string][]byte
	total   int64 // bytes read
	entries int   // files and directories visited
}

func (r *treeReader) read(h plumbing.Hash, dir string) error {
	t, err := getTree(r.s, h)
	if err != nil {
		return err
	}
	for _, e := range t.Entries {
		if r.entries++; r.entries > MaxPackageEntries {
			return fmt.Errorf("%w: the package has more than %d files and directories", ErrInvalidPackage, MaxPackageEntries)
		}
		if e.Name == "" || e.Name == "." || e.Name == ".." || strings.ContainsAny(e.Name, "/\x00") {
			return fmt.Errorf("%w: %q in %s is not a file name", ErrInvalidPackage, e.Name, cmp.Or(dir, "the package"))
		}
		name := path.Join(dir, e.Name)
		switch e.Mode {
		case filemode.Dir:
			err = r.read(e.Hash, name)
		case filemode.Regular, filemode.Executable, filemode.Deprecated:
			err = r.readFile(e.Hash, name)
		default:
			// Symlinks and submodules are not followed: nothing outside the repository is ever
			// reached.
			err = fmt.Errorf("%w: %s is a symlink or submodule; packages hold regular files only", ErrInvalidPackage, name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (r *treeReader) readFile(h plumbing.Hash, name string) error {
	b, err := object.GetBlob(r.s, h)
	if err != nil {
		return err
	}
	r.total += b.Size
	switch {
	case b.Size > MaxFileSize:
		return fmt.Errorf("%w: %s is %d bytes, more than the %d a package file may have", ErrInvalidPackage, name, b.Size, MaxFileSize)
	case r.total > MaxPackageSize:
		return fmt.Errorf("%w: the package is more than %d bytes", ErrInvalidPackage, MaxPackageSize)
	case len(r.files) >= MaxPackageFiles:
		return fmt.Errorf("%w: the package has more than %d files", ErrInvalidPackage, MaxPackageFiles)
	}
	rd, err := b.Reader()
	if err != nil {
		return err
	}
	defer rd.Close()
	data, err := io.ReadAll(io.LimitReader(rd, MaxFileSize+1))
	r.files[name] = data
	return err
}

// Limits on packages read from git, so a hostile repository cannot exhaust the controller.
const (
	MaxFileSize     = 8 << 20
	MaxPackageSize  = 64 << 20
	MaxPackageFiles = 10000
	// MaxPackageEntries bounds the files and directories a package's walk visits.
	MaxPackageEntries = 2 * MaxPackageFiles
)

// parseRevision returns N for "vN" and 0 for "latest".
func parseRevision(rev string) (int, error) {
	if rev == "latest" {
		return 0, nil
	}
	if n, ok := revisionNumber(strings.TrimPrefix(rev, "v")); ok && strings.HasPrefix(rev, "v") {
		return n, nil
	}
	return 0, fmt.Errorf("invalid revision %q: want v<N> or latest", rev)
}

// revisionNumber parses a positive decimal without sign or leading zeros, so
// that each revision has exactly one tag name.
func revisionNumber(s string) (int, bool) {
	if s == "" || s[0] == '0' || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// revisions returns the tags pkg/vN of the mirror by N. The hashes are the
// tag refs' own (an annotated tag's object, not yet peeled).
func (m *mirror) revisions(pkg string) (map[int]plumbing.Hash, error) {
	return m.numbered("refs/tags/" + pkg + "/v")
}

// proposals returns the branches proposed/pkg/vN by N.
// PendingProposal returns the highest proposal of pkg waiting for approval (branch
// proposed/pkg/vN): its would-be revision number, branch and commit; false when there is none.
func (s *Store) PendingProposal(ctx context.Context, r Remote, pkg string) (number int, branch, commit string, ok bool, err error) {
	pkg, err = cleanPackage(pkg)
	if err != nil {
		return 0, "", "", false, err
	}
	m, ep, unlock, err := s.lock(r)
	if err != nil {
		return 0, "", "", false, err
	}
	defer unlock()
	if err := s.ensureFresh(ctx, m, ep); err != nil {
		return 0, "", "", false, err
	}
	props, err := m.proposals(pkg)
	if err != nil || len(props) == 0 {
		return 0, "", "", false, err
	}
	n := highest(props)
	return n, proposalBranch(pkg, n), props[n].String(), true, nil
}

func (m *mirror) proposals(pkg string) (map[int]plumbing.Hash, error) {
	return m.numbered("refs/heads/proposed/" + pkg + "/v")
}

func (m *mirror) numbered(prefix string) (map[int]plumbing.Hash, error) {
	refs, err := m.refs(prefix)
	if err != nil {
		return nil, err
	}
	out := map[int]plumbing.Hash{}
	for name, h := range refs {
		if n, ok := revisionNumber(strings.TrimPrefix(name.String(), prefix)); ok {
			out[n] = h
		}
	}
	return out, nil
}

func highest(revs map[int]plumbing.Hash) int {
	n := 0
	for k := range revs {
		n = max(n, k)
	}
	return n
}

// latest returns the highest revision of pkg, the zero Revision if none.
func (m *mirror) latest(pkg string) (Revision, error) {
	revs, err := m.revisions(pkg)
	if err != nil || len(revs) == 0 {
		return Revision{}, err
	}
	n := highest(revs)
	return m.revision(pkg, n, revs[n])
}

// revision describes tag pkg/vN whose ref points at ref.
func (m *mirror) revision(pkg string, n int, ref plumbing.Hash) (Revision, error) {
	tag := fmt.Sprintf("%s/v%d", pkg, n)
	commit, err := peel(m.repo.Storer, ref)
	if err != nil {
		return Revision{}, fmt.Errorf("tag %s: %w", tag, err)
	}
	return Revision{Package: pkg, Number: n, Tag: tag, Commit: commit.String()}, nil
}
