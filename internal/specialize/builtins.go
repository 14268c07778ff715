package specialize

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/kustomize/api/filters/annotations"
	"sigs.k8s.io/kustomize/api/filters/labels"
	"sigs.k8s.io/kustomize/api/filters/replacement"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/resid"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

const fnConfigAPIVersion = "fn.kpt.dev/v1alpha1"

// runApplySetters is the catalog's apply-setters: setter values come from
// the data of a ConfigMap functionConfig.
func runApplySetters(_ context.Context, items []*yaml.RNode, cfg *yaml.RNode) ([]*yaml.RNode, error) {
	if cfg == nil || cfg.GetKind() != "ConfigMap" {
		return nil, errors.New("apply-setters needs a ConfigMap functionConfig (configMap or configPath) with the setter values in data")
	}
	return items, applySetters(items, cfg.GetDataMap())
}

// fieldSpec is shorthand for a kustomize field spec: fields that hold a
// label or annotation map for resources of one kind (any kind when empty).
func fieldSpec(group, version, kind, path string, create bool) types.FieldSpec {
	return types.FieldSpec{Gvk: resid.Gvk{Group: group, Version: version, Kind: kind}, Path: path, CreateIfNotPresent: create}
}

// podTemplateKinds have a pod template under spec/template.
var podTemplateKinds = []resid.Gvk{
	{Version: "v1", Kind: "ReplicationController"}, {Kind: "Deployment"}, {Kind: "ReplicaSet"},
	{Kind: "DaemonSet"}, {Group: "apps", Kind: "StatefulSet"}, {Group: "batch", Kind: "Job"},
}

// labelFields are the fields the catalog's set-labels updates besides
// metadata.labels: selectors that must keep matching the labelled pods, pod
// templates, and label selectors inside pod specs and network policies.
// Selectors of kinds whose selector is optional are only updated, never
// created.
func labelFields() types.FsSlice {
	fs := types.FsSlice{
		fieldSpec("", "", "", "metadata/labels", true),
		fieldSpec("", "v1", "Service", "spec/selector", true),
		fieldSpec("", "v1", "ReplicationController", "spec/selector", true),
		fieldSpec("", "", "Deployment", "spec/selector/matchLabels", true),
		fieldSpec("", "", "ReplicaSet", "spec/selector/matchLabels", true),
		fieldSpec("", "", "DaemonSet", "spec/selector/matchLabels", true),
		fieldSpec("apps", "", "StatefulSet", "spec/selector/matchLabels", true),
		fieldSpec("batch", "", "Job", "spec/selector/matchLabels", false),
		fieldSpec("policy", "", "PodDisruptionBudget", "spec/selector/matchLabels", false),
		fieldSpec("networking.k8s.io", "", "NetworkPolicy", "spec/podSelector/matchLabels", false),
		fieldSpec("networking.k8s.io", "", "NetworkPolicy", "spec/ingress/from/podSelector/matchLabels", false),
		fieldSpec("networking.k8s.io", "", "NetworkPolicy", "spec/egress/to/podSelector/matchLabels", false),
		fieldSpec("apps", "", "StatefulSet", "spec/volumeClaimTemplates/metadata/labels", true),
		fieldSpec("apps", "", "StatefulSet", "spec/volumeClaimTemplates/selector/matchLabels", false),
		fieldSpec("batch", "", "CronJob", "spec/jobTemplate/metadata/labels", true),
		fieldSpec("batch", "", "CronJob", "spec/jobTemplate/spec/selector/matchLabels", false),
		fieldSpec("batch", "", "CronJob", "spec/jobTemplate/spec/template/metadata/labels", true),
		fieldSpec("batch", "", "CronJob", "spec/jobTemplate/spec/template/spec/topologySpreadConstraints/labelSelector/matchLabels", false),
	}
	for _, g := range podTemplateKinds {
		fs = append(fs,
			types.FieldSpec{Gvk: g, Path: "spec/template/metadata/labels", CreateIfNotPresent: true},
			types.FieldSpec{Gvk: g, Path: "spec/template/spec/topologySpreadConstraints/labelSelector/matchLabels"})
	}
	return fs
}

// annotationFields are kustomize's commonAnnotations fields, which the
// catalog's set-annotations uses: metadata.annotations and every pod or job
// template's.
func annotationFields() types.FsSlice {
	fs := types.FsSlice{
		fieldSpec("", "", "", "metadata/annotations", true),
		fieldSpec("batch", "", "CronJob", "spec/jobTemplate/metadata/annotations", true),
		fieldSpec("batch", "", "CronJob", "spec/jobTemplate/spec/template/metadata/annotations", true),
	}
	for _, g := range podTemplateKinds {
		fs = append(fs, types.FieldSpec{Gvk: g, Path: "spec/template/metadata/annotations", CreateIfNotPresent: true})
	}
	return fs
}

// runSetLabels is the catalog's set-labels. Like the catalog function it
// leaves local-config resources (package-context.yaml, function configs)
// alone: they are never applied, so labelling them only adds noise.
func runSetLabels(_ context.Context, items []*yaml.RNode, cfg *yaml.RNode) ([]*yaml.RNode, error) {
	m, err := mapConfig(cfg, "SetLabels", "labels")
	if err != nil {
		return nil, fmt.Errorf("set-labels: %w", err)
	}
	var targets []*yaml.RNode
	for _, n := range items {
		if !isLocalConfig(n) {
			targets = append(targets, n)
		}
	}
	_, err = labels.Filter{Labels: m, FsSlice: labelFields()}.Filter(targets)
	return items, err
}

// runSetAnnotations is the catalog's set-annotations, including the
// additionalAnnotationFields of a SetAnnotations config.
func runSetAnnotations(_ context.Context, items []*yaml.RNode, cfg *yaml.RNode) ([]*yaml.RNode, error) {
	m, err := mapConfig(cfg, "SetAnnotations", "annotations")
	if err != nil {
		return nil, fmt.Errorf("set-annotations: %w", err)
	}
	fs := annotationFields()
	if cfg.GetKind() == "SetAnnotations" {
		var extra struct {
			Fields []types.FieldSpec `yaml:"additionalAnnotationFields"`
		}
		if err := cfg.YNode().Decode(&extra); err != nil {
			return nil, fmt.Errorf("set-annotations: additionalAnnotationFields: %w", err)
		}
		fs = append(fs, extra.Fields...)
	}
	_, err = annotations.Filter{Annotations: m, FsSlice: fs}.Filter(items)
	return items, err
}

// mapConfig reads the key/value map of a ConfigMap functionConfig's data, or
// of field in the function's own config kind.
func mapConfig(cfg *yaml.RNode, kind, field string) (map[string]string, error) {
	switch {
	case cfg == nil:
		return nil, fmt.Errorf("needs a functionConfig: a ConfigMap, or a %s with %s", kind, field)
	case cfg.GetKind() == "ConfigMap":
		return cfg.GetDataMap(), nil
	case cfg.GetKind() == kind:
		m := map[string]string{}
		if f := cfg.Field(field); f != nil {
			if err := f.Value.YNode().Decode(&m); err != nil {
				return nil, fmt.Errorf("%s.%s: %w", kind, field, err)
			}
		}
		return m, nil
	}
	return nil, fmt.Errorf("unsupported functionConfig kind %q; use ConfigMap or %s", cfg.GetKind(), kind)
}

// runApplyReplacements is the catalog's apply-replacements: kustomize
// replacements from an ApplyReplacements config, run by kustomize's own
// replacement filter.
func runApplyReplacements(_ context.Context, items []*yaml.RNode, cfg *yaml.RNode) ([]*yaml.RNode, error) {
	if cfg == nil || cfg.GetKind() != "ApplyReplacements" {
		return nil, fmt.Errorf("apply-replacements needs an ApplyReplacements (%s) functionConfig, set with configPath", fnConfigAPIVersion)
	}
	var f replacement.Filter
	if err := cfg.YNode().Decode(&f); err != nil {
		return nil, fmt.Errorf("apply-replacements: %w", err)
	}
	out, err := f.Filter(items)
	if err != nil {
		return nil, fmt.Errorf("apply-replacements: %w", err)
	}
	return out, nil
}

func isLocalConfig(n *yaml.RNode) bool {
	v := n.GetAnnotations()[localConfigAnno]
	return v != "" && v != "false"
}
