package specialize

import (
	"context"
	"errors"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/kustomize/kyaml/resid"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

const dependsOnAnnotation = "config.kubernetes.io/depends-on"

// nsSetter holds a set-namespace run: the new namespace and, optionally,
// the only old namespace to replace.
type nsSetter struct {
	to, matcher string
}

// change reports whether a namespace value is to be replaced. Without a
// matcher every namespace is (kpt's "replace all"), with one only that one.
func (s nsSetter) change(current string) bool {
	if current == s.to {
		return false
	}
	return s.matcher == "" || current == s.matcher
}

// runSetNamespace is the catalog's set-namespace (v0.4): it sets
// metadata.namespace of namespace-scoped resources, renames the Namespace
// object, and follows the namespace into the fields that refer to it:
// ServiceAccount subjects of (Cluster)RoleBindings, the webhook service of
// CRDs and APIServices, and depends-on annotations that point at resources
// of the package. Local-config resources are skipped. A kind the schema
// does not know counts as namespace-scoped when it has metadata.namespace.
func runSetNamespace(_ context.Context, items []*yaml.RNode, cfg *yaml.RNode) ([]*yaml.RNode, error) {
	s, err := namespaceConfig(cfg)
	if err != nil {
		return nil, err
	}
	var targets []*yaml.RNode
	inPackage := map[string]bool{}
	for _, n := range items {
		if isLocalConfig(n) {
			continue
		}
		targets = append(targets, n)
		if namespaceScoped(n) {
			inPackage[dependsOnRef(n)] = true
		}
	}
	for _, n := range targets {
		if err := s.setResource(n); err != nil {
			return nil, err
		}
	}
	for _, n := range targets {
		if err := s.setDependsOn(n, inPackage); err != nil {
			return nil, err
		}
	}
	return items, nil
}

func namespaceConfig(cfg *yaml.RNode) (nsSetter, error) {
	if cfg == nil {
		return nsSetter{}, errors.New("set-namespace needs a functionConfig: a ConfigMap with data.namespace, or a SetNamespace")
	}
	var s nsSetter
	switch cfg.GetKind() {
	case "ConfigMap":
		data := cfg.GetDataMap()
		s = nsSetter{to: data["namespace"], matcher: data["namespaceMatcher"]}
		// package-context.yaml as config: the package name is the namespace.
		if s.to == "" && cfg.GetName() == packageContextName {
			s.to = data["name"]
		}
	case "SetNamespace":
		to, _ := cfg.GetString("namespace")
		matcher, _ := cfg.GetString("namespaceMatcher")
		s = nsSetter{to: to, matcher: matcher}
	default:
		return nsSetter{}, errors.New("set-namespace: unsupported functionConfig kind " + cfg.GetKind() + "; use ConfigMap or SetNamespace")
	}
	if s.to == "" {
		return nsSetter{}, errors.New("set-namespace: the new namespace is empty")
	}
	return s, nil
}

func (s nsSetter) setResource(n *yaml.RNode) error {
	group, _ := resid.ParseGroupVersion(n.GetApiVersion())
	switch {
	case group == "" && n.GetKind() == "Namespace":
		if s.change(n.GetName()) {
			return n.SetName(s.to)
		}
		return nil
	case group == "apiextensions.k8s.io" && n.GetKind() == "CustomResourceDefinition":
		return s.setField(n, "spec", "conversion", "webhook", "clientConfig", "service", "namespace")
	case group == "apiregistration.k8s.io" && n.GetKind() == "APIService":
		return s.setField(n, "spec", "service", "namespace")
	}
	if group == "rbac.authorization.k8s.io" && (n.GetKind() == "RoleBinding" || n.GetKind() == "ClusterRoleBinding") {
		subjects, err := n.Pipe(yaml.Lookup("subjects"))
		if err != nil {
			return err
		}
		if subjects == nil {
			return s.setMeta(n)
		}
		if err := subjects.VisitElements(func(sub *yaml.RNode) error {
			if k, _ := sub.GetString("kind"); k != "ServiceAccount" {
				return nil
			}
			return s.setField(sub, "namespace")
		}); err != nil {
			return err
		}
	}
	return s.setMeta(n)
}

// setMeta sets metadata.namespace of a namespace-scoped resource; a missing
// namespace means "default" when matching.
func (s nsSetter) setMeta(n *yaml.RNode) error {
	if !namespaceScoped(n) {
		return nil
	}
	current := n.GetNamespace()
	if current == "" {
		current = "default"
	}
	if s.change(current) {
		return n.SetNamespace(s.to)
	}
	return nil
}

// setField replaces a namespace field that is present; absent ones stay
// absent, as in the catalog function.
func (s nsSetter) setField(n *yaml.RNode, path ...string) error {
	f, err := n.Pipe(yaml.Lookup(path...))
	if err != nil || f == nil {
		return err
	}
	if s.change(f.YNode().Value) {
		f.YNode().Value = s.to
	}
	return nil
}

// setDependsOn moves depends-on references to resources of this package
// into the new namespace, so apply ordering survives the rename.
func (s nsSetter) setDependsOn(n *yaml.RNode, inPackage map[string]bool) error {
	v, ok := n.GetAnnotations()[dependsOnAnnotation]
	if !ok {
		return nil
	}
	refs := strings.Split(v, ",")
	changed := false
	for i, ref := range refs {
		ref = strings.TrimSpace(ref)
		parts := strings.Split(ref, "/")
		if len(parts) == 5 && parts[1] == "namespaces" && inPackage[ref] && s.change(parts[2]) {
			parts[2] = s.to
			refs[i] = strings.Join(parts, "/")
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return setAnnotation(n, dependsOnAnnotation, strings.Join(refs, ","))
}

// dependsOnRef is a namespaced resource's reference in kpt's depends-on
// format: group/namespaces/namespace/kind/name.
func dependsOnRef(n *yaml.RNode) string {
	group, _ := resid.ParseGroupVersion(n.GetApiVersion())
	return strings.Join([]string{group, "namespaces", n.GetNamespace(), n.GetKind(), n.GetName()}, "/")
}

func namespaceScoped(n *yaml.RNode) bool {
	scoped, known := openapi.IsNamespaceScoped(yaml.TypeMeta{APIVersion: n.GetApiVersion(), Kind: n.GetKind()})
	if known {
		return scoped
	}
	return n.Field("metadata") != nil && n.Field("metadata").Value.Field("namespace") != nil
}
