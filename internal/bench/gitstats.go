package bench

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// deployedPrefix is the tag prefix of deployed-packages revisions in a cluster repository.
const deployedPrefix = "deployed-packages/v"

// repoStats is what was written into a set of repositories.
type repoStats struct {
	Commits int   // deployed-packages tags
	Bytes   int64 // size of the object directories
}

func (s repoStats) sub(o repoStats) repoStats {
	return repoStats{Commits: s.Commits - o.Commits, Bytes: s.Bytes - o.Bytes}
}

// statRepos counts the deployed-packages tags and object bytes of the repositories of names.
func statRepos(root string, names []string) (repoStats, error) {
	var commits, bytes atomic.Int64
	err := parallel(len(names), func(i int) error {
		dir := repoDir(root, names[i])
		revs, err := revisionRefs(dir)
		if err != nil {
			return err
		}
		n, err := dirSize(filepath.Join(dir, "objects"))
		commits.Add(int64(len(revs)))
		bytes.Add(n)
		return err
	})
	return repoStats{Commits: int(commits.Load()), Bytes: bytes.Load()}, err
}

// revisionRef is one deployed-packages tag.
type revisionRef struct {
	number int
	tag    string
	commit plumbing.Hash
}

// revisionRefs lists a repository's deployed-packages tags in revision order.
func revisionRefs(dir string) ([]revisionRef, error) {
	repo, err := git.PlainOpen(dir)
	if err != nil {
		return nil, err
	}
	tags, err := repo.Tags()
	if err != nil {
		return nil, err
	}
	var out []revisionRef
	err = tags.ForEach(func(ref *plumbing.Reference) error {
		short := ref.Name().Short()
		if n, err := strconv.Atoi(strings.TrimPrefix(short, deployedPrefix)); err == nil && strings.HasPrefix(short, deployedPrefix) {
			out = append(out, revisionRef{number: n, tag: short, commit: ref.Hash()})
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].number < out[j].number })
	return out, err
}

// revision is one published deployed-packages commit, read back whole.
type revision struct {
	revisionRef
	author, committer object.Signature
	message           string
	files             []file // the commit's whole tree, in path order
}

type file struct {
	path string
	data []byte
}

// readRevisions reads every deployed-packages revision of a repository.
func readRevisions(dir string) ([]revision, error) {
	refs, err := revisionRefs(dir)
	if err != nil {
		return nil, err
	}
	repo, err := git.PlainOpen(dir)
	if err != nil {
		return nil, err
	}
	out := make([]revision, 0, len(refs))
	for _, ref := range refs {
		c, err := repo.CommitObject(ref.commit)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", dir, ref.tag, err)
		}
		files, err := treeFiles(c)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", dir, ref.tag, err)
		}
		out = append(out, revision{revisionRef: ref, author: c.Author, committer: c.Committer, message: c.Message, files: files})
	}
	return out, nil
}

func treeFiles(c *object.Commit) ([]file, error) {
	tree, err := c.Tree()
	if err != nil {
		return nil, err
	}
	var out []file
	err = tree.Files().ForEach(func(f *object.File) error {
		r, err := f.Reader()
		if err != nil {
			return err
		}
		defer r.Close()
		data, err := io.ReadAll(r)
		out = append(out, file{path: f.Name, data: data})
		return err
	})
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, err
}

// latestTree is the root tree of a repository's latest deployed-packages revision (zero if none).
func latestTree(dir string) (plumbing.Hash, error) {
	refs, err := revisionRefs(dir)
	if err != nil || len(refs) == 0 {
		return plumbing.ZeroHash, err
	}
	repo, err := git.PlainOpen(dir)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	c, err := repo.CommitObject(refs[len(refs)-1].commit)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return c.TreeHash, nil
}
