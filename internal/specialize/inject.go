package specialize

import (
	"fmt"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

const (
	configInjectionAnnotation  = "kpt.dev/config-injection"
	injectedResourceAnnotation = "kpt.dev/injected-resource"
)

// Injection is an in-cluster object selected for config injection (for
// example the target's WorkloadCluster), in the order of the injectors that
// selected it.
type Injection struct {
	Kind string
	// Name is the in-cluster object's name; it is recorded in the
	// kpt.dev/injected-resource annotation. Empty means metadata.name of Object.
	Name   string
	Object map[string]any
}

// inject fills the package's injection points following Porch's rules: a
// resource annotated kpt.dev/config-injection takes the spec (data for a
// ConfigMap) of the first injection of the same kind and apiVersion. Names
// need not match: the package author names the injection point, the
// cluster's owners name the object, and the injector list is the glue.
// A required point without a match is an error; an optional one keeps the
// blueprint's content, which then acts as the default.
func inject(items []*yaml.RNode, injections []Injection) error {
	seen := map[string]string{}
	for _, item := range items {
		mode, ok := item.GetAnnotations()[configInjectionAnnotation]
		if !ok {
			continue
		}
		file, id := filePath(item), resourceID(item)
		if mode != "required" && mode != "optional" {
			return fmt.Errorf("%s: %s has %s: %q; use required or optional", file, id, configInjectionAnnotation, mode)
		}
		key := item.GetKind() + "/" + item.GetName()
		if other, dup := seen[key]; dup {
			return fmt.Errorf("%s: %s is a second injection point named %s (first in %s); rename one", file, id, key, other)
		}
		seen[key] = file

		inj, found := selectInjection(item, injections)
		if !found {
			if mode == "required" {
				return fmt.Errorf("%s: %s requires config injection but no injector selected a %s %s; add an injector for it",
					file, id, item.GetApiVersion(), item.GetKind())
			}
			continue
		}
		if err := injectInto(item, inj); err != nil {
			return fmt.Errorf("%s: inject into %s: %w", file, id, err)
		}
	}
	return nil
}

// selectInjection returns the first injection whose kind (and apiVersion,
// when the object states one) is the injection point's.
func selectInjection(item *yaml.RNode, injections []Injection) (Injection, bool) {
	for _, inj := range injections {
		if inj.Kind != item.GetKind() {
			continue
		}
		if v, ok := inj.Object["apiVersion"].(string); ok && v != item.GetApiVersion() {
			continue
		}
		return inj, true
	}
	return Injection{}, false
}

func injectInto(item *yaml.RNode, inj Injection) error {
	field := "spec"
	if item.GetApiVersion() == "v1" && item.GetKind() == "ConfigMap" {
		field = "data"
	}
	name := inj.Name
	if name == "" {
		if md, ok := inj.Object["metadata"].(map[string]any); ok {
			name, _ = md["name"].(string)
		}
	}
	value, ok := inj.Object[field]
	if !ok {
		if field != "data" {
			return fmt.Errorf("%s %s has no %s to inject", inj.Kind, name, field)
		}
		value = map[string]any{} // an empty ConfigMap injects empty data
	}
	// FromMap encodes through YAML with sorted keys, so the injected
	// content does not depend on map iteration order.
	rn, err := yaml.FromMap(map[string]any{field: value})
	if err != nil {
		return fmt.Errorf("encode %s of %s %s: %w", field, inj.Kind, name, err)
	}
	if err := item.PipeE(yaml.SetField(field, rn.Field(field).Value)); err != nil {
		return err
	}
	return setAnnotation(item, injectedResourceAnnotation, name)
}
