// Package generate turns a PackageSet into the deployments it asks for: it runs the set's
// generator over the WorkloadClusters (and other objects) the controller read, and evaluates the
// set's template, CEL included, for each target. It reads and writes nothing.
package generate

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/cel-go/common/types/ref"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// Cluster is what generators know of a WorkloadCluster (the controller fills it from the cache).
type Cluster struct {
	Name, Namespace              string
	Labels, Annotations, Context map[string]string
	// Facts are what flotilla read from the cluster (status.facts), `target.facts` in CEL; nil
	// before they are read (every fact is then its zero value).
	Facts *v1alpha1.ClusterFacts
}

// Upstream is the blueprint revision the set deploys (resolved by the controller).
type Upstream struct {
	Repository, Name, Revision, Tag, Commit string
	Number                                  int
}

// Inputs is everything Generate reads; the controller gathers it.
type Inputs struct {
	Set *v1alpha1.PackageSet
	// Clusters is every WorkloadCluster in the set's namespace.
	Clusters []Cluster
	// Objects are objects of the kinds the set's objects generators name, in the set's
	// namespace; Generate filters them by apiVersion, kind and selector itself.
	Objects  []*unstructured.Unstructured
	Upstream Upstream
}

// Target is one deployment the set asks for.
type Target struct {
	// Key is the stable identity of the element: the cluster name plus its sorted values, e.g.
	// edge01 or edge01{slice=a}. Problems name targets by it.
	Key     string
	Cluster string
	Values  map[string]string
	// Name is the PackageDeployment's name: a DNS-1123 subdomain of at most 63 characters.
	Name           string
	Namespace      string
	DeletionPolicy v1alpha1.DeletionPolicy
	// Labels and Annotations are the template's, evaluated.
	Labels      map[string]string
	Annotations map[string]string
	// Layers are the variant's values ConfigMaps for this target, lowest priority first.
	Layers []Layer
	// Injectors are the variant's injected objects for this target.
	Injectors []ObjectRef
	// DependsOn names the deployments on the target's cluster its deployment waits for.
	DependsOn []string
}

// Layer is one values ConfigMap of a variant, resolved for a target.
type Layer struct {
	ConfigMap string
	Required  bool
	// Facts takes the layer from the target cluster's facts instead of a ConfigMap.
	Facts bool
}

// ObjectRef names an object in the set's namespace.
type ObjectRef struct{ APIVersion, Kind, Name string }

// Problem is why one target could not be generated; the controller keeps that target's existing
// deployment unchanged. Target is the target's Key; for an object whose expressions fail it is
// Kind/name of the object, and for a list element without a cluster where it is in the spec
// (targets.list[3]).
type Problem struct{ Target, Message string }

// Result is what the set asks for.
type Result struct {
	Targets  []Target  // sorted by Name
	Problems []Problem // sorted by Target
}

// Generate evaluates the set's generator and template. A returned error is a failure of the
// whole generator (invalid selector, a CEL expression that does not compile, ...): the caller
// must then change nothing. Per-target failures are Problems.
func Generate(in Inputs) (Result, error) {
	if in.Set == nil {
		return Result{}, errors.New("generate: no PackageSet")
	}
	p, err := compileSet(in.Set)
	if err != nil {
		return Result{}, err
	}
	src := newSource(in)
	elems, problems, err := p.elements(src)
	if err != nil {
		return Result{}, err
	}

	vars := &templateVars{upstream: upstreamVal(in.Upstream), set: celMap(map[string]any{
		"name":        in.Set.Name,
		"namespace":   in.Set.Namespace,
		"labels":      in.Set.Labels,
		"annotations": in.Set.Annotations,
	})}
	targets := make([]Target, 0, len(elems))
	for _, e := range elems {
		target, ok := src.clusterVal(e.cluster)
		if !ok {
			problems = append(problems, Problem{Target: e.key, Message: fmt.Sprintf(
				"WorkloadCluster %s does not exist in namespace %s", e.cluster, in.Set.Namespace)})
			continue
		}
		vars.target, vars.values = target, stringMap(e.values)
		t, err := p.template.target(e, vars)
		if err != nil {
			problems = append(problems, Problem{Target: e.key, Message: err.Error()})
			continue
		}
		targets = append(targets, t)
	}
	targets, clashes := dropDuplicateNames(targets)
	problems = append(problems, clashes...)

	if len(targets) == 0 {
		targets = nil // as for no problems
	}
	slices.SortFunc(targets, func(a, b Target) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(problems, func(a, b Problem) int {
		return cmp.Or(strings.Compare(a.Target, b.Target), strings.Compare(a.Message, b.Message))
	})
	return Result{Targets: targets, Problems: problems}, nil
}

// Check compiles every CEL expression of the set, and checks the rest of its generator and
// template that does not depend on targets (selectors, namespace, label keys). The error names
// the field and quotes the expression, for a status condition.
func Check(set *v1alpha1.PackageSet) error {
	if set == nil {
		return errors.New("generate: no PackageSet")
	}
	_, err := compileSet(set)
	return err
}

// plan is a compiled PackageSet: one leaf generator, or the two of a matrix.
type plan struct {
	leaves   []*leaf
	template *template
}

func compileSet(set *v1alpha1.PackageSet) (*plan, error) {
	gen := set.Spec.Targets
	var fields []string
	var gens []v1alpha1.LeafGenerator
	switch n := leafCount(gen.LeafGenerator); {
	case n == 1 && gen.Matrix == nil:
		fields, gens = []string{"targets"}, []v1alpha1.LeafGenerator{gen.LeafGenerator}
	case n == 0 && len(gen.Matrix) == 2:
		fields, gens = []string{"targets.matrix[0]", "targets.matrix[1]"}, gen.Matrix
	case n == 0 && gen.Matrix != nil:
		return nil, fmt.Errorf("targets.matrix has %d generators, want 2", len(gen.Matrix))
	default:
		return nil, errors.New("targets: set exactly one of clusters, list, objects or matrix")
	}
	p := &plan{}
	for i, g := range gens {
		if c := leafCount(g); c != 1 {
			return nil, fmt.Errorf("%s: set exactly one of clusters, list or objects", fields[i])
		}
		l, err := compileLeaf(fields[i], g)
		if err != nil {
			return nil, err
		}
		p.leaves = append(p.leaves, l)
	}
	var err error
	if p.template, err = compileTemplate(set.Spec.Template, set.Spec.Variant); err != nil {
		return nil, err
	}
	return p, nil
}

func leafCount(g v1alpha1.LeafGenerator) int {
	n := 0
	for _, set := range []bool{g.Clusters != nil, g.List != nil, g.Objects != nil} {
		if set {
			n++
		}
	}
	return n
}

// elements runs the generator: distinct elements that name a cluster, and problems; an error
// when a matrix makes too many (MaxMatrix).
func (p *plan) elements(src *source) ([]element, []Problem, error) {
	elems, problems := p.leaves[0].elements(src)
	if len(p.leaves) == 2 {
		b, more := p.leaves[1].elements(src)
		problems = append(problems, more...)
		var err error
		if elems, err = product(elems, b, p.leaves[0].field, p.leaves[1].field); err != nil {
			return nil, nil, err
		}
	}
	elems, more := dedupe(elems)
	return elems, append(problems, more...), nil
}

// source is what generators read, in a deterministic order whatever the order of the inputs.
type source struct {
	clusters  []Cluster // sorted by name
	byName    map[string]*Cluster
	celValues map[string]ref.Val // CEL maps of the clusters, made once each, when first needed
	objects   []*unstructured.Unstructured
}

func newSource(in Inputs) *source {
	s := &source{
		clusters:  slices.Clone(in.Clusters),
		byName:    make(map[string]*Cluster, len(in.Clusters)),
		celValues: make(map[string]ref.Val),
		objects:   slices.Clone(in.Objects),
	}
	slices.SortFunc(s.clusters, func(a, b Cluster) int { return strings.Compare(a.Name, b.Name) })
	for i := range s.clusters {
		s.byName[s.clusters[i].Name] = &s.clusters[i]
	}
	slices.SortFunc(s.objects, func(a, b *unstructured.Unstructured) int {
		return cmp.Or(strings.Compare(a.GetNamespace(), b.GetNamespace()), strings.Compare(a.GetName(), b.GetName()))
	})
	return s
}

// clusterVal is the CEL value of the named cluster, `target` in templates.
func (s *source) clusterVal(name string) (ref.Val, bool) {
	if v, ok := s.celValues[name]; ok {
		return v, true
	}
	c, ok := s.byName[name]
	if !ok {
		return nil, false
	}
	v := clusterVal(c)
	s.celValues[name] = v
	return v, true
}
