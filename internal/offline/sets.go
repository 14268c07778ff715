package offline

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
	"github.com/flotilla-dev/flotilla/internal/setplan"
)

// ExpandSets returns a copy of f with the PackageDeployments every PackageSet generates, planned
// by the controller's own core (setplan: generators, the empty-generator guard, the rollout's
// first step, variants published into the clusters' repositories). A set whose generator fails,
// that has target problems, that selects nothing without allowEmpty, or that yields a name
// already taken, is an error: render publishes nothing rather than something partial.
func ExpandSets(ctx context.Context, git Git, in *Fleet) (*Fleet, error) {
	f := *in
	f.Deployments = maps.Clone(in.Deployments)
	planner := setplan.Planner{Git: git, OwnedUnknown: true}
	variants, err := publishVariants(ctx, planner, in)
	if err != nil {
		return nil, err
	}
	f.Variants = variants
	for _, key := range dependenciesFirst(f.Sets) {
		set := f.Sets[key]
		if in.Only != nil {
			planner.Only = func(cluster string) bool { return in.Only[set.Namespace+"/"+cluster] }
		}
		out, err := planner.Plan(ctx, files{in}, set, nil, time.Now())
		if errors.Is(err, setplan.ErrNoTargets) {
			return nil, fmt.Errorf("PackageSet %s: the generator selects no target: render refuses to undeploy what the set deployed; fix the generator, or set spec.allowEmpty: true", key)
		}
		if err != nil {
			return nil, fmt.Errorf("PackageSet %s: %w", key, err)
		}
		if p := out.Result.Problems; len(p) > 0 {
			return nil, fmt.Errorf("PackageSet %s: %d targets have problems, first %s: %s", key, len(p), p[0].Target, p[0].Message)
		}
		for _, pd := range out.Changes.Create {
			pdKey := pd.Namespace + "/" + pd.Name
			if _, taken := f.Deployments[pdKey]; taken {
				return nil, fmt.Errorf("PackageSet %s: PackageDeployment %s already exists", key, pdKey)
			}
			f.Deployments[pdKey] = pd
		}
	}
	return &f, f.validate()
}

// publishVariants publishes every PackageVariant's downstream revision with the controller's core
// (setplan.PlanVariant), each after the variant it takes as upstream, and returns the variants
// with their status as the controller would write it. Any failure (a conflict, a cycle, an
// upstream variant that does not exist) is an error: render publishes nothing after it.
func publishVariants(ctx context.Context, planner setplan.Planner, in *Fleet) (map[string]*v1alpha1.PackageVariant, error) {
	out := map[string]*v1alpha1.PackageVariant{}
	for k, pv := range in.Variants {
		out[k] = pv.DeepCopy()
	}
	view := *in
	view.Variants = out
	r := files{f: &view}
	done := map[string]bool{}
	for len(done) < len(out) {
		progressed := false
		for _, key := range slices.Sorted(maps.Keys(out)) {
			pv := out[key]
			if done[key] {
				continue
			}
			if up := pv.Spec.Upstream.Variant; up != "" && !done[pv.Namespace+"/"+up] {
				if _, ok := out[pv.Namespace+"/"+up]; ok {
					continue // after its upstream
				}
			}
			plan, err := planner.PlanVariant(ctx, r, pv)
			if err != nil {
				return nil, fmt.Errorf("PackageVariant %s: %w", key, err)
			}
			pv.Status.Upstream, pv.Status.Downstream, pv.Status.Lineage = plan.Upstream, plan.Downstream, plan.Lineage
			pv.Status.Proposal, pv.Status.ApprovedCommit = plan.Proposal, plan.ApprovedCommit
			done[key], progressed = true, true
		}
		if !progressed {
			// What is left names each other: PlanVariant says which cycle.
			for _, key := range slices.Sorted(maps.Keys(out)) {
				if !done[key] {
					_, err := planner.PlanVariant(ctx, r, out[key])
					return nil, fmt.Errorf("PackageVariant %s: %w", key, err)
				}
			}
		}
	}
	return out, nil
}

// dependenciesFirst orders the sets so that each comes after the sets its spec.dependsOn names
// (sorted otherwise; a cycle keeps sorted order, and planning reports it).
func dependenciesFirst(sets map[string]*v1alpha1.PackageSet) []string {
	var out []string
	done := map[string]bool{}
	var visit func(key string, depth int)
	visit = func(key string, depth int) {
		set, ok := sets[key]
		if !ok || done[key] || depth > len(sets) {
			return
		}
		for _, d := range set.Spec.DependsOn {
			visit(set.Namespace+"/"+d.Name, depth+1)
		}
		if !done[key] {
			done[key] = true
			out = append(out, key)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(sets)) {
		visit(key, 0)
	}
	return out
}

// files is what the planning core reads, from the input files.
type files struct{ f *Fleet }

var _ setplan.Reader = files{}

func (r files) Clusters(_ context.Context, namespace string) ([]*v1alpha1.WorkloadCluster, error) {
	var out []*v1alpha1.WorkloadCluster
	for _, key := range slices.Sorted(maps.Keys(r.f.Clusters)) {
		if c := r.f.Clusters[key]; c.Namespace == namespace {
			out = append(out, c)
		}
	}
	return out, nil
}

func (r files) Objects(_ context.Context, namespace string, gvk schema.GroupVersionKind) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, o := range r.f.Objects {
		if o.GetNamespace() == namespace && o.GroupVersionKind() == gvk {
			out = append(out, o)
		}
	}
	return out, nil
}

func (r files) Cluster(_ context.Context, namespace, name string) (*v1alpha1.WorkloadCluster, error) {
	return r.f.Clusters[namespace+"/"+name], nil
}

func (r files) Repository(_ context.Context, namespace, name string) (*v1alpha1.Repository, error) {
	return r.f.Repositories[namespace+"/"+name], nil
}

func (r files) Remote(_ context.Context, repo *v1alpha1.Repository) (pkgrepo.Remote, error) {
	return r.f.remote(repo)
}

func (r files) ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	u, err := r.Object(ctx, "v1", "ConfigMap", namespace, name)
	if u == nil || err != nil {
		return nil, err
	}
	cm := &corev1.ConfigMap{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cm); err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: %w", namespace, name, err)
	}
	return cm, nil
}

func (r files) Object(_ context.Context, apiVersion, kind, namespace, name string) (*unstructured.Unstructured, error) {
	if apiVersion == v1alpha1.GroupVersion.String() {
		// flotilla's own kinds, injected as the API server would serve them.
		if u := r.f.served[servedKey(kind, namespace, name)]; u != nil {
			return u.DeepCopy(), nil
		}
		return nil, nil
	}
	for _, o := range r.f.Objects {
		if o.GetAPIVersion() == apiVersion && o.GetKind() == kind && o.GetNamespace() == namespace && o.GetName() == name {
			return o, nil
		}
	}
	return nil, nil
}

func (r files) Variant(_ context.Context, namespace, name string) (*v1alpha1.PackageVariant, error) {
	return r.f.Variants[namespace+"/"+name], nil
}

func (r files) PackageSet(_ context.Context, namespace, name string) (*v1alpha1.PackageSet, error) {
	return r.f.Sets[namespace+"/"+name], nil
}

// SetDeployments is what a set generated in this run: render sees no health, so a set that
// depends on another (spec.dependsOn) waits, as in a fresh fleet.
func (r files) SetDeployments(_ context.Context, namespace, set string) ([]v1alpha1.PackageDeployment, error) {
	var out []v1alpha1.PackageDeployment
	for _, key := range slices.Sorted(maps.Keys(r.f.Deployments)) {
		if pd := r.f.Deployments[key]; pd.Namespace == namespace && pd.Labels[v1alpha1.LabelPackageSet] == set {
			out = append(out, *pd)
		}
	}
	return out, nil
}
