package generate

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// defaultNameExpr is the template's nameExpr when the spec leaves it empty.
const defaultNameExpr = "set.name + '-' + target.name"

// template is a compiled DeploymentTemplate.
type template struct {
	name           *expr
	namespace      string
	namespaceExpr  *expr // nil: namespace applies
	deletionPolicy v1alpha1.DeletionPolicy
	labels         []keyedExpr // sorted by key
	annotations    []keyedExpr // sorted by key
	layers         []layerExpr
	injectors      []injectorExpr
	dependsOn      []*expr
}

// layerExpr is a variant values layer: a fixed ConfigMap name or an expression giving it.
type layerExpr struct {
	name     string
	expr     *expr
	required bool
	facts    bool
}

type injectorExpr struct {
	apiVersion, kind string
	expr             *expr
}

type keyedExpr struct {
	key  string
	expr *expr
}

// compileTemplate compiles the template's expressions and checks what does not depend on the
// target: a wrong namespace, label key or deletion policy is wrong for every target.
func compileTemplate(t v1alpha1.DeploymentTemplate, variant *v1alpha1.VariantSpec) (*template, error) {
	env, err := templateEnv()
	if err != nil {
		return nil, err
	}
	out := &template{namespace: t.Namespace, deletionPolicy: cmp.Or(t.DeletionPolicy, v1alpha1.DeletionPolicyDelete)}
	if out.name, err = compile(env, "template.nameExpr", cmp.Or(t.NameExpr, defaultNameExpr), types.StringType); err != nil {
		return nil, err
	}
	if t.NamespaceExpr != "" {
		if out.namespaceExpr, err = compile(env, "template.namespaceExpr", t.NamespaceExpr, types.StringType); err != nil {
			return nil, err
		}
	} else if t.Namespace != "" {
		if errs := validation.IsDNS1123Label(t.Namespace); len(errs) > 0 {
			return nil, fmt.Errorf("template.namespace %q is not a valid namespace: %s", t.Namespace, strings.Join(errs, "; "))
		}
	}
	switch out.deletionPolicy {
	case v1alpha1.DeletionPolicyDelete, v1alpha1.DeletionPolicyOrphan:
	default:
		return nil, fmt.Errorf("template.deletionPolicy %q: want Delete or Orphan", t.DeletionPolicy)
	}
	if out.labels, err = compileKeyed(env, "template.labels", t.Labels); err != nil {
		return nil, err
	}
	if out.annotations, err = compileKeyed(env, "template.annotations", t.Annotations); err != nil {
		return nil, err
	}
	for i, d := range t.DependsOn {
		e, err := compile(env, fmt.Sprintf("template.dependsOn[%d].nameExpr", i), d.NameExpr, types.StringType)
		if err != nil {
			return nil, err
		}
		out.dependsOn = append(out.dependsOn, e)
	}
	if variant == nil {
		return out, nil
	}
	for i, l := range variant.Values.Hierarchy {
		le := layerExpr{name: l.ConfigMap, required: l.Required, facts: l.Facts}
		if l.ConfigMapExpr != "" {
			if le.expr, err = compile(env, fmt.Sprintf("variant.values.hierarchy[%d].configMapExpr", i), l.ConfigMapExpr, types.StringType); err != nil {
				return nil, err
			}
		}
		out.layers = append(out.layers, le)
	}
	for i, in := range variant.Injectors {
		ie := injectorExpr{apiVersion: cmp.Or(in.APIVersion, v1alpha1.GroupVersion.String()), kind: in.Kind}
		if ie.expr, err = compile(env, fmt.Sprintf("variant.injectors[%d].nameExpr", i), in.NameExpr, types.StringType); err != nil {
			return nil, err
		}
		out.injectors = append(out.injectors, ie)
	}
	return out, nil
}

// variant resolves the variant's ConfigMap and injected object names for one target.
func (t *template) variant(out *Target, vars *templateVars, about string) error {
	for _, l := range t.layers {
		name := l.name
		if l.expr != nil {
			var err error
			if name, err = l.expr.evalString(vars, about); err != nil {
				return err
			}
		}
		out.Layers = append(out.Layers, Layer{ConfigMap: name, Required: l.required, Facts: l.facts})
	}
	for _, in := range t.injectors {
		name, err := in.expr.evalString(vars, about)
		if err != nil {
			return err
		}
		out.Injectors = append(out.Injectors, ObjectRef{APIVersion: in.apiVersion, Kind: in.kind, Name: name})
	}
	return nil
}

// compileKeyed compiles label or annotation expressions in key order, so the first error is
// always the same one.
func compileKeyed(env *cel.Env, field string, m map[string]string) ([]keyedExpr, error) {
	out := make([]keyedExpr, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		f := fmt.Sprintf("%s[%q]", field, k)
		// Annotation keys are validated as Kubernetes does: lower-cased.
		key := k
		if field == "template.annotations" {
			key = strings.ToLower(k)
		}
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			return nil, fmt.Errorf("%s: %q is not a valid key: %s", f, k, strings.Join(errs, "; "))
		}
		e, err := compile(env, f, m[k], types.StringType)
		if err != nil {
			return nil, err
		}
		out = append(out, keyedExpr{key: k, expr: e})
	}
	return out, nil
}

// target evaluates the template for one element whose cluster exists. The error is the
// target's problem.
func (t *template) target(e element, vars *templateVars) (Target, error) {
	about := "target " + e.key
	out := Target{
		Key:            e.key,
		Cluster:        e.cluster,
		Values:         cloneOrNil(e.values),
		Namespace:      t.namespace,
		DeletionPolicy: t.deletionPolicy,
	}
	name, err := t.name.evalString(vars, about)
	if err != nil {
		return Target{}, err
	}
	out.Name = DeploymentName(name)
	if errs := validation.IsDNS1123Subdomain(out.Name); len(errs) > 0 {
		return Target{}, t.name.errorf(about, "gives %q, not a valid name: %s", out.Name, strings.Join(errs, "; "))
	}
	if t.namespaceExpr != nil {
		if out.Namespace, err = t.namespaceExpr.evalString(vars, about); err != nil {
			return Target{}, err
		}
		if errs := validation.IsDNS1123Label(out.Namespace); out.Namespace != "" && len(errs) > 0 {
			return Target{}, t.namespaceExpr.errorf(about, "gives %q, not a valid namespace: %s", out.Namespace, strings.Join(errs, "; "))
		}
	}
	if out.Labels, err = evalKeyed(t.labels, vars, about, validation.IsValidLabelValue); err != nil {
		return Target{}, err
	}
	if out.Annotations, err = evalKeyed(t.annotations, vars, about, nil); err != nil {
		return Target{}, err
	}
	if out.DependsOn, err = t.dependencies(out.Name, vars, about); err != nil {
		return Target{}, err
	}
	if err := t.variant(&out, vars, about); err != nil {
		return Target{}, err
	}
	return out, nil
}

// dependencies evaluates template.dependsOn for the target whose deployment is self: names in
// the template's order, each once.
func (t *template) dependencies(self string, vars *templateVars, about string) ([]string, error) {
	var out []string
	for _, e := range t.dependsOn {
		name, err := e.evalString(vars, about)
		if err != nil {
			return nil, err
		}
		switch errs := validation.IsDNS1123Subdomain(name); {
		case len(errs) > 0:
			return nil, e.errorf(about, "gives %q, not a valid deployment name: %s", name, strings.Join(errs, "; "))
		case name == self:
			return nil, e.errorf(about, "gives %q, the deployment itself: name a deployment of another set on the cluster", name)
		case !slices.Contains(out, name):
			out = append(out, name)
		}
	}
	return out, nil
}

func evalKeyed(exprs []keyedExpr, vars *templateVars, about string, valid func(string) []string) (map[string]string, error) {
	if len(exprs) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(exprs))
	for _, ke := range exprs {
		v, err := ke.expr.evalString(vars, about)
		if err != nil {
			return nil, err
		}
		if valid != nil {
			if errs := valid(v); len(errs) > 0 {
				return nil, ke.expr.errorf(about, "gives %q, not a valid label value: %s", v, strings.Join(errs, "; "))
			}
		}
		out[ke.key] = v
	}
	return out, nil
}

// dropDuplicateNames removes the targets whose name another target has too, and returns a
// problem for each: deploying either would silently replace the other.
func dropDuplicateNames(targets []Target) ([]Target, []Problem) {
	count := make(map[string]int, len(targets))
	for _, t := range targets {
		count[t.Name]++
	}
	if len(count) == len(targets) {
		return targets, nil
	}
	clashing := map[string][]string{} // name → keys, sorted for messages that do not depend on input order
	for _, t := range targets {
		if count[t.Name] > 1 {
			clashing[t.Name] = append(clashing[t.Name], t.Key)
		}
	}
	for _, keys := range clashing {
		slices.Sort(keys)
	}
	var problems []Problem
	out := make([]Target, 0, len(count))
	for _, t := range targets {
		keys, ok := clashing[t.Name]
		if !ok {
			out = append(out, t)
			continue
		}
		problems = append(problems, Problem{Target: t.Key, Message: fmt.Sprintf(
			"deployment name %q is also generated for %s: make template.nameExpr unique per target (include target.name or values)",
			t.Name, others(keys, t.Key))})
	}
	return out, problems
}

// others lists the sorted keys other than self, at most three of them, so that a set whose
// 10,000 targets all get the same name still has short messages.
func others(keys []string, self string) string {
	const shown = 3
	rest := make([]string, 0, shown)
	for _, k := range keys {
		if k != self && len(rest) < shown {
			rest = append(rest, k)
		}
	}
	list := strings.Join(rest, ", ")
	if more := len(keys) - 1 - len(rest); more > 0 {
		return fmt.Sprintf("targets %s and %d more", list, more)
	}
	if len(rest) == 1 {
		return "target " + list
	}
	return "targets " + list
}

func cloneOrNil(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}
