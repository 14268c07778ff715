package specialize

import (
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/comments"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Function is one KRM function of a pipeline, as in a Kptfile.
type Function struct {
	Image      string
	Exec       string
	ConfigMap  map[string]string
	ConfigPath string
	Name       string
	// Selectors and Exclude narrow the resources the function sees, with
	// kpt's semantics: a resource is selected when it matches any selector
	// (all of them when there is none) and no exclusion.
	Selectors []Selector
	Exclude   []Selector
}

// Selector matches resources; empty fields match anything and labels and
// annotations must all be present with the given values.
type Selector struct {
	APIVersion, Kind, Name, Namespace string
	Labels, Annotations               map[string]string
}

// builtin is a catalog function implemented in process. It mutates or
// replaces items and returns the new list.
type builtin func(ctx context.Context, items []*yaml.RNode, config *yaml.RNode) ([]*yaml.RNode, error)

// builtins are the catalog functions flotilla runs without a container
// runtime, by the image's last path element.
var builtins = map[string]builtin{
	"apply-setters":      runApplySetters,
	"set-namespace":      runSetNamespace,
	"set-labels":         runSetLabels,
	"set-annotations":    runSetAnnotations,
	"apply-replacements": runApplyReplacements,
	"starlark":           runStarlark,
}

// catalogPrefixes are the registries of kpt's function catalog. An image from
// elsewhere that happens to be named set-labels is someone else's function,
// so it is not replaced by the built-in.
var catalogPrefixes = []string{"", "gcr.io/kpt-fn/", "ghcr.io/kptdev/krm-functions-catalog/"}

// lookupBuiltin resolves a catalog image such as
// gcr.io/kpt-fn/set-namespace:v0.4.1 or
// ghcr.io/kptdev/krm-functions-catalog/set-namespace@sha256:... to its
// built-in implementation, whatever the tag.
func lookupBuiltin(image string) (string, builtin, bool) {
	ref, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref = ref[:i]
	}
	for _, prefix := range catalogPrefixes {
		name, ok := strings.CutPrefix(ref, prefix)
		if !ok || strings.Contains(name, "/") {
			continue
		}
		if b, ok := builtins[name]; ok {
			return name, b, true
		}
	}
	return "", nil, false
}

// BuiltinFunctions lists the catalog functions that run in process, for
// messages and docs.
func BuiltinFunctions() []string { return slices.Sorted(maps.Keys(builtins)) }

// runner runs pipeline functions against a package.
type runner struct {
	exec ExecPolicy
	// configs holds the package files as they were when the pipeline
	// started: kpt reads configPath files from disk before it runs the
	// pipeline, so a function cannot change the config of a later one.
	configs map[string][]*yaml.RNode
}

func newRunner(policy ExecPolicy, items []*yaml.RNode) *runner {
	r := &runner{exec: policy, configs: map[string][]*yaml.RNode{}}
	for _, n := range items {
		file := filePath(n)
		r.configs[file] = append(r.configs[file], n.Copy())
	}
	return r
}

// run runs one function over items and returns the new item list. Only the
// selected items are shown to the function; the others are kept as they are.
func (r *runner) run(ctx context.Context, f Function, items []*yaml.RNode) ([]*yaml.RNode, error) {
	cfg, err := r.functionConfig(f)
	if err != nil {
		return nil, fmt.Errorf("function %s: %w", f.describe(), err)
	}
	var selected, rest []*yaml.RNode
	for _, n := range items {
		if f.selects(n) {
			selected = append(selected, n)
		} else {
			rest = append(rest, n)
		}
	}
	var out []*yaml.RNode
	switch {
	case f.Exec != "":
		out, err = runExec(ctx, r.exec, f.Exec, selected, cfg)
	case f.Image != "":
		name, b, ok := lookupBuiltin(f.Image)
		switch {
		case !ok:
			return nil, fmt.Errorf("function %s: no container runtime is configured, so only the built-in catalog functions (%s) and exec functions can run",
				f.describe(), strings.Join(BuiltinFunctions(), ", "))
		case name == "starlark" && r.exec.Sandbox != "":
			out, err = runSandboxed(ctx, r.exec, selected, cfg)
		default:
			out, err = b(ctx, selected, cfg)
		}
	default:
		return nil, fmt.Errorf("function %s: set image or exec", f.describe())
	}
	if err != nil {
		return nil, fmt.Errorf("function %s: %w", f.describe(), err)
	}
	for _, n := range out {
		if err := kioutil.CopyLegacyAnnotations(n); err != nil {
			return nil, fmt.Errorf("function %s: %w", f.describe(), err)
		}
	}
	return append(out, rest...), nil
}

func (f Function) describe() string {
	id := f.Image
	if id == "" {
		id = f.Exec
	}
	if f.Name != "" {
		return fmt.Sprintf("%q (%s)", f.Name, id)
	}
	return fmt.Sprintf("%q", id)
}

// functionConfig builds the functionConfig the way kpt does: configMap
// becomes a ConfigMap named function-input with string values, configPath
// names a resource file of the package.
func (r *runner) functionConfig(f Function) (*yaml.RNode, error) {
	switch {
	case f.ConfigPath != "":
		nodes := r.configs[path.Clean(f.ConfigPath)]
		if len(nodes) != 1 {
			return nil, fmt.Errorf("configPath %q must name a file of the package with exactly one resource", f.ConfigPath)
		}
		cfg := nodes[0].Copy()
		for _, a := range internalAnnotations {
			if err := cfg.PipeE(yaml.ClearAnnotation(a)); err != nil {
				return nil, err
			}
		}
		return cfg, yaml.ClearEmptyAnnotations(cfg)
	case len(f.ConfigMap) > 0:
		return configMap(f.ConfigMap)
	}
	return nil, nil
}

func configMap(data map[string]string) (*yaml.RNode, error) {
	cm, err := yaml.Parse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: function-input\n")
	if err != nil {
		return nil, err
	}
	m := &yaml.Node{Kind: yaml.MappingNode}
	for _, k := range slices.Sorted(maps.Keys(data)) {
		m.Content = append(m.Content,
			&yaml.Node{Kind: yaml.ScalarNode, Tag: yaml.NodeTagString, Value: k},
			&yaml.Node{Kind: yaml.ScalarNode, Tag: yaml.NodeTagString, Value: data[k]})
	}
	return cm, cm.PipeE(yaml.SetField("data", yaml.NewRNode(m)))
}

func (f Function) selects(n *yaml.RNode) bool {
	for _, s := range f.Exclude {
		if s.matches(n) {
			return false
		}
	}
	if len(f.Selectors) == 0 {
		return true
	}
	for _, s := range f.Selectors {
		if s.matches(n) {
			return true
		}
	}
	return false
}

func (s Selector) matches(n *yaml.RNode) bool {
	if (s.APIVersion != "" && s.APIVersion != n.GetApiVersion()) ||
		(s.Kind != "" && s.Kind != n.GetKind()) ||
		(s.Name != "" && s.Name != n.GetName()) ||
		(s.Namespace != "" && s.Namespace != n.GetNamespace()) {
		return false
	}
	return subset(s.Labels, n.GetLabels()) && subset(s.Annotations, n.GetAnnotations())
}

func subset(want, have map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// setIDs numbers items so comments can be carried over from a function's
// input to its output: functions that work on plain data (starlark, most
// exec functions) drop YAML comments, and kpt restores them the same way.
func setIDs(items []*yaml.RNode) (map[string]*yaml.RNode, error) {
	byID := map[string]*yaml.RNode{}
	for i, n := range items {
		id := fmt.Sprint(i)
		if err := n.PipeE(yaml.SetAnnotation(kioutil.IdAnnotation, id)); err != nil {
			return nil, err
		}
		byID[id] = n
	}
	return byID, nil
}

// restoreComments copies comments (and styles) from the inputs to the
// outputs with the same id and removes the ids again.
func restoreComments(inputs map[string]*yaml.RNode, out []*yaml.RNode) error {
	for _, n := range out {
		id := n.GetAnnotations()[kioutil.IdAnnotation]
		if in, ok := inputs[id]; ok {
			if err := comments.CopyComments(in, n); err != nil {
				return err
			}
			if err := copyStyles(in, n); err != nil {
				return err
			}
		}
		for _, a := range []string{kioutil.IdAnnotation, kioutil.LegacyIdAnnotation} { //nolint:staticcheck // older functions write the legacy name

			if err := n.PipeE(yaml.ClearAnnotation(a)); err != nil {
				return err
			}
		}
	}
	for _, in := range inputs {
		if err := in.PipeE(yaml.ClearAnnotation(kioutil.IdAnnotation)); err != nil {
			return err
		}
	}
	return nil
}
