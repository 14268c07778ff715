package generate

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/google/cel-go/common/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// defaultClusterExpr is the objects generator's clusterExpr when the spec leaves it empty (the
// CRD defaults it too).
const defaultClusterExpr = "object.metadata.name"

// element is one item a generator yields.
type element struct {
	cluster string // empty only for list elements, which may leave it to the other side of a matrix
	values  map[string]string
	// origin says where a list element is in the spec, for the problem when no cluster is
	// named; set only for elements without a cluster.
	origin string
	key    string // set by dedupe
}

// leaf is a compiled leaf generator: exactly one of clusters, list (isList) or objects.
type leaf struct {
	field    string // targets or targets.matrix[i], for messages
	clusters labels.Selector
	isList   bool
	list     []v1alpha1.ListElement
	objects  *objectsLeaf
}

type objectsLeaf struct {
	apiVersion, kind string
	selector         labels.Selector
	cluster, values  *expr // values is nil when the spec has no valuesExpr
}

func compileLeaf(field string, g v1alpha1.LeafGenerator) (*leaf, error) {
	switch {
	case g.Clusters != nil:
		sel, err := selector(field+".clusters.selector", g.Clusters.Selector)
		return &leaf{field: field, clusters: sel}, err
	case g.List != nil:
		return &leaf{field: field, isList: true, list: g.List}, nil
	case g.Objects != nil:
		return compileObjects(field+".objects", g.Objects)
	}
	return nil, fmt.Errorf("%s: set one of clusters, list or objects", field)
}

func compileObjects(field string, g *v1alpha1.ObjectGenerator) (*leaf, error) {
	if g.APIVersion == "" || g.Kind == "" {
		return nil, fmt.Errorf("%s: set apiVersion and kind", field)
	}
	sel, err := selector(field+".selector", g.Selector)
	if err != nil {
		return nil, err
	}
	env, err := objectEnv()
	if err != nil {
		return nil, err
	}
	o := &objectsLeaf{apiVersion: g.APIVersion, kind: g.Kind, selector: sel}
	if o.cluster, err = compile(env, field+".clusterExpr", cmp.Or(g.ClusterExpr, defaultClusterExpr), types.StringType); err != nil {
		return nil, err
	}
	if g.ValuesExpr != "" {
		if o.values, err = compile(env, field+".valuesExpr", g.ValuesExpr, mapOfString); err != nil {
			return nil, err
		}
	}
	return &leaf{field: field, objects: o}, nil
}

func selector(field string, s v1alpha1.LabelSelector) (labels.Selector, error) {
	sel, err := s.Selector()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	return sel, nil
}

// elements yields the leaf's elements, and problems for objects whose expressions fail.
func (l *leaf) elements(src *source) ([]element, []Problem) {
	switch {
	case l.clusters != nil:
		var out []element
		for i := range src.clusters {
			if l.clusters.Matches(labels.Set(src.clusters[i].Labels)) {
				out = append(out, element{cluster: src.clusters[i].Name})
			}
		}
		return out, nil
	case l.isList:
		out := make([]element, 0, len(l.list))
		for i, e := range l.list {
			el := element{cluster: e.Cluster, values: e.Values}
			if e.Cluster == "" {
				el.origin = fmt.Sprintf("%s.list[%d]", l.field, i)
			}
			out = append(out, el)
		}
		return out, nil
	}
	return l.objects.elements(src.objects)
}

func (o *objectsLeaf) elements(objects []*unstructured.Unstructured) ([]element, []Problem) {
	var out []element
	var problems []Problem
	for _, obj := range objects {
		if obj.GetAPIVersion() != o.apiVersion || obj.GetKind() != o.kind || !o.selector.Matches(labels.Set(obj.GetLabels())) {
			continue
		}
		id := obj.GetKind() + "/" + obj.GetName()
		about := "object " + id
		vars := &objectVars{object: types.NewStringInterfaceMap(types.DefaultTypeAdapter, obj.Object)}
		cluster, err := o.cluster.evalString(vars, about)
		if err == nil && cluster == "" {
			err = o.cluster.errorf(about, "gives an empty cluster name")
		}
		if err != nil {
			problems = append(problems, Problem{Target: id, Message: err.Error()})
			continue
		}
		el := element{cluster: cluster}
		if o.values != nil {
			if el.values, err = o.values.evalStringMap(vars, about); err != nil {
				problems = append(problems, Problem{Target: id, Message: err.Error()})
				continue
			}
		}
		out = append(out, el)
	}
	return out, problems
}

// MaxMatrix bounds the pairs a matrix makes: ten per cluster of a 10,000-cluster fleet. Two lists
// of 10,000 elements (the most the schema allows) that name no cluster, or the same one, would
// make 10^8, a few tens of GB of elements and problems.
const MaxMatrix = 100_000

// product is the matrix of a and b: every pair, values merged (b wins), keeping only pairs that
// agree on the cluster when both name one. It indexes b by cluster, so two lists of 10,000
// clusters cost 10,000 lookups, not 10^8 comparisons. More than MaxMatrix pairs is an error,
// counted before any is made.
func product(a, b []element, fieldA, fieldB string) ([]element, error) {
	byCluster := map[string][]element{}
	var anyCluster []element
	for _, e := range b {
		if e.cluster == "" {
			anyCluster = append(anyCluster, e)
		} else {
			byCluster[e.cluster] = append(byCluster[e.cluster], e)
		}
	}
	pairs := 0
	for _, x := range a {
		if x.cluster == "" {
			pairs += len(b)
		} else {
			pairs += len(anyCluster) + len(byCluster[x.cluster])
		}
		if pairs > MaxMatrix {
			return nil, fmt.Errorf("targets.matrix: %s (%d elements) × %s (%d elements) makes more than %d pairs, the most a set generates; "+
				"have a list name its clusters, or split the set", fieldA, len(a), fieldB, len(b), MaxMatrix)
		}
	}
	out := make([]element, 0, pairs)
	pair := func(x, y element) {
		p := element{cluster: cmp.Or(x.cluster, y.cluster), values: merge(x.values, y.values)}
		if p.cluster == "" {
			p.origin = cmp.Or(x.origin, fieldA) + "+" + cmp.Or(y.origin, fieldB)
		}
		out = append(out, p)
	}
	for _, x := range a {
		if x.cluster == "" {
			for _, y := range b {
				pair(x, y)
			}
			continue
		}
		for _, y := range anyCluster {
			pair(x, y)
		}
		for _, y := range byCluster[x.cluster] {
			pair(x, y)
		}
	}
	return out, nil
}

// merge returns a's values overridden by b's. It shares a map when only one side has values:
// element values are never modified.
func merge(a, b map[string]string) map[string]string {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	m := maps.Clone(a)
	maps.Copy(m, b)
	return m
}

// dedupe drops elements without a cluster (returning a problem for each) and repeated elements:
// the same cluster with the same values is the same target.
func dedupe(elems []element) ([]element, []Problem) {
	var problems []Problem
	seen := make(map[string]bool, len(elems))
	out := elems[:0:0]
	for _, e := range elems {
		if e.cluster == "" {
			problems = append(problems, Problem{Target: e.origin, Message: fmt.Sprintf(
				"%s names no cluster: set its cluster (it may be left out only in a matrix whose other generator names the cluster)", e.origin)})
			continue
		}
		e.key = targetKey(e.cluster, e.values)
		if seen[e.key] {
			continue
		}
		seen[e.key] = true
		out = append(out, e)
	}
	return out, problems
}

// targetKey is an element's identity: the cluster and its sorted values, e.g. edge01 or
// edge01{slice=a,zone=b}. Keys and values with separators in them are quoted, so distinct
// elements have distinct keys.
func targetKey(cluster string, values map[string]string) string {
	if len(values) == 0 {
		return cluster
	}
	var b strings.Builder
	b.WriteString(cluster)
	b.WriteByte('{')
	for i, k := range slices.Sorted(maps.Keys(values)) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(keyPart(k))
		b.WriteByte('=')
		b.WriteString(keyPart(values[k]))
	}
	b.WriteByte('}')
	return b.String()
}

func keyPart(s string) string {
	if s == "" || strings.ContainsAny(s, "{},=\"\\ ") || strconv.Quote(s) != `"`+s+`"` {
		return strconv.Quote(s)
	}
	return s
}
