// Package fleet is what the controller and `flotilla render` share: resolving a deployment to an
// exact package revision, and publishing (or proposing) a cluster's deployed-packages. It talks
// to git through the small Git interface and knows nothing of the Kubernetes API.
package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
	"github.com/flotilla-dev/flotilla/internal/render"
)

// ErrRender is wrapped by errors in the deployments themselves (a dependency cycle, an unknown
// engine): fixing them needs the user, retrying does not help.
var ErrRender = errors.New("cannot render deployed-packages")

// Git is the part of pkgrepo.Store that fleet uses.
type Git interface {
	Resolve(ctx context.Context, r pkgrepo.Remote, pkg, revision string) (pkgrepo.Revision, error)
	Publish(ctx context.Context, r pkgrepo.Remote, req pkgrepo.PublishRequest) (pkgrepo.PublishResult, error)
	Approve(ctx context.Context, r pkgrepo.Remote, pkg string, number int, commit string) (pkgrepo.PublishResult, error)
}

// Branch is the part of pkgrepo.Store that reads a cluster repository's branch.
type Branch interface {
	Latest(ctx context.Context, r pkgrepo.Remote, pkg string) (pkgrepo.Revision, bool, error)
	ReadPackage(ctx context.Context, r pkgrepo.Remote, pkg, commit string) (map[string][]byte, error)
}

// Current reads the latest deployed-packages revision published at pkg, and the pins it carries,
// from the branch as the mirror holds it: nil when there is none. It is what is deployed when
// nothing else says so (`flotilla render`, which keeps no status, and a controller whose cluster
// status was lost).
func Current(ctx context.Context, git Branch, remote pkgrepo.Remote, pkg string) (*v1alpha1.DeployedPackagesStatus, error) {
	rev, ok, err := git.Latest(ctx, remote, pkg)
	if err != nil || !ok {
		return nil, err
	}
	files, err := git.ReadPackage(ctx, remote, pkg, rev.Commit)
	if err != nil {
		return nil, err
	}
	return &v1alpha1.DeployedPackagesStatus{Revision: rev.Number, Tag: rev.Tag, Commit: rev.Commit, Packages: render.ParsePins(files)}, nil
}

// Resolve resolves the package revision pd asks for in repo, which remote reaches. The result
// is checked against the pins pd has (see Unmoved): status.resolved, and the pin published carries
// for pd (published is the cluster's current revision, nil when there is none or it is unknown),
// which may be newer than what the deployment reported.
func Resolve(ctx context.Context, git Git, remote pkgrepo.Remote, repo *v1alpha1.Repository, pd *v1alpha1.PackageDeployment, published *v1alpha1.DeployedPackagesStatus) (v1alpha1.ResolvedRevision, error) {
	var pkg string
	if repo.Spec.Git != nil {
		pkg = render.PackagePath(repo.Spec.Git.Directory, pd.Spec.Package.Name)
	} else {
		pkg = strings.Trim(pd.Spec.Package.Name, "/")
	}
	rev, err := git.Resolve(ctx, remote, pkg, pd.Spec.Package.Revision)
	if err != nil {
		return v1alpha1.ResolvedRevision{}, err
	}
	next := v1alpha1.ResolvedRevision{
		Repository: repo.Name,
		Revision:   rev.Number,
		Tag:        rev.Tag,
		Commit:     rev.Commit,
		Directory:  "/" + pkg,
	}
	if repo.Spec.OCI != nil {
		next = ociResolved(repo, remote, pkg, rev)
	}
	// Checked against every pin known: the deployment's own (maybe of an older generation) and
	// the one the cluster published for it (maybe newer, not reported yet).
	for _, prev := range []*v1alpha1.ResolvedRevision{pd.Status.Resolved, PublishedPin(published, pd.Name, repo.Name)} {
		if err := Unmoved(prev, next, pd.Spec.Package.Revision); err != nil {
			return v1alpha1.ResolvedRevision{}, err
		}
	}
	return next, nil
}

// PublishedPin is what published tells of deployment's pin: its tag, and the revision and
// directory the tag names (not its commit, which deployed-packages does not record). nil when
// published does not carry deployment.
func PublishedPin(published *v1alpha1.DeployedPackagesStatus, deployment, repository string) *v1alpha1.ResolvedRevision {
	for _, p := range pinsOf(published) {
		if p.Deployment != deployment {
			continue
		}
		base, rev := SplitTag(p.Tag)
		number, err := strconv.Atoi(strings.TrimPrefix(rev, "v"))
		if rev == "" || err != nil {
			return nil
		}
		return &v1alpha1.ResolvedRevision{Repository: repository, Revision: number, Tag: p.Tag, Directory: "/" + base[:len(base)-1]}
	}
	return nil
}

// AtPublished is pd asking for the revision published carries for it (the vN of its tag): what a
// suspended deployment, which keeps the pin it has, resolves when it has none of its own. nil when
// published does not carry pd.
func AtPublished(pd *v1alpha1.PackageDeployment, published *v1alpha1.DeployedPackagesStatus) *v1alpha1.PackageDeployment {
	_, rev := SplitTag(PublishedTag(published, pd.Name))
	if rev == "" {
		return nil
	}
	pd = pd.DeepCopy()
	pd.Spec.Package.Revision = rev
	return pd
}

// SplitTag splits a package revision's tag into its base, the package path and separator
// ("free5gc-upf/" for git's pkg/vN, "upf:" for OCI's PKG:vN), and the revision ("vN"). A tag of
// neither form gives "", "".
func SplitTag(tag string) (base, revision string) {
	i := max(strings.LastIndex(tag, "/v"), strings.LastIndex(tag, ":v"))
	if i < 0 || i+2 >= len(tag) || strings.Trim(tag[i+2:], "0123456789") != "" {
		return "", ""
	}
	return tag[:i+1], tag[i+1:]
}

// Unmoved checks a new resolution of a deployment against the pin it had (prev, nil when it had
// none): catalog tags are immutable to flotilla. A tag that now names another commit than when it
// was pinned is ErrTagMoved, and "latest" that would go back to a lower revision (the pinned
// revision's tag is gone) is ErrRevisionNotFound: the caller keeps prev, and a person decides.
// A pin from another repository or package directory is not compared: that is a new deployment.
func Unmoved(prev *v1alpha1.ResolvedRevision, next v1alpha1.ResolvedRevision, revision string) error {
	if prev == nil || prev.Repository != next.Repository || prev.Directory != next.Directory {
		return nil
	}
	switch {
	case prev.Tag == next.Tag && prev.Commit != "" && prev.Commit != next.Commit:
		return fmt.Errorf("%w: tag %s was commit %s when it was pinned and is now commit %s; flotilla never follows a moved tag. "+
			"Move the tag back, or publish the change as a new revision and deploy that", pkgrepo.ErrTagMoved, next.Tag, prev.Commit, next.Commit)
	case revision == "latest" && next.Revision < prev.Revision:
		return fmt.Errorf("%w: latest is now %s (commit %s), older than the pinned %s (commit %s), whose tag is gone; "+
			"latest never goes back: set spec.package.revision to v%d to deploy it", pkgrepo.ErrRevisionNotFound,
			next.Tag, next.Commit, prev.Tag, prev.Commit, next.Revision)
	}
	return nil
}

// Outcome is what publishing a cluster's deployed-packages did.
type Outcome struct {
	// Published is the deployed-packages revision on the branch (nil when there is none yet).
	Published *v1alpha1.DeployedPackagesStatus
	// Proposal is the change waiting for approval (Manual only).
	Proposal *v1alpha1.ProposalStatus
	// Changes lists what the latest write changed (empty when nothing was written).
	Changes []render.Change
	// Approved is true when this call published an approved proposal.
	Approved bool
	// Approval is the verdict on the cluster's flotilla.dev/approve annotation (Manual only).
	Approval ApprovalDecision
	// Wrote is true when a commit was pushed (a revision or a proposal).
	Wrote bool
}

// Rendered is a cluster's deployed-packages, rendered from its pins.
type Rendered struct {
	render.Package
	// Digest identifies what Publish would write for the cluster: equal digests, equal trees. The
	// controller uses it to skip a git round trip when nothing it would write has changed.
	Digest string
	// Held maps each deployment left out for a dependency without a pin to that dependency.
	Held map[string]string
}

// Kept returns the pins that are not held back (Held).
func (r Rendered) Kept(pins []render.Pin) []render.Pin {
	if len(r.Held) == 0 {
		return pins
	}
	var out []render.Pin
	for _, p := range pins {
		if _, held := r.Held[p.Deployment.Name]; !held {
			out = append(out, p)
		}
	}
	return out
}

// Render renders the cluster's deployed-packages from pins, for clusterRepo. published is the
// cluster's current revision (nil if none): a deployment whose dependsOn names one without a pin
// here is held back until it has one, unless published already carries it (see Hold).
func Render(cluster *v1alpha1.WorkloadCluster, clusterRepo *v1alpha1.Repository, pins []render.Pin, published *v1alpha1.DeployedPackagesStatus) (Rendered, error) {
	// What the engine refuses is left out first: a dependency on it has no pin either.
	var accepted []render.Pin
	for _, p := range pins {
		if render.Accepts(cluster, p.Deployment) == nil {
			accepted = append(accepted, p)
		}
	}
	pins, held := Hold(accepted, published)
	pkg, err := render.DeployedPackages(cluster, pins)
	if err != nil {
		return Rendered{}, fmt.Errorf("%w: %w", ErrRender, err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", clusterRepo.Spec.Git.URL, clusterRepo.Spec.Git.Branch, render.ClusterPackagePath(cluster, clusterRepo))
	for _, name := range slices.Sorted(maps.Keys(pkg.Files)) {
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(pkg.Files[name]))
		h.Write(pkg.Files[name])
	}
	return Rendered{Package: pkg, Digest: hex.EncodeToString(h.Sum(nil)), Held: held}, nil
}

// Hold leaves out of pins each deployment whose dependsOn names a deployment without a pin among
// them (it does not exist, is on another cluster, or is not resolved yet), and, in turn, those
// that depend on a deployment left out: publishing it would drop the ordering the user asked for.
// A deployment that published already carries stays (its dependency went away later: undeploying
// it would be worse than losing the order). held maps each deployment left out to the dependency
// it waits for.
func Hold(pins []render.Pin, published *v1alpha1.DeployedPackagesStatus) (kept []render.Pin, held map[string]string) {
	live := map[string]bool{}
	for _, p := range pinsOf(published) {
		live[p.Deployment] = true
	}
	in := map[string]bool{}
	for _, p := range pins {
		in[p.Deployment.Name] = true
	}
	for changed := true; changed; {
		changed = false
		for _, p := range pins {
			name := p.Deployment.Name
			if !in[name] || live[name] {
				continue
			}
			for _, d := range p.Deployment.Spec.DependsOn {
				if !in[d.Name] {
					if held == nil {
						held = map[string]string{}
					}
					in[name], held[name], changed = false, d.Name, true
					break
				}
			}
		}
	}
	for _, p := range pins {
		if in[p.Deployment.Name] {
			kept = append(kept, p)
		}
	}
	return kept, held
}

// Errors of CheckDependencies.
var (
	ErrDependencyNotFound     = errors.New("dependency not found")
	ErrDependencyOtherCluster = errors.New("dependency on another cluster")
)

// CheckDependencies checks that every deployment pd's dependsOn names exists (get returns nil,
// nil for one that does not) and is on pd's cluster: anything else could never be ordered, and
// would be held back forever (see Hold).
func CheckDependencies(pd *v1alpha1.PackageDeployment, get func(name string) (*v1alpha1.PackageDeployment, error)) error {
	for _, d := range pd.Spec.DependsOn {
		if d.Name == pd.Name {
			return fmt.Errorf("%w: dependsOn names the deployment itself", ErrDependencyNotFound)
		}
		dep, err := get(d.Name)
		switch {
		case err != nil:
			return err
		case dep == nil:
			return fmt.Errorf("%w: dependsOn names %s, which does not exist in namespace %s: create it or fix spec.dependsOn",
				ErrDependencyNotFound, d.Name, pd.Namespace)
		case dep.Spec.Cluster.Name != pd.Spec.Cluster.Name:
			return fmt.Errorf("%w: dependsOn names %s, which deploys to cluster %s, not %s: dependsOn orders the deployments of one cluster",
				ErrDependencyOtherCluster, d.Name, dep.Spec.Cluster.Name, pd.Spec.Cluster.Name)
		}
	}
	return nil
}

// Publish publishes the cluster's rendered deployed-packages (see Render) on the cluster
// repository's branch (Automatic) or proposes it (Manual), publishing a pending proposal first when
// the cluster's flotilla.dev/approve annotation names its commit (see DecideApproval). An approval
// that is outdated or invalid publishes nothing; Outcome.Approval says why. published is the
// cluster's current revision (nil if unknown); proposal its pending proposal.
func Publish(ctx context.Context, git Git, remote pkgrepo.Remote, cluster *v1alpha1.WorkloadCluster, clusterRepo *v1alpha1.Repository,
	pkg Rendered, published *v1alpha1.DeployedPackagesStatus, proposal *v1alpha1.ProposalStatus) (Outcome, error) {
	path := render.ClusterPackagePath(cluster, clusterRepo)
	out := Outcome{Published: published, Proposal: proposal}

	manual := cluster.Spec.Approval == v1alpha1.ApprovalManual
	approval := cluster.Annotations[v1alpha1.AnnotationApprove]
	if manual && DecideApproval(cluster.Name, approval, proposal, published).State == Approved {
		// The commit is checked again against the branch, in the same push that publishes it.
		res, err := git.Approve(ctx, remote, path, proposal.Revision, proposal.Commit)
		if err != nil {
			return out, fmt.Errorf("approve %s: %w", proposal.Branch, err)
		}
		out.Changes = render.Diff(pinsOf(published), proposal.Packages)
		out.Published = &v1alpha1.DeployedPackagesStatus{Revision: res.Revision, Tag: res.Tag, Commit: res.Commit,
			ApprovedCommit: proposal.Commit, Packages: proposal.Packages}
		out.Proposal, out.Approved, out.Wrote = nil, true, true
	}

	changes := render.Diff(pinsOf(out.Published), pkg.Pins)
	res, err := git.Publish(ctx, remote, pkgrepo.PublishRequest{
		Package:  path,
		Files:    pkg.Files,
		Message:  fmt.Sprintf("%s for cluster %s: %s", render.PackageName(cluster), cluster.Name, render.Summary(changes)),
		Proposal: manual,
	})
	if err != nil {
		return out, err
	}
	switch {
	case manual && res.Branch != "":
		out.Proposal = &v1alpha1.ProposalStatus{Revision: res.Revision, Branch: res.Branch, Commit: res.Commit, Summary: render.Summary(changes), Packages: pkg.Pins}
	case res.Tag != "":
		out.Proposal = nil
		var approved string
		if out.Published != nil && out.Published.Tag == res.Tag {
			approved = out.Published.ApprovedCommit // the same revision: it stays the approved one
		}
		out.Published = &v1alpha1.DeployedPackagesStatus{Revision: res.Revision, Tag: res.Tag, Commit: res.Commit, ApprovedCommit: approved, Packages: pkg.Pins}
	}
	if res.Changed {
		out.Changes, out.Wrote = changes, true
	}
	if manual {
		// Judged against what is pending now, so the message names the commit to approve next.
		out.Approval = DecideApproval(cluster.Name, approval, out.Proposal, out.Published)
	}
	return out, nil
}

func pinsOf(p *v1alpha1.DeployedPackagesStatus) []v1alpha1.PublishedPin {
	if p == nil {
		return nil
	}
	return p.Packages
}
