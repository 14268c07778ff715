package specialize

import (
	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/kustomize/kyaml/yaml/walk"
)

// copyStyles copies YAML styles (quotes, literal blocks, flow collections)
// from a function's input resource to its output wherever the value did not
// change. Functions that work on plain data, such as starlark scripts, lose
// styles along with comments; without this, every render through them would
// restyle untouched fields and make a variant differ from its blueprint for
// no reason. It walks like kyaml's comments.CopyComments.
func copyStyles(from, to *yaml.RNode) error {
	_, err := walk.Walker{
		Sources:            []*yaml.RNode{from.Copy(), to},
		Visitor:            styleCopier{},
		VisitKeysAsScalars: true,
	}.Walk()
	return err
}

type styleCopier struct{}

func (styleCopier) VisitMap(s walk.Sources, _ *openapi.ResourceSchema) (*yaml.RNode, error) {
	copyStyle(s.Dest(), s.Origin())
	return s.Dest(), nil
}

func (styleCopier) VisitScalar(s walk.Sources, _ *openapi.ResourceSchema) (*yaml.RNode, error) {
	from, to := s.Dest(), s.Origin()
	if !yaml.IsMissingOrNull(from) && !yaml.IsMissingOrNull(to) && from.YNode().Value == to.YNode().Value {
		copyStyle(from, to)
	}
	return s.Dest(), nil
}

// VisitList copies the list's own style and, for lists the walker does not
// descend into (non-associative ones), the styles of elements by position.
func (styleCopier) VisitList(s walk.Sources, _ *openapi.ResourceSchema, kind walk.ListKind) (*yaml.RNode, error) {
	from, to := s.Dest(), s.Origin()
	copyStyle(from, to)
	if kind == walk.NonAssociateList && !yaml.IsMissingOrNull(from) && !yaml.IsMissingOrNull(to) {
		fromItems, toItems := from.Content(), to.Content()
		for i := 0; i < len(fromItems) && i < len(toItems); i++ {
			f, t := fromItems[i], toItems[i]
			if f.Kind == yaml.ScalarNode && t.Kind == yaml.ScalarNode && f.Value == t.Value {
				t.Style = f.Style
			} else if f.Kind == t.Kind && f.Kind != yaml.ScalarNode {
				if err := copyStyles(yaml.NewRNode(f), yaml.NewRNode(t)); err != nil {
					return nil, err
				}
			}
		}
	}
	return s.Dest(), nil
}

func copyStyle(from, to *yaml.RNode) {
	if yaml.IsMissingOrNull(from) || yaml.IsMissingOrNull(to) || from.YNode().Kind != to.YNode().Kind {
		return
	}
	to.YNode().Style = from.YNode().Style
}
