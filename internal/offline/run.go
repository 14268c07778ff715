package offline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/fleet"
	"github.com/flotilla-dev/flotilla/internal/gitremote"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
	"github.com/flotilla-dev/flotilla/internal/render"
	"github.com/flotilla-dev/flotilla/internal/setplan"
)

// Git is the part of pkgrepo.Store that offline runs use.
type Git interface {
	setplan.Git
	PendingProposal(ctx context.Context, r pkgrepo.Remote, pkg string) (number int, branch, commit string, ok bool, err error)
}

// Result is what happened to one cluster.
type Result struct {
	Cluster string
	// Outcome is set when publishing was attempted without error.
	Outcome fleet.Outcome
	// Err says why nothing was published for the cluster.
	Err error
	// Suspended is true when the cluster's spec.suspend kept it from publishing.
	Suspended bool
}

var errSuspended = errors.New("suspended")

// Run publishes (or, for Manual clusters, proposes) every cluster's deployed-packages, in name
// order. A cluster with any deployment that cannot be resolved publishes nothing, so a bad
// deployment never undeploys the others.
func Run(ctx context.Context, git Git, f *Fleet) []Result {
	var results []Result
	expanded, err := ExpandSets(ctx, git, f)
	if err != nil {
		for _, key := range slices.Sorted(maps.Keys(f.Clusters)) {
			results = append(results, Result{Cluster: key, Err: err})
		}
		return results
	}
	f = expanded
	var keys []string
	for _, key := range slices.Sorted(maps.Keys(f.Clusters)) {
		if f.Only == nil || f.Only[key] {
			keys = append(keys, key)
		}
	}
	for i, key := range keys {
		c := f.Clusters[key]
		out, err := publishCluster(ctx, git, f, c)
		r := Result{Cluster: key, Outcome: out, Err: err}
		if errors.Is(err, errSuspended) {
			r.Err, r.Suspended = nil, true
		}
		results = append(results, r)
		if f.Progress != nil {
			f.Progress(i+1, len(keys))
		}
	}
	return results
}

func publishCluster(ctx context.Context, git Git, f *Fleet, c *v1alpha1.WorkloadCluster) (fleet.Outcome, error) {
	if c.Spec.Suspend {
		// As the controller: nothing is published for it, and that is no error.
		return fleet.Outcome{}, errSuspended
	}
	repo := f.Repositories[c.Namespace+"/"+c.Spec.Repository.Name]
	if repo.Spec.Git == nil {
		return fleet.Outcome{}, gitremote.NotGit(repo)
	}
	remote, err := f.remote(repo)
	if err != nil {
		return fleet.Outcome{}, err
	}
	published, err := fleet.Current(ctx, git, remote, render.ClusterPackagePath(c, repo))
	if err != nil {
		return fleet.Outcome{}, err
	}
	pins, err := f.pins(ctx, git, c, published)
	if err != nil {
		return fleet.Outcome{}, err
	}
	rendered, err := fleet.Render(c, repo, pins, published)
	if err != nil {
		return fleet.Outcome{}, err
	}
	var proposal *v1alpha1.ProposalStatus
	if c.Spec.Approval == v1alpha1.ApprovalManual {
		if proposal, err = pending(ctx, git, remote, render.ClusterPackagePath(c, repo), published); err != nil {
			return fleet.Outcome{}, err
		}
		if commit, ok := f.Approvals[c.Namespace+"/"+c.Name]; ok {
			// The same rule as the annotation: it names the commit that was reviewed.
			c = c.DeepCopy()
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[v1alpha1.AnnotationApprove] = commit
		}
	}
	out, err := fleet.Publish(ctx, git, remote, c, repo, rendered, published, proposal)
	if err == nil && (out.Approval.State == fleet.ApprovalOutdated || out.Approval.State == fleet.ApprovalInvalid) {
		return out, errors.New(out.Approval.Message)
	}
	return out, err
}

// pending reads the proposal waiting for approval at pkg, as the controller keeps it in status.
func pending(ctx context.Context, git Git, remote pkgrepo.Remote, pkg string, published *v1alpha1.DeployedPackagesStatus) (*v1alpha1.ProposalStatus, error) {
	n, branch, commit, ok, err := git.PendingProposal(ctx, remote, pkg)
	if err != nil || !ok {
		return nil, err
	}
	files, err := git.ReadPackage(ctx, remote, pkg, commit)
	if err != nil {
		return nil, err
	}
	pins := render.ParsePins(files)
	var before []v1alpha1.PublishedPin
	if published != nil {
		before = published.Packages
	}
	return &v1alpha1.ProposalStatus{Revision: n, Branch: branch, Commit: commit, Summary: render.Summary(render.Diff(before, pins)), Packages: pins}, nil
}

func (f *Fleet) pins(ctx context.Context, git Git, c *v1alpha1.WorkloadCluster, published *v1alpha1.DeployedPackagesStatus) ([]render.Pin, error) {
	var pins []render.Pin
	for _, key := range slices.Sorted(maps.Keys(f.Deployments)) {
		pd := f.Deployments[key]
		if pd.Namespace != c.Namespace || pd.Spec.Cluster.Name != c.Name {
			continue
		}
		if err := fleet.CheckDependencies(pd, func(name string) (*v1alpha1.PackageDeployment, error) {
			return f.Deployments[pd.Namespace+"/"+name], nil
		}); err != nil {
			return nil, fmt.Errorf("deployment %s: %w", pd.Name, err)
		}
		name := c.Spec.Repository.Name
		if r := pd.Spec.Package.Repository; r != nil {
			name = r.Name
		}
		repo := f.Repositories[pd.Namespace+"/"+name]
		remote, err := f.remote(repo)
		if err != nil {
			return nil, fmt.Errorf("deployment %s: %w", pd.Name, err)
		}
		if pd.Spec.Suspend {
			// As the controller: a suspended deployment keeps the pin it has (here, the one
			// published), and one never published stays out.
			if pd = fleet.AtPublished(pd, published); pd == nil {
				continue
			}
		}
		resolved, err := fleet.Resolve(ctx, git, remote, repo, pd, published)
		if err != nil {
			return nil, fmt.Errorf("deployment %s: %w", pd.Name, err)
		}
		pins = append(pins, fleet.NewPin(pd, repo, resolved))
	}
	return pins, nil
}

func (f *Fleet) remote(repo *v1alpha1.Repository) (pkgrepo.Remote, error) {
	r, ref, err := gitremote.Base(repo)
	if err != nil || ref == nil {
		return r, err
	}
	s := f.Secrets[repo.Namespace+"/"+ref.Name]
	if s == nil {
		return r, fmt.Errorf("%w %s/%s not found in the input files", gitremote.ErrSecret, repo.Namespace, ref.Name)
	}
	return gitremote.WithSecret(r, s)
}

// PrintTable writes one row per cluster: what was published or proposed, and what changed.
func PrintTable(w io.Writer, results []Result) error {
	return printTable(w, results, nil)
}

// PrintDryRunTable is PrintTable for a run through a Preview: what it would do.
func PrintDryRunTable(w io.Writer, results []Result) error {
	return printTable(w, results, map[string]string{"published": "would publish", "proposed": "would propose"})
}

func printTable(w io.Writer, results []Result, verbs map[string]string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tACTION\tREVISION\tCOMMIT\tCHANGES")
	for _, r := range Rows(results, verbs != nil) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Cluster, r.Action, r.Revision, r.Commit, r.Changes)
	}
	return tw.Flush()
}

// Row is one cluster's line of a run, for -o yaml|json as for the table.
type Row struct {
	Cluster  string `json:"cluster"`
	Action   string `json:"action"`
	Revision string `json:"revision"`
	Commit   string `json:"commit"`
	Changes  string `json:"changes"`
}

// Rows are the results as the table shows them; dryRun words them as what would happen.
func Rows(results []Result, dryRun bool) []Row {
	verbs := map[string]string{}
	if dryRun {
		verbs = map[string]string{"published": "would publish", "proposed": "would propose"}
	}
	out := make([]Row, 0, len(results))
	for _, r := range results {
		action, rev, commit, changes := row(r)
		if v, ok := verbs[action]; ok {
			action = v
		}
		out = append(out, Row{Cluster: r.Cluster, Action: action, Revision: rev, Commit: commit, Changes: changes})
	}
	return out
}

// Wrote counts the clusters for which the run wrote (or would write) something.
func Wrote(results []Result) int {
	n := 0
	for _, r := range results {
		if r.Err == nil && r.Outcome.Wrote {
			n++
		}
	}
	return n
}

func row(r Result) (action, rev, commit, changes string) {
	o := r.Outcome
	switch {
	case r.Err != nil:
		return "error", "-", "-", strings.ReplaceAll(r.Err.Error(), "\n", " ")
	case r.Suspended:
		return "suspended", "-", "-", "spec.suspend is true: nothing is published"
	case o.Proposal != nil:
		action, rev, commit = "proposed", o.Proposal.Branch, short(o.Proposal.Commit)
	case o.Published != nil:
		action, rev, commit = "unchanged", o.Published.Tag, short(o.Published.Commit)
		if o.Wrote {
			action = "published"
		}
	default:
		return "unchanged", "-", "-", "-"
	}
	changes = "-"
	if o.Wrote {
		changes = render.Summary(o.Changes)
	}
	return action, rev, commit, changes
}

// Failed counts the clusters that published nothing because of an error.
func Failed(results []Result) int {
	n := 0
	for _, r := range results {
		if r.Err != nil {
			n++
		}
	}
	return n
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
