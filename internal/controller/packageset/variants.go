package packageset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/generate"
	"github.com/flotilla-dev/flotilla/internal/gitremote"
	"github.com/flotilla-dev/flotilla/internal/render"
	"github.com/flotilla-dev/flotilla/internal/specialize"
	"github.com/flotilla-dev/flotilla/internal/variant"
)

// AnnotationValues records, on a deployment of a variant, the merged values and the layer each
// came from (JSON), for debugging a hierarchy.
const AnnotationValues = "flotilla.dev/values"

// variants renders and publishes every target's variant and points its deployment at the
// published revision. A target whose variant fails (a missing required layer, a merge conflict, a
// function error) becomes a problem and keeps its deployment as it is.
func (r *Reconciler) variants(ctx context.Context, in generate.Inputs, result generate.Result, revs revisions) (generate.Result, error) {
	set := in.Set
	bp, err := r.blueprint(ctx, set)
	if err != nil {
		return result, err
	}
	kept := result.Targets[:0]
	for _, t := range result.Targets {
		ref, origin, err := r.variant(ctx, in, bp, t)
		if err != nil {
			result.Problems = append(result.Problems, generate.Problem{Target: t.Key, Message: err.Error()})
			continue
		}
		revs[t.Name] = ref
		if t.Annotations == nil {
			t.Annotations = map[string]string{}
		}
		t.Annotations[AnnotationValues] = origin
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

func (r *Reconciler) blueprint(ctx context.Context, set *v1alpha1.PackageSet) (blueprintSource, error) {
	repo := &v1alpha1.Repository{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: set.Namespace, Name: set.Spec.Package.Repository.Name}, repo); err != nil {
		return blueprintSource{}, err
	}
	remote, err := gitremote.Remote(ctx, r.APIReader, repo)
	if err != nil {
		return blueprintSource{}, err
	}
	return blueprintSource{repo: repo, req: variant.Request{Blueprint: remote, BlueprintPath: render.PackagePath(repo.Spec.Git.Directory, set.Spec.Package.Name)}}, nil
}

// variant publishes one target's variant and returns the package reference its deployment pins,
// and the values' origins as JSON.
func (r *Reconciler) variant(ctx context.Context, in generate.Inputs, bp blueprintSource, t generate.Target) (v1alpha1.PackageReference, string, error) {
	set, v := in.Set, in.Set.Spec.Variant
	cluster := &v1alpha1.WorkloadCluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: set.Namespace, Name: t.Cluster}, cluster); err != nil {
		return v1alpha1.PackageReference{}, "", err
	}
	repo := &v1alpha1.Repository{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: set.Namespace, Name: cluster.Spec.Repository.Name}, repo); err != nil {
		return v1alpha1.PackageReference{}, "", fmt.Errorf("repository of cluster %s: %w", cluster.Name, err)
	}
	target, err := gitremote.Remote(ctx, r.APIReader, repo)
	if err != nil {
		return v1alpha1.PackageReference{}, "", err
	}
	values, origin, err := r.values(ctx, set, t)
	if err != nil {
		return v1alpha1.PackageReference{}, "", err
	}
	injections, err := r.injections(ctx, set.Namespace, t)
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
	req.Values, req.Injections, req.Pipeline, req.Exec = values, injections, pipeline(v.Pipeline), r.Exec
	res, err := variant.Publish(ctx, r.Git, req)
	if err != nil {
		var conflict *specialize.Conflict
		if errors.As(err, &conflict) {
			return v1alpha1.PackageReference{}, "", fmt.Errorf("variant %s in repository %s: %w; nothing was published for this target", req.PackagePath, repo.Name, err)
		}
		return v1alpha1.PackageReference{}, "", err
	}
	return v1alpha1.PackageReference{Name: name, Revision: fmt.Sprintf("v%d", res.Revision.Number)}, origin, nil
}

// values merges the target's values layers: ConfigMaps in order, then inline values.
func (r *Reconciler) values(ctx context.Context, set *v1alpha1.PackageSet, t generate.Target) (map[string]string, string, error) {
	var layers []specialize.Layer
	for _, l := range t.Layers {
		cm := &corev1.ConfigMap{}
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: set.Namespace, Name: l.ConfigMap}, cm)
		switch {
		case apierrors.IsNotFound(err) && l.Required:
			return nil, "", fmt.Errorf("required values ConfigMap %s/%s does not exist", set.Namespace, l.ConfigMap)
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, "", err
		}
		layers = append(layers, specialize.Layer{Source: "configmap " + l.ConfigMap, Values: cm.Data})
	}
	layers = append(layers, specialize.Layer{Source: "inline", Values: set.Spec.Variant.Values.Inline})
	values, origin := specialize.MergeValues(layers)
	explain := map[string][2]string{}
	for k, v := range values {
		explain[k] = [2]string{v, origin[k]}
	}
	b, err := json.Marshal(explain)
	return values, string(b), err
}

// injections reads the objects the target's injectors name.
func (r *Reconciler) injections(ctx context.Context, namespace string, t generate.Target) ([]specialize.Injection, error) {
	var out []specialize.Injection
	for _, ref := range t.Injectors {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(ref.APIVersion)
		u.SetKind(ref.Kind)
		if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, u); err != nil {
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
