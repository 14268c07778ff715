package ocipkg

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// Resolve finds revision ("vN", or "latest" for the highest N) of package pkg in the OCI
// repository repoURL/pkg, where repoURL is REGISTRY/REPO without a scheme, and returns the
// manifest digest its tag names. Tags that are not vN (latest, v1.2, v01, ...) are ignored:
// "latest" means the highest revision, never a tag of that name. A revision that does not
// exist is an error wrapping pkgrepo.ErrRevisionNotFound (and pkgrepo.ErrPackageNotFound when
// the package has no revision at all) that lists the revisions there are.
func Resolve(ctx context.Context, repoURL, pkg, revision string, opts Options) (Revision, error) {
	want := 0
	if revision != "latest" {
		n, ok := revisionNumber(revision)
		if !ok {
			return Revision{}, fmt.Errorf("invalid revision %q: want v<N> (N from 1, no leading zeros) or latest", revision)
		}
		want = n
	}
	pkg = strings.Trim(pkg, "/")
	if pkg == "" {
		return Revision{}, errors.New("resolve: no package name")
	}
	repo, err := parseRepository(strings.TrimSuffix(repoURL, "/")+"/"+pkg, opts)
	if err != nil {
		return Revision{}, err
	}
	c, err := newClient(ctx, opts)
	if err != nil {
		return Revision{}, fmt.Errorf("resolve %s: %w", repo, err)
	}
	if want == 0 {
		revs, err := c.revisions(repo)
		if err != nil {
			return Revision{}, err
		}
		if len(revs) == 0 {
			return Revision{}, notFound(repo, revision, revs)
		}
		want = revs[len(revs)-1]
	}
	tag := repo.Tag(fmt.Sprintf("v%d", want))
	desc, err := c.head(tag)
	if isNotFound(err) {
		revs, lerr := c.revisions(repo)
		if lerr != nil {
			return Revision{}, lerr
		}
		return Revision{}, notFound(repo, revision, revs)
	}
	if err != nil {
		return Revision{}, c.wrap("resolve", tag.String(), err)
	}
	return Revision{Number: want, Tag: tag.TagStr(), Image: repo.Name(), Digest: desc.Digest.String()}, nil
}

// head returns the descriptor of the manifest tag names.
func (c client) head(tag name.Tag) (*v1.Descriptor, error) {
	desc, err := remote.Head(tag, c.remote...)
	var terr *transport.Error
	if err != nil && !isNotFound(err) && errors.As(err, &terr) &&
		terr.StatusCode != http.StatusUnauthorized && terr.StatusCode != http.StatusForbidden {
		// Some registries answer HEAD on manifests badly; GET is the request every one serves.
		got, gerr := remote.Get(tag, c.remote...)
		if gerr != nil {
			return nil, gerr
		}
		return &got.Descriptor, nil
	}
	return desc, err
}

// revisions lists the N of the repository's vN tags, ascending. A repository the registry does
// not know has none.
func (c client) revisions(repo name.Repository) ([]int, error) {
	tags, err := c.tags(repo)
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, c.wrap("list tags of", repo.String(), err)
	}
	var revs []int
	for _, t := range tags {
		if n, ok := revisionNumber(t); ok {
			revs = append(revs, n)
		}
	}
	sort.Ints(revs)
	return revs, nil
}

// maxTags is how many tags of one package's repository flotilla lists, and maxTagPages in how
// many pages (of tagPageSize asked for; a registry may send fewer): a registry that pages on
// without end, each page within its bound, or empty, is cut here.
const (
	maxTags     = 100_000
	maxTagPages = 1_000
	tagPageSize = 1_000
)

// tags lists the tags of repo, page by page, maxTags at most.
func (c client) tags(repo name.Repository) ([]string, error) {
	p, err := remote.NewPuller(append(c.remote, remote.WithPageSize(tagPageSize))...)
	if err != nil {
		return nil, err
	}
	l, err := p.Lister(c.ctx, repo)
	if err != nil {
		return nil, err
	}
	var tags []string
	for pages := 0; l.HasNext(); pages++ {
		if pages == maxTagPages {
			return nil, fmt.Errorf("%w: the registry lists tags in more than %d pages, the most flotilla reads; flotilla stopped listing", pkgrepo.ErrAnswerTooLarge, maxTagPages)
		}
		page, err := l.Next(c.ctx)
		if err != nil {
			return nil, err
		}
		if tags = append(tags, page.Tags...); len(tags) > maxTags {
			return nil, fmt.Errorf("%w: the registry lists more than %d tags, the most flotilla reads; flotilla stopped listing", pkgrepo.ErrAnswerTooLarge, maxTags)
		}
	}
	return tags, nil
}

func notFound(repo name.Repository, revision string, revs []int) error {
	if len(revs) == 0 {
		return fmt.Errorf("resolve %s: %w: %w: the package has no published revision (no tag v<N>); publish one with flotilla publish DIR --oci %s:v1",
			repo, pkgrepo.ErrPackageNotFound, pkgrepo.ErrRevisionNotFound, repo)
	}
	return fmt.Errorf("resolve %s:%s: %w: the package has %s", repo, revision, pkgrepo.ErrRevisionNotFound, listRevisions(revs))
}

// listRevisions names the revisions there are, the oldest and newest when there are many.
func listRevisions(revs []int) string {
	tags := func(ns []int) string {
		s := make([]string, len(ns))
		for i, n := range ns {
			s[i] = fmt.Sprintf("v%d", n)
		}
		return strings.Join(s, ", ")
	}
	if len(revs) <= 10 {
		return tags(revs)
	}
	return fmt.Sprintf("%s, ..., %s (%d revisions)", tags(revs[:3]), tags(revs[len(revs)-5:]), len(revs))
}
