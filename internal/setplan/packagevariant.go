package setplan

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/fleet"
	"github.com/flotilla-dev/flotilla/internal/generate"
	"github.com/flotilla-dev/flotilla/internal/gitremote"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
	"github.com/flotilla-dev/flotilla/internal/render"
	"github.com/flotilla-dev/flotilla/internal/specialize"
	"github.com/flotilla-dev/flotilla/internal/variant"
)

// VariantReader is what planning a PackageVariant reads besides git.
type VariantReader interface {
	Repository(ctx context.Context, namespace, name string) (*v1alpha1.Repository, error)
	Remote(ctx context.Context, repo *v1alpha1.Repository) (pkgrepo.Remote, error)
	ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	// Variant reads another PackageVariant of the namespace (nil when it does not exist).
	Variant(ctx context.Context, namespace, name string) (*v1alpha1.PackageVariant, error)
}

// Errors of PlanVariant that a condition names.
var (
	// ErrUpstreamNotReady: the upstream variant does not exist or has published nothing yet.
	ErrUpstreamNotReady = errors.New("upstream variant not published")
	// ErrVariantCycle: following spec.upstream.variant comes back to the variant.
	ErrVariantCycle = errors.New("variant cycle")
)

// maxChain bounds how many layers of variants are followed upstream.
const maxChain = 32

// VariantPlan is what a PackageVariant rendered and published.
type VariantPlan struct {
	// Upstream, Downstream and Lineage are the published revision and where it comes from (the
	// previous ones when nothing is published yet and a proposal waits).
	Upstream   *v1alpha1.ResolvedRevision
	Downstream *v1alpha1.ResolvedRevision
	Lineage    []v1alpha1.LineageEntry
	// Changed is true when a new downstream revision was published.
	Changed bool
	// Proposal is the revision waiting for approval (approval Manual), nil when none waits.
	Proposal *v1alpha1.VariantProposal
	// ApprovedCommit is the proposal commit whose approval published Downstream.
	ApprovedCommit string
	// Approval is the verdict on the flotilla.dev/approve annotation (approval Manual).
	Approval fleet.ApprovalDecision
}

// ApproveCommand is how a person approves pv's pending proposal, for messages.
func ApproveCommand(pv *v1alpha1.PackageVariant, commit string) string {
	return fmt.Sprintf("kubectl annotate packagevariant %s -n %s --overwrite %s=%s", pv.Name, pv.Namespace, v1alpha1.AnnotationApprove, commit)
}

// approval is pv's proposal and published revision (approvedCommit published it) in the shape
// fleet.Decide judges.
func approval(pv *v1alpha1.PackageVariant, proposal *v1alpha1.VariantProposal, approvedCommit string) fleet.ApprovalDecision {
	if proposal == nil {
		return fleet.ApprovalDecision{}
	}
	p := &v1alpha1.ProposalStatus{Revision: proposal.Revision, Branch: proposal.Branch, Commit: proposal.Commit,
		Summary: "rendered from " + proposal.Upstream.Tag}
	published := &v1alpha1.DeployedPackagesStatus{ApprovedCommit: approvedCommit}
	return fleet.Decide(ApproveCommand(pv, proposal.Commit), pv.Annotations[v1alpha1.AnnotationApprove], p, published)
}

// PlanVariant renders pv from its upstream revision (a package revision, or the latest revision
// another variant published) with its values and functions, merges the result with the
// downstream package in git so direct edits there are kept, and publishes it as the next
// downstream revision when anything changed. A merge conflict is a *specialize.Conflict, and
// nothing is published: the flow stops at this layer.
func (p Planner) PlanVariant(ctx context.Context, r VariantReader, pv *v1alpha1.PackageVariant) (VariantPlan, error) {
	up, err := p.variantUpstream(ctx, r, pv)
	if err != nil {
		return VariantPlan{}, err
	}
	repo, remote, err := p.gitRepository(ctx, r, pv.Namespace, up.repository, "spec.upstream")
	if err != nil {
		return VariantPlan{}, err
	}
	// The pin this variant rendered from is what the new one is checked against: tags never move,
	// latest never goes back.
	pd := &v1alpha1.PackageDeployment{Spec: v1alpha1.PackageDeploymentSpec{Package: v1alpha1.PackageReference{Name: up.name, Revision: up.revision}}}
	pd.Status.Resolved = pv.Status.Upstream
	rev, err := fleet.Resolve(ctx, p.Git, remote, repo, pd, nil)
	if err != nil {
		return VariantPlan{}, fmt.Errorf("upstream %s %s: %w", up.name, up.revision, err)
	}

	down, target, err := p.gitRepository(ctx, r, pv.Namespace, pv.Spec.Downstream.Repository.Name, "spec.downstream")
	if err != nil {
		return VariantPlan{}, err
	}
	var layers []generate.Layer
	for _, l := range pv.Spec.Values.Hierarchy {
		layers = append(layers, generate.Layer{ConfigMap: l.ConfigMap, Required: l.Required})
	}
	values, _, err := mergeValues(ctx, r, pv.Namespace, layers, pv.Spec.Values.Inline, nil)
	if err != nil {
		return VariantPlan{}, err
	}
	blueprintPath := strings.TrimPrefix(rev.Directory, "/")
	req := variant.Request{
		Blueprint:     remote,
		BlueprintPath: blueprintPath,
		Upstream:      specialize.Upstream{Repo: gitremote.SyncURL(repo), Directory: rev.Directory, Ref: rev.Tag, Commit: rev.Commit},
		Target:        target,
		PackagePath:   render.PackagePath(down.Spec.Git.Directory, pv.Spec.Downstream.Package),
		Values:        values,
		Pipeline:      pipeline(pv.Spec.Pipeline),
		Exec:          p.Exec,
	}
	plan := VariantPlan{Upstream: pv.Status.Upstream, Downstream: pv.Status.Downstream, Lineage: pv.Status.Lineage, ApprovedCommit: pv.Status.ApprovedCommit}
	manual := pv.Spec.Approval == v1alpha1.ApprovalManual
	if pr := pv.Status.Proposal; manual && approval(pv, pr, pv.Status.ApprovedCommit).State == fleet.Approved {
		// The commit is checked again against the proposal branch in the publishing push.
		res, err := p.Git.Approve(ctx, target, req.PackagePath, pr.Revision, pr.Commit)
		if err != nil {
			return plan, fmt.Errorf("approve %s: %w", pr.Branch, err)
		}
		up := pr.Upstream
		plan.Upstream, plan.Lineage, plan.ApprovedCommit, plan.Changed = &up, pr.Lineage, pr.Commit, true
		plan.Downstream = &v1alpha1.ResolvedRevision{Repository: down.Name, Revision: res.Revision, Tag: res.Tag, Commit: res.Commit, Directory: "/" + req.PackagePath}
	}
	req.Proposal = manual
	res, err := variant.Publish(ctx, p.Git, req)
	if err != nil {
		var conflict *specialize.Conflict
		if errors.As(err, &conflict) {
			return VariantPlan{}, fmt.Errorf("PackageVariant %s, package %s in repository %s, rendering %s: %w; nothing was published, so the layers below keep their revisions: resolve the conflict in the downstream package (or drop the edit) and the flow continues",
				pv.Name, req.PackagePath, down.Name, rev.Tag, err)
		}
		return VariantPlan{}, err
	}
	lineage := append(slices.Clone(up.lineage), v1alpha1.LineageEntry{Variant: pv.Spec.Upstream.Variant, Repository: repo.Name, Tag: rev.Tag, Commit: rev.Commit})
	switch {
	case res.Branch != "":
		plan.Proposal = &v1alpha1.VariantProposal{Revision: res.Revision.Number, Branch: res.Branch, Commit: res.Revision.Commit, Upstream: rev, Lineage: lineage}
	case res.Revision.Tag != "":
		// Published (Automatic), or already what the branch holds: that revision is current.
		plan.Upstream, plan.Lineage = &rev, lineage
		plan.Downstream = &v1alpha1.ResolvedRevision{Repository: down.Name, Revision: res.Revision.Number, Tag: res.Revision.Tag, Commit: res.Revision.Commit,
			Directory: "/" + req.PackagePath}
		plan.Changed = plan.Changed || res.Changed
	}
	if manual {
		// Judged against what is pending now and what this call published.
		plan.Approval = approval(pv, plan.Proposal, plan.ApprovedCommit)
	}
	return plan, nil
}

// gitRepository reads the git Repository a variant renders from or publishes to (field names it
// in errors) and the remote that reaches it: variants are rendered and merged in git.
func (p Planner) gitRepository(ctx context.Context, r VariantReader, namespace, name, field string) (*v1alpha1.Repository, pkgrepo.Remote, error) {
	repo, err := p.repository(ctx, r, namespace, name)
	if err != nil {
		return nil, pkgrepo.Remote{}, fmt.Errorf("%s: %w", field, err)
	}
	if repo.Spec.Git == nil {
		return nil, pkgrepo.Remote{}, fmt.Errorf("%s: %w", field, gitremote.NotGit(repo))
	}
	remote, err := r.Remote(ctx, repo)
	return repo, remote, err
}

// variantUpstream is where a variant's upstream is: a package of a Repository, or the latest
// revision the upstream variant published, with that variant's lineage.
type upstreamRef struct {
	repository, name, revision string
	lineage                    []v1alpha1.LineageEntry
}

func (p Planner) variantUpstream(ctx context.Context, r VariantReader, pv *v1alpha1.PackageVariant) (upstreamRef, error) {
	up := pv.Spec.Upstream
	if up.Variant == "" {
		if up.Repository == nil || up.Name == "" {
			return upstreamRef{}, fmt.Errorf("%w: spec.upstream names neither a variant nor a repository and package", ErrRepositoryNotFound)
		}
		revision := up.Revision
		if revision == "" {
			revision = "latest"
		}
		return upstreamRef{repository: up.Repository.Name, name: up.Name, revision: revision}, nil
	}
	chain := []string{pv.Name}
	var first *v1alpha1.PackageVariant
	for next := up.Variant; ; {
		if slices.Contains(chain, next) || len(chain) > maxChain {
			return upstreamRef{}, fmt.Errorf("%w: spec.upstream.variant follows %s → %s: a variant cannot be its own upstream", ErrVariantCycle, strings.Join(chain, " → "), next)
		}
		chain = append(chain, next)
		u, err := r.Variant(ctx, pv.Namespace, next)
		if err != nil {
			return upstreamRef{}, err
		}
		if u == nil {
			return upstreamRef{}, fmt.Errorf("%w: PackageVariant %s/%s does not exist", ErrUpstreamNotReady, pv.Namespace, next)
		}
		if first == nil {
			first = u
		}
		if u.Spec.Upstream.Variant == "" {
			break
		}
		next = u.Spec.Upstream.Variant
	}
	u := first
	if u.Status.Downstream == nil {
		return upstreamRef{}, fmt.Errorf("%w: PackageVariant %s has not published a revision of %s yet", ErrUpstreamNotReady, up.Variant, u.Spec.Downstream.Package)
	}
	return upstreamRef{
		repository: u.Spec.Downstream.Repository.Name,
		name:       u.Spec.Downstream.Package,
		revision:   fmt.Sprintf("v%d", u.Status.Downstream.Revision),
		lineage:    u.Status.Lineage,
	}, nil
}
