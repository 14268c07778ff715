package specialize

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"unicode/utf8"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// starlarkMaxSteps bounds a script even when the caller's context has no
// deadline; a render must not hang a controller. Real scripts over a package
// take a tiny fraction of this.
const starlarkMaxSteps = 100_000_000

// runStarlark is the catalog's starlark function: the script (StarlarkRun
// source, or data.source of a ConfigMap) reads and changes
// ctx.resource_list["items"] and reads ctx.resource_list["functionConfig"].
// It has the catalog's language options (set, while, top-level control
// flow, global reassignment, recursion). To stay deterministic it sees an
// empty ctx.environment and ctx.open_api, and load() is not available.
// Comments are carried over from the input resources, as kpt does.
func runStarlark(ctx context.Context, items []*yaml.RNode, cfg *yaml.RNode) ([]*yaml.RNode, error) {
	inputs, err := setIDs(items)
	if err != nil {
		return nil, err
	}
	out, err := starlarkItems(ctx, items, cfg)
	if err != nil {
		return nil, err
	}
	return out, restoreComments(inputs, out)
}

// starlarkItems runs the script over items, which carry their ids (setIDs), and returns the new
// items: runStarlark in this process, ServeStarlark in a sandbox.
func starlarkItems(ctx context.Context, items []*yaml.RNode, cfg *yaml.RNode) ([]*yaml.RNode, error) {
	src, err := starlarkSource(cfg)
	if err != nil {
		return nil, err
	}
	rl, err := toStarlarkResourceList(items, cfg)
	if err != nil {
		return nil, err
	}
	var printed bytes.Buffer
	dropped := 0
	thread := &starlark.Thread{
		Name: "starlark",
		// What a script prints goes into the error, which reaches a status: its start is kept.
		Print: func(_ *starlark.Thread, msg string) {
			if left := starlarkMaxPrinted - printed.Len(); left > 0 {
				msg += "\n"
				n := min(len(msg), left)
				for n > 0 && n < len(msg) && !utf8.RuneStart(msg[n]) { // not in a character
					n--
				}
				keep := msg[:n]
				printed.WriteString(keep)
				dropped += len(msg) - len(keep)
			} else {
				dropped += len(msg) + 1
			}
		},
	}
	thread.SetMaxExecutionSteps(starlarkMaxSteps)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			thread.Cancel(ctx.Err().Error())
		case <-done:
		}
	}()
	predeclared := starlark.StringDict{"ctx": starlarkstruct.FromStringDict(starlarkstruct.Default, starlark.StringDict{
		"resource_list": rl,
		"environment":   starlark.NewDict(0),
		"open_api":      starlark.NewDict(0),
	})}
	opts := &syntax.FileOptions{Set: true, While: true, TopLevelControl: true, GlobalReassign: true, Recursion: true}
	if _, err := starlark.ExecFileOptions(opts, thread, cfg.GetName()+".star", src, predeclared); err != nil {
		var evalErr *starlark.EvalError
		if errors.As(err, &evalErr) {
			err = errors.New(evalErr.Backtrace())
		}
		if dropped > 0 {
			fmt.Fprintf(&printed, "… (%d bytes more)\n", dropped)
		}
		if printed.Len() > 0 {
			return nil, fmt.Errorf("starlark: %w\nprinted:\n%s", err, printed.String())
		}
		return nil, fmt.Errorf("starlark: %w", err)
	}
	return fromStarlarkItems(rl)
}

func starlarkSource(cfg *yaml.RNode) (string, error) {
	if cfg != nil {
		switch cfg.GetKind() {
		case "StarlarkRun":
			if src, err := cfg.GetString("source"); err == nil && src != "" {
				return src, nil
			}
		case "ConfigMap":
			if src := cfg.GetDataMap()["source"]; src != "" {
				return src, nil
			}
		}
	}
	return "", errors.New("starlark needs a StarlarkRun functionConfig with source, or a ConfigMap with data.source")
}

func toStarlarkResourceList(items []*yaml.RNode, cfg *yaml.RNode) (*starlark.Dict, error) {
	list := make([]starlark.Value, 0, len(items))
	b := newValueBudget()
	for _, n := range items {
		v, err := b.toStarlark(n.YNode())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", resourceID(n), err)
		}
		list = append(list, v)
	}
	fc, err := b.toStarlark(cfg.YNode())
	if err != nil {
		return nil, fmt.Errorf("functionConfig: %w", err)
	}
	rl := starlark.NewDict(4)
	for _, kv := range []struct {
		k string
		v starlark.Value
	}{
		{"apiVersion", starlark.String(kio.ResourceListAPIVersion)},
		{"kind", starlark.String(kio.ResourceListKind)},
		{"items", starlark.NewList(list)},
		{"functionConfig", fc},
	} {
		if err := rl.SetKey(starlark.String(kv.k), kv.v); err != nil {
			return nil, err
		}
	}
	return rl, nil
}

func fromStarlarkItems(rl *starlark.Dict) ([]*yaml.RNode, error) {
	v, found, err := rl.Get(starlark.String("items"))
	if err != nil || !found {
		return nil, errors.New(`starlark: ctx.resource_list["items"] is missing`)
	}
	iter, ok := v.(starlark.Iterable)
	if !ok {
		return nil, fmt.Errorf(`starlark: ctx.resource_list["items"] is a %s, want a list`, v.Type())
	}
	var out []*yaml.RNode
	it := iter.Iterate()
	defer it.Done()
	var x starlark.Value
	b := newValueBudget()
	for it.Next(&x) {
		n, err := b.fromStarlark(x)
		if err != nil {
			return nil, fmt.Errorf("starlark: item %d: %w", len(out), err)
		}
		if n.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("starlark: item %d is a %s, want a dict", len(out), x.Type())
		}
		out = append(out, yaml.NewRNode(n))
	}
	return out, nil
}

// starlarkMaxPrinted bounds what a script's print calls add to its error.
const starlarkMaxPrinted = 4 << 10

// valueBudget bounds the values a conversion between YAML and Starlark makes, and how deeply they
// nest: a few YAML anchors, each aliased ten times by the next, expand to 10^9 values, and a
// script's few steps can make a list that holds itself (l.append(l)) or one that doubles at each
// level ([l, l]), which a conversion would follow without end.
type valueBudget struct{ left, depth int }

// Bounds of one conversion (all items, or the function config): far above a package's values
// (64 MiB of YAML at most).
const (
	starlarkMaxValues = 4_000_000
	starlarkMaxDepth  = 1_000
)

func newValueBudget() *valueBudget { return &valueBudget{left: starlarkMaxValues} }

// take counts one value at the current depth; done leaves it.
func (b *valueBudget) take() error {
	b.left--
	b.depth++
	switch {
	case b.left < 0:
		return fmt.Errorf("more than %d values (YAML aliases expanded)", starlarkMaxValues)
	case b.depth > starlarkMaxDepth:
		return fmt.Errorf("values nested more than %d deep (a list or dict that holds itself?)", starlarkMaxDepth)
	}
	return nil
}

func (b *valueBudget) done() { b.depth-- }

// toStarlark converts YAML to Starlark values. Dicts keep the field order,
// so a script that only changes values leaves the order as it was.
func (b *valueBudget) toStarlark(n *yaml.Node) (starlark.Value, error) {
	if err := b.take(); err != nil {
		return nil, err
	}
	defer b.done()
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return starlark.None, nil
		}
		return b.toStarlark(n.Content[0])
	case yaml.AliasNode:
		return b.toStarlark(n.Alias)
	case yaml.MappingNode:
		d := starlark.NewDict(len(n.Content) / 2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := b.toStarlark(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			if err := d.SetKey(starlark.String(n.Content[i].Value), v); err != nil {
				return nil, err
			}
		}
		return d, nil
	case yaml.SequenceNode:
		elems := make([]starlark.Value, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := b.toStarlark(c)
			if err != nil {
				return nil, err
			}
			elems = append(elems, v)
		}
		return starlark.NewList(elems), nil
	}
	switch n.ShortTag() {
	case yaml.NodeTagNull:
		return starlark.None, nil
	case yaml.NodeTagBool:
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, err
		}
		return starlark.Bool(b), nil
	case yaml.NodeTagInt:
		if i, ok := new(big.Int).SetString(n.Value, 0); ok {
			return starlark.MakeBigInt(i), nil
		}
	case yaml.NodeTagFloat:
		var f float64
		if err := n.Decode(&f); err == nil {
			return starlark.Float(f), nil
		}
	}
	return starlark.String(n.Value), nil
}

func (b *valueBudget) fromStarlark(v starlark.Value) (*yaml.Node, error) {
	if err := b.take(); err != nil {
		return nil, err
	}
	defer b.done()
	scalar := func(tag, value string) *yaml.Node {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: value}
	}
	switch v := v.(type) {
	case starlark.NoneType:
		return scalar(yaml.NodeTagNull, "null"), nil
	case starlark.Bool:
		return scalar(yaml.NodeTagBool, strconv.FormatBool(bool(v))), nil
	case starlark.Int:
		return scalar(yaml.NodeTagInt, v.String()), nil
	case starlark.Float:
		f := float64(v)
		switch {
		case math.IsNaN(f):
			return scalar(yaml.NodeTagFloat, ".nan"), nil
		case math.IsInf(f, 0):
			return scalar(yaml.NodeTagFloat, map[bool]string{true: ".inf", false: "-.inf"}[f > 0]), nil
		}
		return scalar(yaml.NodeTagFloat, strconv.FormatFloat(f, 'g', -1, 64)), nil
	case starlark.String:
		return scalar(yaml.NodeTagString, string(v)), nil
	case *starlark.Dict:
		m := &yaml.Node{Kind: yaml.MappingNode, Tag: yaml.NodeTagMap}
		for _, kv := range v.Items() {
			k, ok := kv[0].(starlark.String)
			if !ok {
				return nil, fmt.Errorf("dict key %s is a %s, want a string", kv[0], kv[0].Type())
			}
			val, err := b.fromStarlark(kv[1])
			if err != nil {
				return nil, err
			}
			m.Content = append(m.Content, scalar(yaml.NodeTagString, string(k)), val)
		}
		return m, nil
	case starlark.Indexable: // list, tuple
		s := &yaml.Node{Kind: yaml.SequenceNode, Tag: yaml.NodeTagSeq}
		for i := 0; i < v.Len(); i++ {
			e, err := b.fromStarlark(v.Index(i))
			if err != nil {
				return nil, err
			}
			s.Content = append(s.Content, e)
		}
		return s, nil
	}
	return nil, fmt.Errorf("cannot write a starlark %s as YAML", v.Type())
}
