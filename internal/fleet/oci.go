package fleet

import (
	"context"
	"fmt"
	"strings"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/gitremote"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
	"github.com/flotilla-dev/flotilla/internal/render"
)

// Registry resolves package revisions in OCI repositories: pkg is the package name under the
// remote's REGISTRY/REPO, the revision's Tag is vN and its Commit the manifest digest.
type Registry interface {
	Resolve(ctx context.Context, r pkgrepo.Remote, pkg, revision string) (pkgrepo.Revision, error)
}

// Sources is the git store with OCI repositories resolved through a registry client: what the
// controller and `flotilla render` pass where fleet wants a Git. Everything but Resolve is git
// only, and the store refuses an OCI remote (pkgrepo.ErrNotGit).
type Sources struct {
	*pkgrepo.Store
	Registry Registry
}

// Resolve resolves in the registry for an OCI remote, in git otherwise.
func (s Sources) Resolve(ctx context.Context, r pkgrepo.Remote, pkg, revision string) (pkgrepo.Revision, error) {
	if !r.OCI {
		return s.Store.Resolve(ctx, r, pkg, revision)
	}
	if s.Registry == nil {
		return pkgrepo.Revision{}, fmt.Errorf("%w: %s is an OCI repository, and this flotilla has no registry client", pkgrepo.ErrNotGit, r.URL)
	}
	return s.Registry.Resolve(ctx, r, pkg, revision)
}

// ociResolved is the pin of revision rev of OCI package pkg of repo, which remote reaches: tag
// PKG:vN, the manifest digest as its commit, the artifact repository REGISTRY/REPO/PKG as its
// image.
func ociResolved(repo *v1alpha1.Repository, remote pkgrepo.Remote, pkg string, rev pkgrepo.Revision) v1alpha1.ResolvedRevision {
	return v1alpha1.ResolvedRevision{
		Repository: repo.Name,
		Revision:   rev.Number,
		Tag:        pkg + ":" + rev.Tag,
		Commit:     rev.Commit,
		Directory:  "/" + pkg,
		Image:      strings.TrimSuffix(remote.URL, "/") + "/" + pkg,
	}
}

// NewPin is deployment pd's pin of revision resolved, read from repo: the address the cluster's
// agent reads a git repository at, or, for an OCI repository, whether it may use plain HTTP.
func NewPin(pd *v1alpha1.PackageDeployment, repo *v1alpha1.Repository, resolved v1alpha1.ResolvedRevision) render.Pin {
	p := render.Pin{Deployment: pd, RepoURL: gitremote.SyncURL(repo), Branch: gitremote.Branch(repo), Resolved: resolved}
	if repo.Spec.OCI != nil {
		p.Branch, p.Insecure = "", repo.Spec.OCI.Insecure
	}
	return p
}
