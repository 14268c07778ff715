package offline

import (
	"context"
	"fmt"
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/fleet"
	"github.com/flotilla-dev/flotilla/internal/generate"
)

// ExpandSets returns a copy of f with the PackageDeployments every PackageSet generates, as the
// controller would. A set whose generator fails, or that yields a name already taken, is an error:
// render publishes nothing rather than something partial.
func ExpandSets(ctx context.Context, git Git, in *Fleet) (*Fleet, error) {
	f := *in
	f.Deployments = maps.Clone(in.Deployments)
	for _, key := range slices.Sorted(maps.Keys(f.Sets)) {
		set := f.Sets[key]
		in, err := f.setInputs(ctx, git, set)
		if err != nil {
			return nil, fmt.Errorf("PackageSet %s: %w", key, err)
		}
		result, err := generate.Generate(in)
		if err != nil {
			return nil, fmt.Errorf("PackageSet %s: %w", key, err)
		}
		if len(result.Problems) > 0 {
			p := result.Problems[0]
			return nil, fmt.Errorf("PackageSet %s: %d targets have problems, first %s: %s", key, len(result.Problems), p.Target, p.Message)
		}
		for _, t := range result.Targets {
			pdKey := set.Namespace + "/" + t.Name
			if _, taken := f.Deployments[pdKey]; taken {
				return nil, fmt.Errorf("PackageSet %s: PackageDeployment %s already exists", key, pdKey)
			}
			f.Deployments[pdKey] = &v1alpha1.PackageDeployment{
				ObjectMeta: metav1.ObjectMeta{Name: t.Name, Namespace: set.Namespace, Labels: t.Labels, Annotations: t.Annotations},
				Spec: v1alpha1.PackageDeploymentSpec{
					Cluster:        v1alpha1.LocalObjectReference{Name: t.Cluster},
					Package:        set.Spec.Package,
					Namespace:      t.Namespace,
					DeletionPolicy: t.DeletionPolicy,
				},
			}
		}
	}
	return &f, f.validate()
}

func (f *Fleet) setInputs(ctx context.Context, git Git, set *v1alpha1.PackageSet) (generate.Inputs, error) {
	in := generate.Inputs{Set: set}
	for _, key := range slices.Sorted(maps.Keys(f.Clusters)) {
		c := f.Clusters[key]
		if c.Namespace == set.Namespace {
			in.Clusters = append(in.Clusters, generate.Cluster{Name: c.Name, Namespace: c.Namespace, Labels: c.Labels, Annotations: c.Annotations, Context: c.Spec.Context})
		}
	}
	for _, o := range f.Objects {
		if o.GetNamespace() == set.Namespace {
			in.Objects = append(in.Objects, o)
		}
	}
	ref := set.Spec.Package.Repository
	if ref == nil {
		return in, fmt.Errorf("spec.package.repository is required")
	}
	repo := f.Repositories[set.Namespace+"/"+ref.Name]
	if repo == nil {
		return in, fmt.Errorf("blueprint repository %s/%s not found in the input files", set.Namespace, ref.Name)
	}
	remote, err := f.remote(repo)
	if err != nil {
		return in, err
	}
	rev, err := fleet.Resolve(ctx, git, remote, repo, &v1alpha1.PackageDeployment{Spec: v1alpha1.PackageDeploymentSpec{Package: set.Spec.Package}}, nil)
	if err != nil {
		return in, fmt.Errorf("blueprint: %w", err)
	}
	in.Upstream = generate.Upstream{Repository: repo.Name, Name: set.Spec.Package.Name, Revision: set.Spec.Package.Revision, Tag: rev.Tag, Commit: rev.Commit, Number: rev.Revision}
	return in, nil
}
