// Package setplan is the planning core of PackageSets, shared by the controller and `flotilla
// render`: from a set, what it reads (clusters, objects, values, injected objects, git) and the
// deployments it owns, it computes the targets, the rollout's next step, each target's variant
// (published into the cluster's repository) and the deployments to create, update and delete.
// The callers keep the I/O: the controller reads through the API server and writes the changes
// back, render reads files and adds the deployments to what it publishes. Nothing here knows
// which of the two it runs in, so a second implementation has nowhere to go.
package setplan

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/fleet"
	"github.com/flotilla-dev/flotilla/internal/generate"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
	"github.com/flotilla-dev/flotilla/internal/specialize"
	"github.com/flotilla-dev/flotilla/internal/variant"
)

// Reader is what planning reads besides git. Lookups of one object return nil, nil when it does
// not exist.
type Reader interface {
	// Clusters lists the WorkloadClusters of namespace.
	Clusters(ctx context.Context, namespace string) ([]*v1alpha1.WorkloadCluster, error)
	// Objects lists the objects of gvk in namespace, for objects generators (the controller
	// refuses kinds its operator did not allow).
	Objects(ctx context.Context, namespace string, gvk schema.GroupVersionKind) ([]*unstructured.Unstructured, error)
	Cluster(ctx context.Context, namespace, name string) (*v1alpha1.WorkloadCluster, error)
	Repository(ctx context.Context, namespace, name string) (*v1alpha1.Repository, error)
	// Remote is how to reach repo's git, with its credentials.
	Remote(ctx context.Context, repo *v1alpha1.Repository) (pkgrepo.Remote, error)
	ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	// Object reads one object an injector names.
	Object(ctx context.Context, apiVersion, kind, namespace, name string) (*unstructured.Unstructured, error)
}

// Git is the part of pkgrepo.Store planning uses: resolving blueprints and publishing variants.
type Git interface {
	fleet.Git
	variant.Git
}

// Planner plans sets.
type Planner struct {
	Git Git
	// Exec says which exec functions variant pipelines may run.
	Exec specialize.ExecPolicy
	// OwnedUnknown is set by a caller that cannot list the deployments a set owns (render has
	// only files): a generator that selects nothing is then refused as if some existed.
	OwnedUnknown bool
	// Only, when set, limits planning to the targets on the clusters it accepts (flotilla render
	// --cluster): no variant is written, and no deployment planned, for the others.
	Only func(cluster string) bool
}

// ErrRepositoryNotFound is wrapped when the blueprint's Repository does not exist.
var ErrRepositoryNotFound = errors.New("repository not found")

// ErrNoTargets is returned when the generator selects no target while deployments exist and the
// set does not allow that: nothing is undeployed by a surprise empty result.
var ErrNoTargets = errors.New("the generator selects no target")

// Outcome is what a set asks for now.
type Outcome struct {
	Inputs generate.Inputs
	// Result holds the targets (with their variants published) and the problems of single targets.
	Result generate.Result
	// Decided is true once the rollout was decided: Rollout is then the set's new rollout status.
	Decided bool
	Rollout *v1alpha1.RolloutStatus
	// Recheck is when to look again without an event (0: not needed).
	Recheck time.Duration
	Changes Changes
	// Waiting maps the targets held back by spec.dependsOn to what they wait for.
	Waiting map[string]string
	// Promotion is the set's promotion status (spec.package.revisionFrom), nil without one.
	Promotion *v1alpha1.PromotionStatus
}

// Plan computes what set asks for, given the deployments it owns. An error leaves every
// deployment as it is.
func (p Planner) Plan(ctx context.Context, r Reader, set *v1alpha1.PackageSet, owned []v1alpha1.PackageDeployment, now time.Time) (Outcome, error) {
	var out Outcome
	set, promotion, promoteAgain, err := p.promote(ctx, r, set, now)
	if err != nil {
		return out, err
	}
	out.Promotion = promotion
	in, err := p.Inputs(ctx, r, set)
	if err != nil {
		return out, err
	}
	out.Inputs = in
	result, err := generate.Generate(in)
	if err != nil {
		return out, err
	}
	if len(result.Targets) == 0 && len(result.Problems) == 0 && (len(owned) > 0 || p.OwnedUnknown) && !set.Spec.AllowEmpty {
		return out, fmt.Errorf("%w, but %d deployments exist", ErrNoTargets, len(owned))
	}
	if p.Only != nil {
		kept := result.Targets[:0]
		for _, t := range result.Targets {
			if p.Only(t.Cluster) {
				kept = append(kept, t)
			}
		}
		result.Targets = kept
	}
	wait, err := p.gates(ctx, r, set)
	if err != nil {
		return out, err
	}
	if generate.UsesFacts(set) {
		wait = p.waitForFacts(ctx, r, set, wait)
	}
	out.Waiting = map[string]string{}
	d := Decide(in, owned, result, now, wait, out.Waiting)
	out.Decided, out.Rollout, out.Recheck = true, d.Rollout, d.Recheck
	if promoteAgain > 0 && (out.Recheck == 0 || promoteAgain < out.Recheck) {
		out.Recheck = promoteAgain
	}
	if set.Spec.Variant != nil {
		if result, err = p.variants(ctx, r, in, result, d, owned); err != nil {
			return out, err
		}
	}
	out.Result = result
	out.Changes = Diff(set, owned, result, d.Revisions, now)
	return out, nil
}

// waitForFacts holds, in a set that uses facts, the targets on clusters whose facts will be read
// (they have kubeConfigSecretRef) but were not yet: deploying with zero-valued facts first would
// re-render, or rename, the deployment once they arrive.
func (p Planner) waitForFacts(ctx context.Context, r Reader, set *v1alpha1.PackageSet, next gate) gate {
	clusters, err := r.Clusters(ctx, set.Namespace)
	if err != nil {
		return next
	}
	pending := map[string]bool{}
	for _, c := range clusters {
		if c.Spec.KubeConfigSecretRef != nil && c.Status.Facts == nil {
			pending[c.Name] = true
		}
	}
	return func(cluster string) string {
		if pending[cluster] {
			return fmt.Sprintf("the facts of cluster %s to be read (the set uses target.facts)", cluster)
		}
		return next(cluster)
	}
}

// Inputs gathers what the generator reads: the namespace's clusters, the objects its objects
// generators name, and the blueprint revision.
func (p Planner) Inputs(ctx context.Context, r Reader, set *v1alpha1.PackageSet) (generate.Inputs, error) {
	if err := generate.Check(set); err != nil {
		return generate.Inputs{}, err
	}
	in := generate.Inputs{Set: set}
	clusters, err := r.Clusters(ctx, set.Namespace)
	if err != nil {
		return in, fmt.Errorf("list clusters: %w", err)
	}
	for _, c := range clusters {
		in.Clusters = append(in.Clusters, generate.Cluster{Name: c.Name, Namespace: c.Namespace, Labels: c.Labels, Annotations: c.Annotations, Context: c.Spec.Context,
			Facts: c.Status.Facts})
	}
	for _, gvk := range ObjectKinds(set) {
		objs, err := r.Objects(ctx, set.Namespace, gvk)
		if err != nil {
			return in, err
		}
		in.Objects = append(in.Objects, objs...)
	}
	if in.Upstream, err = p.upstream(ctx, r, set); err != nil {
		return in, err
	}
	return in, nil
}

// ObjectKinds lists the kinds the set's objects generators select.
func ObjectKinds(set *v1alpha1.PackageSet) []schema.GroupVersionKind {
	leaves := append([]v1alpha1.LeafGenerator{set.Spec.Targets.LeafGenerator}, set.Spec.Targets.Matrix...)
	var out []schema.GroupVersionKind
	for _, l := range leaves {
		if o := l.Objects; o != nil {
			out = append(out, schema.FromAPIVersionAndKind(o.APIVersion, o.Kind))
		}
	}
	return out
}

// upstream resolves the blueprint revision the set deploys.
func (p Planner) upstream(ctx context.Context, r Reader, set *v1alpha1.PackageSet) (generate.Upstream, error) {
	ref := set.Spec.Package
	if ref.Repository == nil {
		return generate.Upstream{}, fmt.Errorf("spec.package.repository is required: the blueprint's repository cannot default to a cluster's")
	}
	repo, err := p.repository(ctx, r, set.Namespace, ref.Repository.Name)
	if err != nil {
		return generate.Upstream{}, err
	}
	remote, err := r.Remote(ctx, repo)
	if err != nil {
		return generate.Upstream{}, err
	}
	pd := &v1alpha1.PackageDeployment{Spec: v1alpha1.PackageDeploymentSpec{Package: ref}}
	rev, err := fleet.Resolve(ctx, p.Git, remote, repo, pd, nil)
	if err != nil {
		return generate.Upstream{}, fmt.Errorf("blueprint %s %s: %w", ref.Name, ref.Revision, err)
	}
	return generate.Upstream{Repository: repo.Name, Name: ref.Name, Revision: ref.Revision, Tag: rev.Tag, Commit: rev.Commit, Number: rev.Revision}, nil
}

func (p Planner) repository(ctx context.Context, r interface {
	Repository(ctx context.Context, namespace, name string) (*v1alpha1.Repository, error)
}, namespace, name string) (*v1alpha1.Repository, error) {
	repo, err := r.Repository(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	if repo == nil {
		return nil, fmt.Errorf("%w: Repository %s/%s does not exist", ErrRepositoryNotFound, namespace, name)
	}
	return repo, nil
}
