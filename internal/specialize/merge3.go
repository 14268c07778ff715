package specialize

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"

	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/resid"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Merge3 carries direct edits of a published variant over to a new render:
// base is the previous render, ours the downstream package as it is in git
// now, theirs the new render. Resources are matched by group, kind,
// namespace and name and merged field by field with kyaml's merge3 (kpt's
// resource-merge), which keeps local edits of fields the render did not
// change. Where kyaml would silently let the render win, Merge3 returns a
// *Conflict instead:
//   - a field changed in both, to different values;
//   - a resource edited downstream that the new render removes.
//
// A resource deleted downstream stays deleted, as with kpt. Files that are
// not KRM merge whole: the side that changed wins, both changing them
// differently is a conflict. The Kptfile and package-context.yaml are
// flotilla's and always come from theirs.
func Merge3(base, ours, theirs map[string][]byte) (map[string][]byte, error) {
	if filesEqual(base, ours) {
		return maps.Clone(theirs), nil
	}
	out := map[string][]byte{}
	var conflicts []*Conflict
	sides := [3]side{{}, {}, {}}
	for _, p := range slices.Sorted(maps.Keys(union(base, ours, theirs))) {
		if p == kptfileName || p == packageContextFile {
			if t, ok := theirs[p]; ok {
				out[p] = t
			}
			continue
		}
		parsed, krm, err := parseSides(p, [3]map[string][]byte{base, ours, theirs})
		if err != nil {
			return nil, err
		}
		if !krm {
			data, ok, c := mergeBytes(p, base, ours, theirs)
			if c != nil {
				conflicts = append(conflicts, c)
			} else if ok {
				out[p] = data
			}
			continue
		}
		for i, nodes := range parsed {
			for _, n := range nodes {
				if err := sides[i].add(n); err != nil {
					return nil, err
				}
			}
		}
	}

	var merged []*resource
	for _, k := range sortedResKeys(sides) {
		r, c, err := mergeResource(sides[0][k], sides[1][k], sides[2][k])
		if err != nil {
			return nil, err
		}
		conflicts = append(conflicts, c...)
		if r != nil {
			merged = append(merged, r)
		}
	}
	if err := firstConflict(conflicts); err != nil {
		return nil, err
	}
	files, err := writeMerged(merged)
	if err != nil {
		return nil, err
	}
	maps.Copy(out, files)
	return out, nil
}

// resKey identifies a resource across the three sides the way kpt's
// resource-merge does: the API version may change between blueprint
// revisions without the resource becoming a different one.
type resKey struct{ group, kind, namespace, name string }

// resource is a parsed resource with where it was found. fromTheirs marks a
// merge result that takes its place in the file from theirs.
type resource struct {
	node       *yaml.RNode
	file       string
	index      int
	seqIndent  string
	fromTheirs bool
}

// side holds the resources of one of base, ours and theirs.
type side map[resKey]*resource

func (s side) add(n *yaml.RNode) error {
	file, index, err := fileAndIndex(n)
	if err != nil {
		return err
	}
	group, _ := resid.ParseGroupVersion(n.GetApiVersion())
	k := resKey{group, n.GetKind(), n.GetNamespace(), n.GetName()}
	if prev, dup := s[k]; dup {
		return fmt.Errorf("%s: %s is also in %s; a package must hold each resource once", file, resourceID(n), prev.file)
	}
	seqIndent := n.GetAnnotations()[kioutil.SeqIndentAnnotation]
	for _, a := range internalAnnotations {
		if err := n.PipeE(yaml.ClearAnnotation(a)); err != nil {
			return err
		}
	}
	if err := yaml.ClearEmptyAnnotations(n); err != nil {
		return err
	}
	s[k] = &resource{node: n, file: file, index: index, seqIndent: seqIndent}
	return nil
}

func sortedResKeys(sides [3]side) []resKey {
	set := map[resKey]bool{}
	for _, s := range sides {
		for k := range s {
			set[k] = true
		}
	}
	keys := make([]resKey, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		return cmp.Or(cmp.Compare(a.group, b.group), cmp.Compare(a.kind, b.kind),
			cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.name, b.name)) < 0
	})
	return keys
}

// mergeResource decides one resource with kpt's resource-merge rules and
// reports the cases kpt would resolve silently against a local edit.
func mergeResource(b, o, t *resource) (*resource, []*Conflict, error) {
	switch {
	case o == nil && (b != nil || t == nil):
		// deleted downstream (kept deleted, as kpt does), or gone everywhere
		return nil, nil, nil
	case o == nil:
		t.fromTheirs = true
		return t, nil, nil
	case t == nil && b == nil:
		return o, nil, nil // added downstream
	case t == nil:
		if sameContent(b.node, o.node) {
			return nil, nil, nil
		}
		return nil, []*Conflict{{File: o.file, Resource: resourceID(o.node), Ours: "(edited)", Theirs: removed}}, nil
	}
	var baseNode *yaml.RNode
	if b != nil {
		baseNode = b.node
	}
	switch {
	case b != nil && sameContent(b.node, o.node):
		return &resource{node: t.node, file: o.file, index: o.index, seqIndent: o.seqIndent}, nil, nil
	case b != nil && sameContent(b.node, t.node), sameContent(o.node, t.node):
		return o, nil, nil
	}
	node, conflicts, err := mergeFields(baseNode, o.node, t.node)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: merge %s: %w", o.file, resourceID(o.node), err)
	}
	for _, c := range conflicts {
		c.File, c.Resource = o.file, resourceID(o.node)
	}
	return &resource{node: node, file: o.file, index: o.index, seqIndent: o.seqIndent}, conflicts, nil
}

// writeMerged writes resources to their files: those placed by ours first,
// in ours' order, then new ones from theirs in theirs' order.
func writeMerged(rs []*resource) (map[string][]byte, error) {
	byFile := map[string][]*resource{}
	for _, r := range rs {
		byFile[r.file] = append(byFile[r.file], r)
	}
	out := map[string][]byte{}
	for file, list := range byFile {
		sort.SliceStable(list, func(i, j int) bool {
			if list[i].fromTheirs != list[j].fromTheirs {
				return !list[i].fromTheirs
			}
			return list[i].index < list[j].index
		})
		nodes := make([]*yaml.RNode, len(list))
		for i, r := range list {
			nodes[i] = r.node
			if r.seqIndent != "" {
				if err := r.node.PipeE(yaml.SetAnnotation(kioutil.SeqIndentAnnotation, r.seqIndent)); err != nil {
					return nil, err
				}
			}
		}
		b, err := encodeNodes(nodes)
		if err != nil {
			return nil, fmt.Errorf("write %s: %w", file, err)
		}
		out[file] = b
	}
	return out, nil
}

// parseSides parses one path on each side. krm is false when any side holds
// something other than KRM resources there; such files merge as bytes.
func parseSides(p string, files [3]map[string][]byte) (parsed [3][]*yaml.RNode, krm bool, err error) {
	names := [3]string{"previous render", "downstream package", "new render"}
	for i, f := range files {
		data, ok := f[p]
		if !ok {
			continue
		}
		nodes, isKRM, err := readKRMFile(p, data)
		if err != nil {
			return parsed, false, fmt.Errorf("%s: %w", names[i], err)
		}
		if !isKRM {
			return parsed, false, nil
		}
		parsed[i] = nodes
	}
	return parsed, true, nil
}

// mergeBytes merges a file that is not KRM: whichever side changed it wins.
func mergeBytes(p string, base, ours, theirs map[string][]byte) (data []byte, ok bool, c *Conflict) {
	b, inB := base[p]
	o, inO := ours[p]
	t, inT := theirs[p]
	same := func(x []byte, inX bool, y []byte, inY bool) bool { return inX == inY && bytes.Equal(x, y) }
	switch {
	case same(o, inO, b, inB), same(o, inO, t, inT):
		return t, inT, nil
	case same(t, inT, b, inB):
		return o, inO, nil
	}
	return nil, false, &Conflict{File: p, Ours: "(edited)", Theirs: "(edited)"}
}

// sameContent compares two resources by their data, ignoring comments,
// formatting and field order.
func sameContent(a, b *yaml.RNode) bool {
	var x, y any
	if a.YNode().Decode(&x) != nil || b.YNode().Decode(&y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func filesEqual(a, b map[string][]byte) bool {
	return maps.EqualFunc(a, b, bytes.Equal)
}

func union(ms ...map[string][]byte) map[string]bool {
	out := map[string]bool{}
	for _, m := range ms {
		for k := range m {
			out[k] = true
		}
	}
	return out
}
