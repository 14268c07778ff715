package pkgrepo

import (
	"context"
	"fmt"

	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Approve publishes proposal proposed/pkg/v<number> as revision pkg/v<number>
// on the remote's branch and deletes the proposal branch, in one push.
// commit is the proposal head the user approved (required: an approval names
// the content it approves): if the branch moved since, nothing is published
// (ErrProposalChanged). The
// proposal's package content is laid over the current branch head, so
// commits made on the branch after the proposal are kept.
func (s *Store) Approve(ctx context.Context, r Remote, pkg string, number int, commit string) (PublishResult, error) {
	pkg, err := cleanPackage(pkg)
	if err != nil {
		return PublishResult{}, err
	}
	if number < 1 {
		return PublishResult{}, fmt.Errorf("approve %s: invalid revision %d", pkg, number)
	}
	if !plumbing.IsHash(commit) {
		return PublishResult{}, fmt.Errorf("approve %s: invalid commit %q", pkg, commit)
	}
	m, ep, unlock, err := s.lock(r)
	if err != nil {
		return PublishResult{}, err
	}
	defer unlock()
	branch := proposalBranch(pkg, number)
	return s.update(ctx, m, ep, true, func() (plan, error) {
		p, err := s.planApprove(m, r.branch(), pkg, number, commit)
		if err != nil {
			return plan{}, fmt.Errorf("approve %s in %s: %w", branch, ep.display, err)
		}
		return p, nil
	})
}

func (s *Store) planApprove(m *mirror, branch, pkg string, number int, want string) (plan, error) {
	proposals, err := m.proposals(pkg)
	if err != nil {
		return plan{}, err
	}
	prop, ok := proposals[number]
	if !ok {
		return plan{}, ErrProposalNotFound
	}
	if prop.String() != want {
		return plan{}, fmt.Errorf("%w: it is at %s, not %s", ErrProposalChanged, prop, want)
	}
	revs, err := m.revisions(pkg)
	if err != nil {
		return plan{}, err
	}
	tag := fmt.Sprintf("%s/v%d", pkg, number)
	if _, ok := revs[number]; ok {
		return plan{}, fmt.Errorf("%w: %s", ErrTagExists, tag)
	}
	if n := highest(revs); n > number {
		return plan{}, fmt.Errorf("%w: %s/v%d is newer than the proposal", ErrTagExists, pkg, n)
	}

	head, err := m.head(branch)
	if err != nil {
		return plan{}, err
	}
	pc, err := getCommit(m.repo.Storer, prop)
	if err != nil {
		return plan{}, err
	}
	publish, err := s.approvedCommit(m, pkg, head, pc)
	if err != nil {
		return plan{}, err
	}
	var specs []config.RefSpec
	if publish != head {
		specs = append(specs, refspec("", publish, "refs/heads/"+branch))
	}
	specs = append(specs,
		refspec("", publish, "refs/tags/"+tag),
		config.RefSpec(":refs/heads/"+proposalBranch(pkg, number)),
	)
	// The render behind the proposal becomes the package's: the base of its next 3-way merge.
	if ref, err := m.repo.Storer.Reference(proposedRenderedRef(pkg, number)); err == nil {
		specs = append(specs, refspec("+", ref.Hash(), renderedRef(pkg).String()), config.RefSpec(":"+proposedRenderedRef(pkg, number).String()))
	}
	res := PublishResult{Changed: true, Revision: number, Tag: tag, Commit: publish.String()}
	return plan{refspecs: specs, result: res}, nil
}

// approvedCommit returns the commit to publish: the proposal itself when it
// sits directly on head (a fast-forward), head when head already has the
// proposal's package content, else a new commit on head with the proposal's
// package directory, message and author.
func (s *Store) approvedCommit(m *mirror, pkg string, head plumbing.Hash, pc *object.Commit) (plumbing.Hash, error) {
	parents := pc.ParentHashes
	if (len(parents) == 1 && parents[0] == head) || (len(parents) == 0 && head.IsZero()) {
		return pc.Hash, nil
	}
	sub, err := subtree(m.repo.Storer, pc.TreeHash, pkg)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	headTree, err := commitTree(m.repo.Storer, head)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	tree, err := replaceSubtree(m.repo.Storer, headTree, pkg, sub)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if tree == headTree && !head.IsZero() {
		return head, nil
	}
	author := Signature{Name: pc.Author.Name, Email: pc.Author.Email}
	return writeCommit(m.repo.Storer, tree, head, pc.Message, author, s.now())
}
