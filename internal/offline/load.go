// Package offline runs flotilla's logic without a Kubernetes API server: it reads Repository,
// WorkloadCluster, PackageDeployment and Secret objects from YAML files and publishes every
// cluster's deployed-packages into the repositories they name.
package offline

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/crdvalidate"
)

// Fleet is the set of objects read from files, keyed by namespace/name.
type Fleet struct {
	Repositories map[string]*v1alpha1.Repository
	Clusters     map[string]*v1alpha1.WorkloadCluster
	Deployments  map[string]*v1alpha1.PackageDeployment
	Sets         map[string]*v1alpha1.PackageSet
	Variants     map[string]*v1alpha1.PackageVariant
	Secrets      map[string]*corev1.Secret
	// Objects holds every other object, for objects generators.
	Objects []*unstructured.Unstructured
	// Only, when set, limits a run to these clusters (namespace/name): the others publish
	// nothing, and no variant is written for them.
	Only map[string]bool
	// Progress, when set, is told after each cluster how many of how many are done.
	Progress func(done, total int)
	// Approvals approve the pending proposal of Manual clusters (namespace/name → the commit
	// reviewed), as the flotilla.dev/approve annotation does.
	Approvals map[string]string

	validator *crdvalidate.Validator
	seen      map[string]string // group kind namespace/name → where it was read
	// served holds each flotilla object as the API server would serve it (validated, defaulted,
	// not round-tripped through the Go types, which add empty objects): what injection reads.
	served map[string]*unstructured.Unstructured
}

// Load reads every .yaml/.yml/.json file under dir (recursively). Objects of flotilla's kinds are
// defaulted and validated as the API server would (crdvalidate: schema, enums, patterns, CEL rules
// and their messages); a kind or version of flotilla.dev that does not exist, an unknown field or
// two objects of one kind, namespace and name are errors naming the file and document. Objects of
// other kinds are kept for objects generators; an object without a namespace goes to "default".
func Load(dir string) (*Fleet, error) {
	f, err := LoadChanges(dir)
	if err != nil {
		return nil, err
	}
	return f, f.validate()
}

// LoadChanges reads the files as Load does, but leaves references to objects that are not in them
// unchecked: they are changes to lay over a live fleet (see Over, which checks the result).
func LoadChanges(dir string) (*Fleet, error) {
	validator, err := crdvalidate.New()
	if err != nil {
		return nil, fmt.Errorf("flotilla's CRDs: %w", err)
	}
	f := newFleet()
	f.validator, f.seen = validator, map[string]string{}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
		default:
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := f.add(path, b); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

func newFleet() *Fleet {
	return &Fleet{
		Repositories: map[string]*v1alpha1.Repository{},
		Clusters:     map[string]*v1alpha1.WorkloadCluster{},
		Deployments:  map[string]*v1alpha1.PackageDeployment{},
		Sets:         map[string]*v1alpha1.PackageSet{},
		Variants:     map[string]*v1alpha1.PackageVariant{},
		Secrets:      map[string]*corev1.Secret{},
	}
}

func (f *Fleet) add(path string, b []byte) error {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := f.addDoc(fmt.Sprintf("%s document %d", path, i), doc); err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
	}
}

func (f *Fleet) addDoc(where string, doc []byte) error {
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(doc, &u.Object); err != nil {
		return err
	}
	if len(u.Object) == 0 || u.GetAPIVersion() == "" || u.GetKind() == "" {
		return nil
	}
	if u.GetNamespace() == "" {
		u.SetNamespace("default")
	}
	gvk := u.GroupVersionKind()
	id := gvk.Kind + " " + u.GetNamespace() + "/" + u.GetName()
	if first, ok := f.seen[gvk.GroupKind().String()+" "+u.GetNamespace()+"/"+u.GetName()]; ok {
		return fmt.Errorf("%s is defined twice: first in %s", id, first)
	}
	f.seen[gvk.GroupKind().String()+" "+u.GetNamespace()+"/"+u.GetName()] = where
	var obj interface {
		GetNamespace() string
		GetName() string
	}
	switch {
	case f.validator.Knows(gvk):
		// As the API server: defaults and validation first, then the object as the controller
		// reads it.
		if errs := f.validator.Validate(context.Background(), u); len(errs) > 0 {
			return fmt.Errorf("%s is invalid: %w", id, errs.ToAggregate())
		}
		switch gvk.Kind {
		case "Repository":
			obj = &v1alpha1.Repository{}
		case "WorkloadCluster":
			obj = &v1alpha1.WorkloadCluster{}
		case "PackageDeployment":
			obj = &v1alpha1.PackageDeployment{}
		case "PackageSet":
			obj = &v1alpha1.PackageSet{}
		case "PackageVariant":
			obj = &v1alpha1.PackageVariant{}
		default:
			return fmt.Errorf("%s: flotilla render does not read kind %s", id, gvk.Kind)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
		if f.served == nil {
			f.served = map[string]*unstructured.Unstructured{}
		}
		f.served[servedKey(gvk.Kind, u.GetNamespace(), u.GetName())] = u
	case gvk.Group == "" && gvk.Version == "v1" && gvk.Kind == "Secret":
		obj = &corev1.Secret{}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
		obj.(*corev1.Secret).SetNamespace(u.GetNamespace())
	default:
		f.Objects = append(f.Objects, u)
		return nil
	}
	key := obj.GetNamespace() + "/" + obj.GetName()
	switch o := obj.(type) {
	case *v1alpha1.Repository:
		f.Repositories[key] = o
	case *v1alpha1.WorkloadCluster:
		f.Clusters[key] = o
	case *v1alpha1.PackageDeployment:
		f.Deployments[key] = o
	case *v1alpha1.PackageSet:
		f.Sets[key] = o
	case *v1alpha1.PackageVariant:
		f.Variants[key] = o
	case *corev1.Secret:
		f.Secrets[key] = o
	}
	return nil
}

// validate checks the references the API server's schema cannot: every cluster's repository
// exists, every deployment's cluster and repository exist.
func (f *Fleet) validate() error {
	var errs field.ErrorList
	for _, key := range slices.Sorted(maps.Keys(f.Clusters)) {
		c := f.Clusters[key]
		if f.Repositories[c.Namespace+"/"+c.Spec.Repository.Name] == nil {
			errs = append(errs, field.NotFound(field.NewPath("WorkloadCluster", key, "spec", "repository", "name"), c.Spec.Repository.Name))
		}
	}
	for _, key := range slices.Sorted(maps.Keys(f.Deployments)) {
		pd := f.Deployments[key]
		if f.Clusters[pd.Namespace+"/"+pd.Spec.Cluster.Name] == nil {
			errs = append(errs, field.NotFound(field.NewPath("PackageDeployment", key, "spec", "cluster", "name"), pd.Spec.Cluster.Name))
		}
		if r := pd.Spec.Package.Repository; r != nil && f.Repositories[pd.Namespace+"/"+r.Name] == nil {
			errs = append(errs, field.NotFound(field.NewPath("PackageDeployment", key, "spec", "package", "repository", "name"), r.Name))
		}
	}
	return errs.ToAggregate()
}

func servedKey(kind, namespace, name string) string { return kind + " " + namespace + "/" + name }
