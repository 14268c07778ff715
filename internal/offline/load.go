// Package offline runs flotilla's logic without a Kubernetes API server: it reads Repository,
// WorkloadCluster, PackageDeployment and Secret objects from YAML files and publishes every
// cluster's deployed-packages into the repositories they name.
package offline

import (
	"bufio"
	"bytes"
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
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// Fleet is the set of objects read from files, keyed by namespace/name.
type Fleet struct {
	Repositories map[string]*v1alpha1.Repository
	Clusters     map[string]*v1alpha1.WorkloadCluster
	Deployments  map[string]*v1alpha1.PackageDeployment
	Sets         map[string]*v1alpha1.PackageSet
	Secrets      map[string]*corev1.Secret
	// Objects holds every other object, for objects generators.
	Objects []*unstructured.Unstructured
}

// Load reads every .yaml/.yml/.json file under dir (recursively). Objects of other kinds are
// ignored; an object without a namespace goes to "default".
func Load(dir string) (*Fleet, error) {
	f := newFleet()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
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
		if err := f.add(b); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return f, f.validate()
}

func newFleet() *Fleet {
	return &Fleet{
		Repositories: map[string]*v1alpha1.Repository{},
		Clusters:     map[string]*v1alpha1.WorkloadCluster{},
		Deployments:  map[string]*v1alpha1.PackageDeployment{},
		Sets:         map[string]*v1alpha1.PackageSet{},
		Secrets:      map[string]*corev1.Secret{},
	}
}

func (f *Fleet) add(b []byte) error {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := f.addDoc(doc); err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
	}
}

func (f *Fleet) addDoc(doc []byte) error {
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return err
	}
	var obj interface {
		GetNamespace() string
		SetNamespace(string)
		GetName() string
	}
	switch {
	case tm.APIVersion == v1alpha1.GroupVersion.String() && tm.Kind == "Repository":
		obj = &v1alpha1.Repository{}
	case tm.APIVersion == v1alpha1.GroupVersion.String() && tm.Kind == "WorkloadCluster":
		obj = &v1alpha1.WorkloadCluster{}
	case tm.APIVersion == v1alpha1.GroupVersion.String() && tm.Kind == "PackageDeployment":
		obj = &v1alpha1.PackageDeployment{}
	case tm.APIVersion == v1alpha1.GroupVersion.String() && tm.Kind == "PackageSet":
		obj = &v1alpha1.PackageSet{}
	case tm.APIVersion == "v1" && tm.Kind == "Secret":
		obj = &corev1.Secret{}
	case tm.APIVersion == "" || tm.Kind == "":
		return nil
	default:
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return err
		}
		if u.GetNamespace() == "" {
			u.SetNamespace("default")
		}
		f.Objects = append(f.Objects, u)
		return nil
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return fmt.Errorf("%s: %w", tm.Kind, err)
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace("default")
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
