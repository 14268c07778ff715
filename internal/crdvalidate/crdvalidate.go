// Package crdvalidate validates and defaults objects of flotilla's kinds without an API server,
// with the API server's own libraries (k8s.io/apiextensions-apiserver) and the CRDs the
// controller installs: unknown fields, structural schema (types, enums, patterns, formats,
// bounds), list-map keys, defaults and the x-kubernetes-validations CEL rules with their
// messages, in the order the API server applies them on create.
package crdvalidate

import (
	"context"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apivalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/config/crd"
)

// Validator validates objects of the kinds of a set of CRDs.
type Validator struct {
	kinds map[schema.GroupVersionKind]*kind
	// groups are the API groups the CRDs define: a kind or version unknown in one of them is an
	// error, not an object to ignore.
	groups map[string][]string
}

type kind struct {
	namespaced bool
	structural *structuralschema.Structural
	schema     apivalidation.SchemaCreateValidator
	cel        *cel.Validator
}

// New returns a Validator for flotilla's own CRDs.
func New() (*Validator, error) {
	return FromFS(crd.Bases, "bases")
}

// FromFS returns a Validator for the CRDs in the YAML files of dir in fsys.
func FromFS(fsys fs.FS, dir string) (*Validator, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	v := &Validator{kinds: map[schema.GroupVersionKind]*kind{}, groups: map[string][]string{}}
	for _, e := range entries {
		b, err := fs.ReadFile(fsys, dir+"/"+e.Name())
		if err != nil {
			return nil, err
		}
		var in apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(b, &in); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		if err := v.add(&in); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
	}
	return v, nil
}

func (v *Validator) add(in *apiextensionsv1.CustomResourceDefinition) error {
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(in)
	var out apiextensionsinternal.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(in, &out, nil); err != nil {
		return err
	}
	for _, ver := range out.Spec.Versions {
		// The internal form keeps a schema shared by every version at the top.
		validation := out.Spec.Validation
		if ver.Schema != nil {
			validation = ver.Schema
		}
		if !ver.Served || validation == nil || validation.OpenAPIV3Schema == nil {
			continue
		}
		props := validation.OpenAPIV3Schema
		structural, err := structuralschema.NewStructural(props)
		if err != nil {
			return fmt.Errorf("version %s: %w", ver.Name, err)
		}
		sv, _, err := apivalidation.NewSchemaValidator(props)
		if err != nil {
			return fmt.Errorf("version %s: %w", ver.Name, err)
		}
		gvk := schema.GroupVersionKind{Group: out.Spec.Group, Version: ver.Name, Kind: out.Spec.Names.Kind}
		v.kinds[gvk] = &kind{
			namespaced: out.Spec.Scope == apiextensionsinternal.NamespaceScoped,
			structural: structural,
			schema:     sv,
			cel:        cel.NewValidator(structural, true, celconfig.PerCallLimit),
		}
		v.groups[out.Spec.Group] = append(v.groups[out.Spec.Group], out.Spec.Names.Kind+"."+ver.Name)
	}
	return nil
}

// Knows reports whether gvk is in one of the Validator's groups: its objects must be validated
// (an unknown kind or version there is an error Validate reports).
func (v *Validator) Knows(gvk schema.GroupVersionKind) bool {
	_, ok := v.groups[gvk.Group]
	return ok
}

// Validate defaults obj in place and validates it as the API server would on create. An object
// of a kind or version the CRDs do not define, or with fields the schema does not have, is
// refused: the API server would drop such fields, and a misspelled field would silently mean
// something else.
func (v *Validator) Validate(ctx context.Context, obj *unstructured.Unstructured) field.ErrorList {
	gvk := obj.GroupVersionKind()
	k, ok := v.kinds[gvk]
	if !ok {
		known := append([]string(nil), v.groups[gvk.Group]...)
		sort.Strings(known)
		return field.ErrorList{field.NotSupported(field.NewPath("kind"), gvk.Kind+"."+gvk.Version, known)}
	}
	var errs field.ErrorList
	if unknown := pruning.PruneWithOptions(obj.Object, k.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}); len(unknown) > 0 {
		sort.Strings(unknown)
		for _, p := range unknown {
			if strings.HasPrefix(p, "metadata.") || p == "status" || strings.HasPrefix(p, "status.") {
				continue
			}
			errs = append(errs, field.Forbidden(field.NewPath(p), fmt.Sprintf("unknown field %q: %s has no such field (the API server would drop it)", p, gvk.Kind)))
		}
	}
	defaulting.Default(obj.Object, k.structural)
	errs = append(errs, apimachineryvalidation.ValidateObjectMetaAccessor(obj, k.namespaced, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
	errs = append(errs, apivalidation.ValidateCustomResource(nil, obj.Object, k.schema)...)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, k.structural, obj.Object)...)
	if len(errs) == 0 {
		// As the API server: CEL rules run on objects the schema accepts.
		celErrs, _ := k.cel.Validate(ctx, nil, k.structural, obj.Object, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	return errs
}
