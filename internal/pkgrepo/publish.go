package pkgrepo

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
)

// Signature is the author of a commit.
type Signature struct {
	Name  string
	Email string
}

// defaultAuthor signs commits whose request names no author.
var defaultAuthor = Signature{Name: "flotilla", Email: "flotilla@flotilla.dev"}

// PublishRequest is the desired content of one package.
type PublishRequest struct {
	// Package is the package path P (repository directory included).
	Package string
	// Files is the complete content of P, by path relative to P. It must
	// contain a Kptfile: without one the revision could not be resolved.
	Files map[string][]byte
	// Message is the commit message; default "Publish P/vN" ("Propose" for
	// proposals).
	Message string
	Author  Signature
	// Proposal pushes branch proposed/P/vN for approval instead of
	// publishing on the branch.
	Proposal bool
	// PackageBase, when set, is the commit the caller read P from to compute
	// Files (a merge with the branch's copy). If P on the branch has changed
	// since, Publish pushes nothing and returns ErrPackageChanged, so the
	// caller merges again instead of overwriting someone's edit.
	PackageBase string
	// DryRun plans the publish against the freshly fetched remote and reports it (the revision,
	// tag and commit it would make), pushing nothing. The commit exists only in the local mirror.
	DryRun bool
	// Rendered, when set, is what flotilla rendered for P before merging it with the branch's
	// copy. It is kept beside the revision, under refs/flotilla/rendered/P (never on a branch, so
	// no agent deploys it), in the same atomic push, as the base of the next 3-way merge (see
	// ReadRendered). For a proposal it is kept beside the proposal
	// (refs/flotilla/proposed-rendered/P/vN) and becomes P's render when the proposal is approved.
	Rendered map[string][]byte
}

// renderedRef is where the render behind P's latest revision is kept.
func renderedRef(pkg string) plumbing.ReferenceName {
	return plumbing.ReferenceName("refs/flotilla/rendered/" + pkg)
}

// proposedRenderedRef is where the render behind proposal P/vN is kept until it is approved.
func proposedRenderedRef(pkg string, n int) plumbing.ReferenceName {
	return plumbing.ReferenceName(fmt.Sprintf("refs/flotilla/proposed-rendered/%s/v%d", pkg, n))
}

// PublishResult is the outcome of Publish or Approve.
type PublishResult struct {
	// Changed is false when nothing was pushed for the content (stale
	// proposal branches may still have been deleted).
	Changed bool
	// Revision, Tag and Commit name the published revision; for a proposal
	// Revision is the N it would get and Tag is empty.
	Revision int
	Tag      string
	Commit   string
	// Branch is the proposal branch; empty for direct publishes.
	Branch string
}

// Publish makes Files the content of Package on the remote's branch as the
// next revision P/vN, or proposes it on branch proposed/P/vN. It writes nothing when the
// content is already there. It builds on the mirror as this process last fetched or pushed it
// when the server takes exact pushes (see update), and fetches first otherwise.
func (s *Store) Publish(ctx context.Context, r Remote, req PublishRequest) (PublishResult, error) {
	pkg, err := cleanPackage(req.Package)
	if err != nil {
		return PublishResult{}, err
	}
	if err := validateFiles(req.Files); err != nil {
		return PublishResult{}, fmt.Errorf("publish %s: %w", pkg, err)
	}
	if req.Rendered != nil {
		if err := validateFiles(req.Rendered); err != nil {
			return PublishResult{}, fmt.Errorf("publish %s: rendered: %w", pkg, err)
		}
	}
	m, ep, unlock, err := s.lock(r)
	if err != nil {
		return PublishResult{}, err
	}
	defer unlock()
	update := func(ctx context.Context, m *mirror, ep endpoint, build func() (plan, error)) (PublishResult, error) {
		// A proposal fetches first: the mirror may not know another proposal waiting there.
		return s.update(ctx, m, ep, req.Proposal, build)
	}
	if req.DryRun {
		update = s.dryRun
	}
	return update(ctx, m, ep, func() (plan, error) {
		c, err := m.prepare(r.branch(), pkg, req.Files)
		if err != nil {
			return plan{}, fmt.Errorf("publish %s to %s: %w", pkg, ep.display, err)
		}
		p, err := s.planPublish(c, req)
		if err != nil {
			return plan{}, fmt.Errorf("publish %s to %s: %w", pkg, ep.display, err)
		}
		if req.Rendered != nil && (!req.Proposal || p.result.Branch != "") {
			ref := renderedRef(pkg)
			if req.Proposal {
				ref = proposedRenderedRef(pkg, p.result.Revision)
			}
			spec, err := s.keepRendered(m, ref, pkg, req.Rendered)
			if err != nil {
				return plan{}, fmt.Errorf("publish %s to %s: %w", pkg, ep.display, err)
			}
			if spec != "" {
				p.refspecs = append(p.refspecs, spec)
			}
		}
		return p, nil
	})
}

// change is a package's desired content laid over the fetched branch.
type change struct {
	m         *mirror
	pkg       string
	branch    string
	base      plumbing.Hash // branch head, zero if the branch does not exist
	tree      plumbing.Hash // root tree of base with P replaced
	oldSub    plumbing.Hash // P in base
	newSub    plumbing.Hash // P as requested
	latest    Revision
	proposals map[int]plumbing.Hash
}

func (m *mirror) prepare(branch, pkg string, files map[string][]byte) (change, error) {
	c := change{m: m, pkg: pkg, branch: branch}
	var err error
	if c.base, err = m.head(branch); err != nil {
		return c, err
	}
	baseTree, err := commitTree(m.repo.Storer, c.base)
	if err != nil {
		return c, err
	}
	if c.oldSub, err = subtree(m.repo.Storer, baseTree, pkg); err != nil {
		return c, err
	}
	if c.newSub, err = buildPackageTree(m.repo.Storer, files); err != nil {
		return c, err
	}
	if c.tree, err = replaceSubtree(m.repo.Storer, baseTree, pkg, c.newSub); err != nil {
		return c, err
	}
	if c.latest, err = m.latest(pkg); err != nil {
		return c, err
	}
	c.proposals, err = m.proposals(pkg)
	return c, err
}

// planPublish decides what Publish pushes for one fetched state.
func (s *Store) planPublish(c change, req PublishRequest) (plan, error) {
	author := req.Author
	if author.Name == "" {
		author.Name = defaultAuthor.Name
	}
	if author.Email == "" {
		author.Email = defaultAuthor.Email
	}
	if req.PackageBase != "" {
		tree, err := commitTree(c.m.repo.Storer, plumbing.NewHash(req.PackageBase))
		if err != nil {
			return plan{}, err
		}
		read, err := subtree(c.m.repo.Storer, tree, c.pkg)
		if err != nil {
			return plan{}, err
		}
		if read != c.oldSub {
			return plan{}, fmt.Errorf("%w: %s changed on the branch since %.12s", ErrPackageChanged, c.pkg, req.PackageBase)
		}
	}
	if c.newSub == c.oldSub {
		if req.Proposal {
			return c.unchanged(), nil
		}
		return c.tagUntagged()
	}
	n := c.latest.Number + 1
	tag := fmt.Sprintf("%s/v%d", c.pkg, n)
	verb := "Publish"
	if req.Proposal {
		if p, ok, err := c.existingProposal(n); ok || err != nil {
			return p, err
		}
		verb = "Propose"
	}
	commit, err := writeCommit(c.m.repo.Storer, c.tree, c.base, message(req.Message, verb, tag), author, s.now())
	if err != nil {
		return plan{}, err
	}
	if req.Proposal {
		// Proposal branches are flotilla's scratch space: force is safe.
		branch := proposalBranch(c.pkg, n)
		specs := append([]config.RefSpec{refspec("+", commit, "refs/heads/"+branch)}, c.deleteProposals(n)...)
		res := PublishResult{Changed: true, Revision: n, Commit: commit.String(), Branch: branch}
		return plan{refspecs: specs, result: res}, nil
	}
	specs := append([]config.RefSpec{
		refspec("", commit, "refs/heads/"+c.branch),
		refspec("", commit, "refs/tags/"+tag),
	}, c.deleteProposals(0)...)
	res := PublishResult{Changed: true, Revision: n, Tag: tag, Commit: commit.String()}
	return plan{refspecs: specs, result: res}, nil
}

// keepRendered returns the refspec that makes refs/flotilla/rendered/P a commit of files, "" when
// it already is one. The ref is flotilla's own bookkeeping: it is forced, never a tag or branch.
func (s *Store) keepRendered(m *mirror, name plumbing.ReferenceName, pkg string, files map[string][]byte) (config.RefSpec, error) {
	sub, err := buildPackageTree(m.repo.Storer, files)
	if err != nil {
		return "", err
	}
	// Laid out as on the branch (the files under P), so one reader serves both.
	tree, err := replaceSubtree(m.repo.Storer, plumbing.ZeroHash, pkg, sub)
	if err != nil {
		return "", err
	}
	var parent plumbing.Hash
	ref, err := m.repo.Storer.Reference(name)
	switch {
	case errors.Is(err, plumbing.ErrReferenceNotFound):
	case err != nil:
		return "", err
	default:
		parent = ref.Hash()
		if old, err := commitTree(m.repo.Storer, parent); err == nil && old == tree {
			return "", nil
		}
	}
	commit, err := writeCommit(m.repo.Storer, tree, parent, "flotilla: render of "+pkg, defaultAuthor, s.now())
	if err != nil {
		return "", err
	}
	return refspec("+", commit, name.String()), nil
}

// ReadRendered returns the render kept with P's latest revision (PublishRequest.Rendered), false
// when there is none. Like Resolve it reads the mirror unless it is stale.
func (s *Store) ReadRendered(ctx context.Context, r Remote, pkg string) (map[string][]byte, bool, error) {
	pkg, err := cleanPackage(pkg)
	if err != nil {
		return nil, false, err
	}
	m, ep, unlock, err := s.lock(r)
	if err != nil {
		return nil, false, err
	}
	defer unlock()
	if err := s.ensureFresh(ctx, m, ep); err != nil {
		return nil, false, err
	}
	ref, err := m.repo.Storer.Reference(renderedRef(pkg))
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", ep.display, err)
	}
	tree, err := commitTree(m.repo.Storer, ref.Hash())
	if err != nil {
		return nil, false, fmt.Errorf("%s: %s: %w", ep.display, renderedRef(pkg), err)
	}
	files, err := readTree(m, tree, pkg)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %s: %w", ep.display, renderedRef(pkg), err)
	}
	return files, true, nil
}

// unchanged reports the latest revision and deletes stale proposals: the
// branch already has the requested content.
func (c change) unchanged() plan {
	res := PublishResult{Revision: c.latest.Number, Tag: c.latest.Tag, Commit: c.latest.Commit}
	return plan{refspecs: c.deleteProposals(0), result: res}
}

// tagUntagged handles a branch that already has the requested content. When
// no tag carries that content (it was committed by hand), it tags the head
// rather than committing nothing, so the caller still gets a revision with
// exactly these files.
func (c change) tagUntagged() (plan, error) {
	if c.latest.Number > 0 {
		sub, err := c.subtreeAt(plumbing.NewHash(c.latest.Commit))
		if err != nil || sub == c.newSub {
			return c.unchanged(), err
		}
	}
	n := c.latest.Number + 1
	tag := fmt.Sprintf("%s/v%d", c.pkg, n)
	specs := append([]config.RefSpec{refspec("", c.base, "refs/tags/"+tag)}, c.deleteProposals(0)...)
	res := PublishResult{Changed: true, Revision: n, Tag: tag, Commit: c.base.String()}
	return plan{refspecs: specs, result: res}, nil
}

// existingProposal returns a plan that keeps proposed/P/vN when it already
// proposes the requested content.
func (c change) existingProposal(n int) (plan, bool, error) {
	h, ok := c.proposals[n]
	if !ok {
		return plan{}, false, nil
	}
	sub, err := c.subtreeAt(h)
	if err != nil || sub != c.newSub {
		return plan{}, false, err
	}
	res := PublishResult{Revision: n, Commit: h.String(), Branch: proposalBranch(c.pkg, n)}
	return plan{refspecs: c.deleteProposals(n), result: res}, true, nil
}

// subtreeAt returns P in commit h.
func (c change) subtreeAt(h plumbing.Hash) (plumbing.Hash, error) {
	tree, err := commitTree(c.m.repo.Storer, h)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return subtree(c.m.repo.Storer, tree, c.pkg)
}

// deleteProposals returns refspecs deleting every proposal branch of P but
// proposed/P/v<keep>, in a stable order.
func (c change) deleteProposals(keep int) []config.RefSpec {
	var specs []config.RefSpec
	for n := range c.proposals {
		if n != keep {
			specs = append(specs, config.RefSpec(":refs/heads/"+proposalBranch(c.pkg, n)))
		}
	}
	sort.Slice(specs, func(i, j int) bool { return specs[i] < specs[j] })
	return specs
}

func proposalBranch(pkg string, n int) string {
	return fmt.Sprintf("proposed/%s/v%d", pkg, n)
}

func refspec(force string, h plumbing.Hash, dst string) config.RefSpec {
	return config.RefSpec(force + h.String() + ":" + dst)
}

func message(msg, verb, tag string) string {
	if msg != "" {
		return msg
	}
	return verb + " " + tag
}
