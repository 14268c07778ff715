package generate

import (
	"fmt"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"
	"k8s.io/apiserver/pkg/cel/library"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// costLimit bounds one evaluation of one expression. It is Kubernetes' per-call limit
// (k8s.io/apiserver/pkg/apis/cel.PerCallLimit, roughly 0.1s), so an expression that is fine in a
// CRD validation rule is fine here, and a hostile one fails instead of hanging the controller.
const costLimit = 1_000_000

var (
	mapOfDyn    = cel.MapType(cel.StringType, cel.DynType)
	mapOfString = cel.MapType(cel.StringType, cel.StringType)
)

// templateEnv declares the variables of template expressions; objectEnv those of an objects
// generator's expressions. Building an environment is expensive, so each is built once.
var (
	templateEnv = sync.OnceValues(func() (*cel.Env, error) {
		return newEnv(
			cel.Variable("target", mapOfDyn),
			cel.Variable("values", mapOfString),
			cel.Variable("upstream", mapOfDyn),
			cel.Variable("set", mapOfDyn),
		)
	})
	objectEnv = sync.OnceValues(func() (*cel.Env, error) {
		return newEnv(cel.Variable("object", mapOfDyn))
	})
)

// newEnv is the Kubernetes CEL environment (k8s.io/apiserver/pkg/cel/environment, current
// version) without what is not pure or does not fit here: the authorizer libraries need a
// request, and homogeneous literals would reject {'a': 'x', 'b': object.spec.b} (string and dyn).
func newEnv(vars ...cel.EnvOption) (*cel.Env, error) {
	opts := []cel.EnvOption{
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		cel.ASTValidators(
			cel.ValidateDurationLiterals(),
			cel.ValidateTimestampLiterals(),
			cel.ValidateRegexLiterals(),
		),
		ext.Strings(ext.StringsVersion(2)),
		ext.Sets(),
		ext.TwoVarComprehensions(),
		ext.Lists(ext.ListsVersion(3)),
		library.URLs(),
		library.Regex(),
		library.Lists(library.ListsVersion(1)),
		library.Quantity(),
		library.IP(),
		library.CIDR(),
		library.Format(),
		library.SemverLib(library.SemverVersion(1)),
	}
	env, err := cel.NewEnv(append(opts, vars...)...)
	if err != nil {
		return nil, fmt.Errorf("CEL environment: %w", err)
	}
	return env, nil
}

// expr is a compiled expression with what it takes to explain its failures to users.
type expr struct {
	field string // where it is in the spec, e.g. template.nameExpr
	text  string
	prg   cel.Program
}

// compile compiles text for field. The error names the field, quotes the expression and says
// what is wrong in one line (it ends up in a status condition).
func compile(env *cel.Env, field, text string, want *cel.Type) (*expr, error) {
	ast, iss := env.Compile(text)
	if iss.Err() != nil {
		// The first error is the one to fix: the parser's next ones often follow from it.
		e := iss.Errors()[0]
		return nil, fmt.Errorf("%s %q: %s (at %d:%d)", field, text, e.Message, e.Location.Line(), e.Location.Column()+1)
	}
	// Accept what may be the wanted type at run time: dyn, or a map(string, dyn) for a map of
	// strings. Values are checked when evaluated.
	if got := ast.OutputType(); !want.IsAssignableType(got) && !got.IsAssignableType(want) {
		return nil, fmt.Errorf("%s %q: gives %s, want %s", field, text, got, want)
	}
	prg, err := env.Program(ast,
		cel.EvalOptions(cel.OptOptimize),
		cel.CostTracking(&library.CostEstimator{}),
		cel.CostLimit(costLimit),
	)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", field, text, err)
	}
	return &expr{field: field, text: text, prg: prg}, nil
}

// eval evaluates e; about names the target or object in the error, e.g. "target edge01".
func (e *expr) eval(vars interpreter.Activation, about string) (ref.Val, error) {
	val, _, err := e.prg.Eval(vars)
	if err != nil {
		return nil, e.errorf(about, "%v", err)
	}
	return val, nil
}

func (e *expr) evalString(vars interpreter.Activation, about string) (string, error) {
	val, err := e.eval(vars, about)
	if err != nil {
		return "", err
	}
	s, ok := val.(types.String)
	if !ok {
		return "", e.errorf(about, "gives %s, want string", val.Type().TypeName())
	}
	return string(s), nil
}

func (e *expr) evalStringMap(vars interpreter.Activation, about string) (map[string]string, error) {
	val, err := e.eval(vars, about)
	if err != nil {
		return nil, err
	}
	m, ok := val.(traits.Mapper)
	if !ok {
		return nil, e.errorf(about, "gives %s, want map(string, string)", val.Type().TypeName())
	}
	out := make(map[string]string)
	for it := m.Iterator(); it.HasNext() == types.True; {
		k := it.Next()
		ks, ok := k.(types.String)
		if !ok {
			return nil, e.errorf(about, "gives a map with a %s key, want string keys", k.Type().TypeName())
		}
		vs, ok := m.Get(k).(types.String)
		if !ok {
			return nil, e.errorf(about, "gives %s for key %q, want string", m.Get(k).Type().TypeName(), string(ks))
		}
		out[string(ks)] = string(vs)
	}
	return out, nil
}

func (e *expr) errorf(about, format string, args ...any) error {
	return fmt.Errorf("%s %q: %s (%s)", e.field, e.text, fmt.Sprintf(format, args...), about)
}

// templateVars are the variables of template expressions. A struct rather than a
// map[string]any: it is built once per target, tens of thousands of times per Generate.
type templateVars struct {
	target, values, upstream, set ref.Val
}

func (v *templateVars) ResolveName(name string) (any, bool) {
	switch name {
	case "target":
		return v.target, true
	case "values":
		return v.values, true
	case "upstream":
		return v.upstream, true
	case "set":
		return v.set, true
	}
	return nil, false
}

func (v *templateVars) Parent() interpreter.Activation { return nil }

// objectVars are the variables of an objects generator's expressions.
type objectVars struct{ object ref.Val }

func (v *objectVars) ResolveName(name string) (any, bool) {
	if name == "object" {
		return v.object, true
	}
	return nil, false
}

func (v *objectVars) Parent() interpreter.Activation { return nil }

// celMap makes a CEL map of m. Values that are maps of strings are converted here, once,
// rather than on every access.
func celMap(m map[string]any) ref.Val {
	for k, v := range m {
		if s, ok := v.(map[string]string); ok {
			m[k] = stringMap(s)
		}
	}
	return types.NewStringInterfaceMap(types.DefaultTypeAdapter, m)
}

// stringMap makes a CEL map of m; nil is an empty map, so `'k' in target.labels` works.
func stringMap(m map[string]string) ref.Val {
	if len(m) == 0 {
		return emptyStringMap
	}
	return types.NewStringStringMap(types.DefaultTypeAdapter, m)
}

var emptyStringMap = types.NewStringStringMap(types.DefaultTypeAdapter, map[string]string{})

func clusterVal(c *Cluster) ref.Val {
	return celMap(map[string]any{
		"name":        c.Name,
		"namespace":   c.Namespace,
		"labels":      c.Labels,
		"annotations": c.Annotations,
		"context":     c.Context,
		"facts":       factsVal(c.Facts),
	})
}

// factsVal is `target.facts`: strings, the node count as an int, the label values as lists, cpu
// and memory as quantities' strings and site as a map. A cluster whose facts were not read has
// every fact at its zero value (kubernetesVersion == ”), so expressions never fail on a missing
// key.
func factsVal(f *v1alpha1.ClusterFacts) ref.Val {
	if f == nil {
		f = &v1alpha1.ClusterFacts{}
	}
	list := func(s []string) []string {
		if s == nil {
			return []string{}
		}
		return s
	}
	return celMap(map[string]any{
		"kubernetesVersion": f.KubernetesVersion,
		"nodes":             int64(f.Nodes),
		"cpu":               f.CPU.String(),
		"memory":            f.Memory.String(),
		"regions":           list(f.Regions),
		"zones":             list(f.Zones),
		"instanceTypes":     list(f.InstanceTypes),
		"site":              f.Site,
	})
}

func upstreamVal(u Upstream) ref.Val {
	return celMap(map[string]any{
		"repository": u.Repository,
		"name":       u.Name,
		"revision":   u.Revision,
		"tag":        u.Tag,
		"commit":     u.Commit,
		"number":     int64(u.Number),
	})
}
