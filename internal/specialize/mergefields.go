package specialize

import (
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/kustomize/kyaml/yaml/merge3"
	"sigs.k8s.io/kustomize/kyaml/yaml/walk"
)

// mergeFields merges one resource with kyaml's merge3 (dest = ours, origin
// = base, update = theirs), exactly as merge3.Merge does, while a wrapping
// visitor records the fields where merge3 would let theirs silently
// overwrite a different local change. Sharing the walk means conflicts are
// judged with the same list semantics (associative lists by merge key from
// the OpenAPI schema, other lists as a whole) as the merge itself.
func mergeFields(base, ours, theirs *yaml.RNode) (*yaml.RNode, []*Conflict, error) {
	dest, theirsCopy := ours.Copy(), theirs.Copy()
	var baseCopy *yaml.RNode
	if base != nil {
		baseCopy = base.Copy()
	}
	v := &conflictVisitor{}
	merged, err := walk.Walker{
		Visitor:            v,
		VisitKeysAsScalars: true,
		Sources:            []*yaml.RNode{dest, baseCopy, theirsCopy},
	}.Walk()
	if err != nil {
		return nil, nil, err
	}
	var conflicts []*Conflict
	for _, c := range v.found {
		// Locate the field in theirs (never changed by the walk) or, for a
		// field theirs removed, in base.
		field, ok := "", false
		if c.update != nil {
			field, ok = fieldPath(theirsCopy.YNode(), c.update)
		}
		if !ok && c.origin != nil && baseCopy != nil {
			field, ok = fieldPath(baseCopy.YNode(), c.origin)
		}
		if !ok {
			field = "(unknown field)"
		}
		conflicts = append(conflicts, &Conflict{Field: field, Ours: c.ours, Theirs: c.theirs})
	}
	return merged, conflicts, nil
}

type foundConflict struct {
	origin, update *yaml.Node
	ours, theirs   string
}

// conflictVisitor is merge3's visitor plus conflict detection.
type conflictVisitor struct {
	merge3.Visitor
	found []foundConflict
}

func (v *conflictVisitor) VisitScalar(s walk.Sources, schema *openapi.ResourceSchema) (*yaml.RNode, error) {
	v.check(s)
	return v.Visitor.VisitScalar(s, schema)
}

func (v *conflictVisitor) VisitList(s walk.Sources, schema *openapi.ResourceSchema, kind walk.ListKind) (*yaml.RNode, error) {
	switch {
	case kind == walk.NonAssociateList:
		// merge3 treats the list as one value.
		v.check(s)
	case yaml.IsMissingOrNull(s.Updated()) && !yaml.IsMissingOrNull(s.Origin()):
		// merge3 drops an associative list theirs removed, edits and all.
		if canonical(s.Dest()) != canonical(s.Origin()) {
			v.record(s)
		}
	}
	return v.Visitor.VisitList(s, schema, kind)
}

// check records a conflict when ours and theirs both changed a value from
// base, to different results.
func (v *conflictVisitor) check(s walk.Sources) {
	d, o, u := canonical(s.Dest()), canonical(s.Origin()), canonical(s.Updated())
	if d != o && u != o && d != u {
		v.record(s)
	}
}

func (v *conflictVisitor) record(s walk.Sources) {
	c := foundConflict{ours: display(s.Dest()), theirs: display(s.Updated())}
	if !yaml.IsMissingOrNull(s.Origin()) {
		c.origin = s.Origin().YNode()
	}
	if !yaml.IsMissingOrNull(s.Updated()) {
		c.update = s.Updated().YNode()
	}
	v.found = append(v.found, c)
}

// canonical renders a value for comparison without comments or styles.
func canonical(n *yaml.RNode) string {
	if yaml.IsMissingOrNull(n) {
		return "\x00absent"
	}
	if n.YNode().Kind == yaml.ScalarNode {
		return n.YNode().Value
	}
	var x any
	if err := n.YNode().Decode(&x); err != nil {
		return n.MustString()
	}
	b, err := yaml.Marshal(x)
	if err != nil {
		return n.MustString()
	}
	return string(b)
}

func display(n *yaml.RNode) string {
	if yaml.IsMissingOrNull(n) {
		return removed
	}
	return shortValue(strings.TrimSpace(canonical(n)))
}

// fieldPath finds target under root and names it the way users write field
// paths: spec.template.spec.containers[name=upf].image. List elements are
// named by their name field when they have one, else by index.
func fieldPath(root, target *yaml.Node) (string, bool) {
	if root == target {
		return "", true
	}
	join := func(prefix, part string) string {
		if prefix == "" || strings.HasPrefix(part, "[") {
			return prefix + part
		}
		return prefix + "." + part
	}
	var find func(n *yaml.Node, prefix string) (string, bool)
	find = func(n *yaml.Node, prefix string) (string, bool) {
		if n == target {
			return prefix, true
		}
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				if p, ok := find(c, prefix); ok {
					return p, true
				}
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if p, ok := find(n.Content[i+1], join(prefix, n.Content[i].Value)); ok {
					return p, true
				}
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				if p, ok := find(c, join(prefix, elementName(c, i))); ok {
					return p, true
				}
			}
		}
		return "", false
	}
	return find(root, "")
}

func elementName(n *yaml.Node, i int) string {
	if n.Kind == yaml.MappingNode {
		for j := 0; j+1 < len(n.Content); j += 2 {
			if n.Content[j].Value == "name" && n.Content[j+1].Kind == yaml.ScalarNode {
				return fmt.Sprintf("[name=%s]", n.Content[j+1].Value)
			}
		}
	}
	return fmt.Sprintf("[%d]", i)
}
