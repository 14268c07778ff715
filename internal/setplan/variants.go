package setplan

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/facts"
	"github.com/flotilla-dev/flotilla/internal/generate"
	"github.com/flotilla-dev/flotilla/internal/gitremote"
	"github.com/flotilla-dev/flotilla/internal/render"
	"github.com/flotilla-dev/flotilla/internal/specialize"
	"github.com/flotilla-dev/flotilla/internal/variant"
)

// AnnotationValues records, on a deployment of a variant, the merged values and the layer each
// came from (JSON), for debugging a hierarchy.
const AnnotationValues = "flotilla.dev/values"

// variants renders and publishes the variant of every target the decision pins to the set's
// blueprint revision, and points its deployment at the published revision. A target the decision
// keeps (a rollout has not moved it, or rolled it back) keeps its variant revision, and one
// without a pin gets nothing rendered. A target whose variant fails (a missing required layer, a
// merge conflict, a function error) becomes a problem and keeps its deployment as it is.
func (p Planner) variants(ctx context.Context, r Reader, in generate.Inputs, result generate.Result, d Decision, owned []v1alpha1.PackageDeployment) (generate.Result, error) {
	set := in.Set
	bp, err := p.blueprint(ctx, r, set)
	if err != nil {
		return result, err
	}
	byName := map[string]*v1alpha1.PackageDeployment{}
	for i := range owned {
		byName[owned[i].Name] = &owned[i]
	}
	kept := result.Targets[:0]
	for _, t := range result.Targets {
		t.Annotations = maps.Clone(t.Annotations)
		if t.Annotations == nil {
			t.Annotations = map[string]string{}
		}
		if tag, ok := d.Kept[t.Name]; ok {
			// As it was rendered: the values it was rendered with, and its blueprint revision.
			if pd := byName[t.Name]; pd != nil && pd.Annotations[AnnotationValues] != "" {
				t.Annotations[AnnotationValues] = pd.Annotations[AnnotationValues]
			}
			t.Annotations[AnnotationBlueprint] = tag
			kept = append(kept, t)
			continue
		}
		if _, pinned := d.Revisions[t.Name]; !pinned {
			kept = append(kept, t) // not reached yet: nothing is rendered for it
			continue
		}
		ref, origin, err := p.variant(ctx, r, in, bp, t)
		if err != nil {
			result.Problems = append(result.Problems, generate.Problem{Target: t.Key, Message: err.Error()})
			continue
		}
		d.Revisions[t.Name] = ref
		t.Annotations[AnnotationValues] = origin
		t.Annotations[AnnotationBlueprint] = in.Upstream.Tag
		kept = append(kept, t)
	}
	result.Targets = kept
	sort.Slice(result.Problems, func(i, j int) bool { return result.Problems[i].Target < result.Problems[j].Target })
	return result, nil
}

// blueprintSource is where a set's blueprint is read from.
type blueprintSource struct {
	repo *v1alpha1.Repository
	req  variant.Request
}

func (p Planner) blueprint(ctx context.Context, r Reader, set *v1alpha1.PackageSet) (blueprintSource, error) {
	repo, err := p.repository(ctx, r, set.Namespace, set.Spec.Package.Repository.Name)
	if err != nil {
		return blueprintSource{}, err
	}
	if repo.Spec.Git == nil {
		// A variant is rendered from the blueprint's files and merged in git.
		return blueprintSource{}, fmt.Errorf("spec.variant: %w", gitremote.NotGit(repo))
	}
	remote, err := r.Remote(ctx, repo)
	if err != nil {
		return blueprintSource{}, err
	}
	return blueprintSource{repo: repo, req: variant.Request{Blueprint: remote, BlueprintPath: render.PackagePath(repo.Spec.Git.Directory, set.Spec.Package.Name)}}, nil
}

// variant publishes one target's variant and returns the package reference its deployment pins,
// and the values' origins as JSON.
func (p Planner) variant(ctx context.Context, r Reader, in generate.Inputs, bp blueprintSource, t generate.Target) (v1alpha1.PackageReference, string, error) {
	set, v := in.Set, in.Set.Spec.Variant
	cluster, err := r.Cluster(ctx, set.Namespace, t.Cluster)
	if err != nil {
		return v1alpha1.PackageReference{}, "", err
	}
	if cluster == nil {
		return v1alpha1.PackageReference{}, "", fmt.Errorf("WorkloadCluster %s/%s does not exist", set.Namespace, t.Cluster)
	}
	repo, err := r.Repository(ctx, set.Namespace, cluster.Spec.Repository.Name)
	if err != nil || repo == nil {
		return v1alpha1.PackageReference{}, "", fmt.Errorf("repository of cluster %s: %w", cluster.Name, cmp.Or(err, fmt.Errorf("%w: Repository %s/%s does not exist", ErrRepositoryNotFound, set.Namespace, cluster.Spec.Repository.Name)))
	}
	if repo.Spec.Git == nil {
		return v1alpha1.PackageReference{}, "", gitremote.NotGit(repo)
	}
	target, err := r.Remote(ctx, repo)
	if err != nil {
		return v1alpha1.PackageReference{}, "", err
	}
	values, origin, err := mergeValues(ctx, r, set.Namespace, t.Layers, set.Spec.Variant.Values.Inline, func() map[string]string { return facts.Values(cluster.Status.Facts) })
	if err != nil {
		return v1alpha1.PackageReference{}, "", err
	}
	injections, err := injections(ctx, r, set.Namespace, t)
	if err != nil {
		return v1alpha1.PackageReference{}, "", err
	}
	name := v.Package
	if name == "" {
		name = path.Base(set.Spec.Package.Name)
	}
	req := bp.req
	req.Upstream = specialize.Upstream{Repo: gitremote.SyncURL(bp.repo), Directory: "/" + bp.req.BlueprintPath, Ref: in.Upstream.Tag, Commit: in.Upstream.Commit}
	req.Target, req.PackagePath = target, render.PackagePath(repo.Spec.Git.Directory, name)
	req.Values, req.Injections, req.Pipeline, req.Exec = values, injections, pipeline(v.Pipeline), p.Exec
	res, err := variant.Publish(ctx, p.Git, req)
	if err != nil {
		var conflict *specialize.Conflict
		if errors.As(err, &conflict) {
			return v1alpha1.PackageReference{}, "", fmt.Errorf("variant %s in repository %s: %w; nothing was published for this target", req.PackagePath, repo.Name, err)
		}
		return v1alpha1.PackageReference{}, "", err
	}
	return v1alpha1.PackageReference{Name: name, Revision: fmt.Sprintf("v%d", res.Revision.Number)}, origin, nil
}

// mergeValues merges values layers, ConfigMaps of namespace (or the target cluster's facts,
// factsOf) lowest priority first and inline values last, and returns the values and, as JSON,
// where each came from.
func mergeValues(ctx context.Context, r interface {
	ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
}, namespace string, configMaps []generate.Layer, inline map[string]string, factsOf func() map[string]string) (map[string]string, string, error) {
	var layers []specialize.Layer
	for _, l := range configMaps {
		if l.Facts {
			if factsOf != nil {
				layers = append(layers, specialize.Layer{Source: "facts", Values: factsOf()})
			}
			continue
		}
		cm, err := r.ConfigMap(ctx, namespace, l.ConfigMap)
		switch {
		case err != nil:
			return nil, "", err
		case cm == nil && l.Required:
			return nil, "", fmt.Errorf("required values ConfigMap %s/%s does not exist", namespace, l.ConfigMap)
		case cm == nil:
			continue
		}
		layers = append(layers, specialize.Layer{Source: "configmap " + l.ConfigMap, Values: cm.Data})
	}
	layers = append(layers, specialize.Layer{Source: "inline", Values: inline})
	values, origin := specialize.MergeValues(layers)
	explain := map[string][2]string{}
	for k, v := range values {
		explain[k] = [2]string{v, origin[k]}
	}
	b, err := json.Marshal(explain)
	return values, string(b), err
}

// injections reads the objects the target's injectors name.
func injections(ctx context.Context, r Reader, namespace string, t generate.Target) ([]specialize.Injection, error) {
	var out []specialize.Injection
	for _, ref := range t.Injectors {
		u, err := r.Object(ctx, ref.APIVersion, ref.Kind, namespace, ref.Name)
		if err == nil && u == nil {
			err = fmt.Errorf("%s/%s does not exist", namespace, ref.Name)
		}
		if err != nil {
			return nil, fmt.Errorf("injector %s %s: %w", ref.Kind, ref.Name, err)
		}
		out = append(out, specialize.Injection{Kind: ref.Kind, Name: ref.Name, Object: u.Object})
	}
	return out, nil
}

func pipeline(p *v1alpha1.VariantPipeline) []specialize.Function {
	if p == nil {
		return nil
	}
	out := make([]specialize.Function, 0, len(p.Mutators))
	for _, f := range p.Mutators {
		out = append(out, specialize.Function{Image: f.Image, Exec: f.Exec, ConfigMap: f.ConfigMap, Name: f.Name})
	}
	return out
}
