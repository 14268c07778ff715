package offline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/flotilla-dev/flotilla/internal/giturl"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// Preview is a Git that pushes nothing: each publish is planned against the remote
// (pkgrepo.PublishRequest.DryRun) and recorded, and later reads of the run see what it would have
// published, so a set's deployments resolve the variant revisions it would have made. flotilla
// render --dry-run and flotilla diff run through it.
type Preview struct {
	Git

	mu      sync.Mutex
	would   map[string]pkgrepo.Revision // remote, package and revision → the revision it would be
	changes []Change
}

// Change is one package a run would write.
type Change struct {
	// Repository is the remote's URL, without credentials; Package the package path.
	Repository, Package string
	// Revision is the revision (or, for a proposal, the branch) it would make.
	Revision string
	// Before is the package on the branch now (nil when it does not exist), After what it would be.
	Before, After map[string][]byte
}

// NewPreview wraps git.
func NewPreview(git Git) *Preview {
	return &Preview{Git: git, would: map[string]pkgrepo.Revision{}}
}

func previewKey(r pkgrepo.Remote, pkg, revision string) string {
	return r.URL + "\x00" + r.Branch + "\x00" + pkg + "\x00" + revision
}

// Publish plans req without pushing and records what would change.
func (p *Preview) Publish(ctx context.Context, r pkgrepo.Remote, req pkgrepo.PublishRequest) (pkgrepo.PublishResult, error) {
	before, err := p.current(ctx, r, req.Package)
	if err != nil {
		return pkgrepo.PublishResult{}, err
	}
	req.DryRun = true
	res, err := p.Git.Publish(ctx, r, req)
	if err != nil || !res.Changed {
		return res, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	rev := pkgrepo.Revision{Package: req.Package, Number: res.Revision, Tag: res.Tag, Commit: res.Commit}
	name := res.Tag
	if res.Branch != "" {
		name = res.Branch
	} else {
		p.would[previewKey(r, req.Package, fmt.Sprintf("v%d", res.Revision))] = rev
		p.would[previewKey(r, req.Package, "latest")] = rev
	}
	p.changes = append(p.changes, Change{Repository: giturl.Redact(r.URL), Package: req.Package, Revision: name, Before: before, After: req.Files})
	return res, nil
}

// Approve records the approved proposal's content as what would be published, pushing nothing.
func (p *Preview) Approve(ctx context.Context, r pkgrepo.Remote, pkg string, number int, commit string) (pkgrepo.PublishResult, error) {
	before, err := p.current(ctx, r, pkg)
	if err != nil {
		return pkgrepo.PublishResult{}, err
	}
	after, err := p.ReadPackage(ctx, r, pkg, commit)
	if err != nil {
		return pkgrepo.PublishResult{}, err
	}
	res := pkgrepo.PublishResult{Changed: true, Revision: number, Tag: fmt.Sprintf("%s/v%d", pkg, number), Commit: commit}
	p.mu.Lock()
	defer p.mu.Unlock()
	rev := pkgrepo.Revision{Package: pkg, Number: number, Tag: res.Tag, Commit: commit}
	p.would[previewKey(r, pkg, fmt.Sprintf("v%d", number))] = rev
	p.would[previewKey(r, pkg, "latest")] = rev
	p.changes = append(p.changes, Change{Repository: giturl.Redact(r.URL), Package: pkg, Revision: res.Tag + " (approved)", Before: before, After: after})
	return res, nil
}

// current is the package on the remote's branch, nil when there is none.
func (p *Preview) current(ctx context.Context, r pkgrepo.Remote, pkg string) (map[string][]byte, error) {
	snap, err := p.Refresh(ctx, r)
	if err != nil || snap.Head == "" {
		return nil, err
	}
	files, err := p.ReadPackage(ctx, r, pkg, snap.Head)
	if errors.Is(err, pkgrepo.ErrPackageNotFound) {
		return nil, nil
	}
	return files, err
}

// Resolve answers a revision this run would have published as it would be.
func (p *Preview) Resolve(ctx context.Context, r pkgrepo.Remote, pkg, revision string) (pkgrepo.Revision, error) {
	p.mu.Lock()
	rev, ok := p.would[previewKey(r, pkg, revision)]
	p.mu.Unlock()
	if ok {
		return rev, nil
	}
	return p.Git.Resolve(ctx, r, pkg, revision)
}

// Latest answers with a revision this run would have published, when there is one.
func (p *Preview) Latest(ctx context.Context, r pkgrepo.Remote, pkg string) (pkgrepo.Revision, bool, error) {
	p.mu.Lock()
	rev, ok := p.would[previewKey(r, pkg, "latest")]
	p.mu.Unlock()
	if ok {
		return rev, true, nil
	}
	return p.Git.Latest(ctx, r, pkg)
}

// Changes lists what the run would write, in the order it would.
func (p *Preview) Changes() []Change {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.changes)
}

// FileDiff is the unified diff of one file of a change.
type FileDiff struct {
	Repository string `json:"repository"`
	Package    string `json:"package"`
	Revision   string `json:"revision"`
	File       string `json:"file"`
	Diff       string `json:"diff"`
}

// Diffs are the changes file by file, each as a unified diff.
func Diffs(changes []Change) ([]FileDiff, error) {
	var out []FileDiff
	for _, c := range changes {
		names := map[string]bool{}
		for n := range c.Before {
			names[n] = true
		}
		for n := range c.After {
			names[n] = true
		}
		for _, n := range slices.Sorted(maps.Keys(names)) {
			before, after := string(c.Before[n]), string(c.After[n])
			if before == after {
				continue
			}
			from, to := "a/"+c.Package+"/"+n, "b/"+c.Package+"/"+n
			if _, ok := c.Before[n]; !ok {
				from = "/dev/null"
			}
			if _, ok := c.After[n]; !ok {
				to = "/dev/null"
			}
			text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
				A: lines(before), B: lines(after),
				FromFile: from, ToFile: to, Context: 3,
			})
			if err != nil {
				return nil, err
			}
			out = append(out, FileDiff{Repository: c.Repository, Package: c.Package, Revision: c.Revision, File: n, Diff: ensureNewline(text)})
		}
	}
	return out, nil
}

// WriteDiff writes a unified diff of every change, file by file.
func WriteDiff(w io.Writer, changes []Change) error {
	diffs, err := Diffs(changes)
	if err != nil {
		return err
	}
	for _, d := range diffs {
		if _, err := fmt.Fprintf(w, "# %s %s (%s)\n%s", d.Repository, d.Package, d.Revision, d.Diff); err != nil {
			return err
		}
	}
	return nil
}

// lines splits s into lines that keep their newline; nothing for an empty s.
func lines(s string) []string {
	if s == "" {
		return nil
	}
	out := strings.SplitAfter(s, "\n")
	if out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

func ensureNewline(s string) string {
	if s != "" && !strings.HasSuffix(s, "\n") {
		return s + "\n"
	}
	return s
}
