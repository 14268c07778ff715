package bench

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"
)

// fastImportResult is git fast-import writing the trees flotilla published.
type fastImportResult struct {
	Repos   int
	Commits int
	Time    time.Duration // wall time of the fast-import processes, GOMAXPROCS at a time
	Bytes   int64
	// Identical counts the repositories whose tags name exactly the commits flotilla wrote: same
	// trees, parents, authors, dates and messages, so the same objects.
	Identical int
}

// fastImport reads back every deployed-packages revision of the cluster repositories under src
// and writes them with one `git fast-import` per repository into fresh bare repositories under
// dst. Only the fast-import processes are timed; reading back and building the streams are not.
// They run with core.fsync=none: the few objects of each of flotilla's pushes are unpacked into
// loose objects by git receive-pack, which git does not fsync either, while fast-import would
// fsync its pack.
func fastImport(ctx context.Context, src, dst string, names []string) (fastImportResult, error) {
	streams := make([][]byte, len(names))
	want := make([][]revisionRef, len(names))
	err := parallel(len(names), func(i int) error {
		revs, err := readRevisions(repoDir(src, names[i]))
		for _, r := range revs {
			want[i] = append(want[i], r.revisionRef)
		}
		streams[i] = importStream(revs)
		return err
	})
	if err != nil {
		return fastImportResult{}, err
	}
	if err := initRepos(dst, names); err != nil {
		return fastImportResult{}, err
	}
	start := time.Now()
	err = parallel(len(names), func(i int) error {
		cmd := exec.CommandContext(ctx, "git", "-c", "core.fsync=none", "--git-dir", repoDir(dst, names[i]), "fast-import", "--quiet")
		cmd.Stdin = bytes.NewReader(streams[i])
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git fast-import into %s: %w\n%s", names[i], err, out)
		}
		return nil
	})
	res := fastImportResult{Repos: len(names), Time: time.Since(start)}
	if err != nil {
		return res, err
	}
	stats, err := statRepos(dst, names)
	res.Commits, res.Bytes = stats.Commits, stats.Bytes
	if err != nil {
		return res, err
	}
	var identical atomic.Int64
	err = parallel(len(names), func(i int) error {
		got, err := revisionRefs(repoDir(dst, names[i]))
		if slices.Equal(got, want[i]) {
			identical.Add(1)
		}
		return err
	})
	res.Identical = int(identical.Load())
	return res, err
}

// importStream is a fast-import stream with one commit per revision on main, each holding the
// revision's whole tree, and its tag.
func importStream(revs []revision) []byte {
	var b bytes.Buffer
	for i, r := range revs {
		fmt.Fprintf(&b, "commit refs/heads/main\nmark :%d\n", i+1)
		fmt.Fprintf(&b, "author %s\ncommitter %s\n", ident(r.author), ident(r.committer))
		fmt.Fprintf(&b, "data %d\n%s\n", len(r.message), r.message)
		b.WriteString("deleteall\n")
		for _, f := range r.files {
			fmt.Fprintf(&b, "M 100644 inline %s\ndata %d\n", f.path, len(f.data))
			b.Write(f.data)
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "\nreset refs/tags/%s\nfrom :%d\n\n", r.tag, i+1)
	}
	b.WriteString("done\n")
	return b.Bytes()
}

func ident(s object.Signature) string {
	name := strings.NewReplacer("<", "", ">", "", "\n", " ").Replace(s.Name)
	return fmt.Sprintf("%s <%s> %d %s", name, s.Email, s.When.Unix(), s.When.Format("-0700"))
}
