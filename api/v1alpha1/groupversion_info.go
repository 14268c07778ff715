// Package v1alpha1 holds the flotilla.dev/v1alpha1 API: Repository, WorkloadCluster and
// PackageDeployment. It depends only on k8s.io/apimachinery, so it is cheap to import.
// +kubebuilder:object:generate=true
// +groupName=flotilla.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every flotilla kind.
	GroupVersion = schema.GroupVersion{Group: "flotilla.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the flotilla kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the flotilla kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&Repository{}, &RepositoryList{},
		&WorkloadCluster{}, &WorkloadClusterList{},
		&PackageDeployment{}, &PackageDeploymentList{},
		&PackageSet{}, &PackageSetList{},
		&PackageVariant{}, &PackageVariantList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
