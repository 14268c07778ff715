// Package v1alpha1 holds the flotilla.dev/v1alpha1 API: Repository, WorkloadCluster and
// PackageDeployment.
// +kubebuilder:object:generate=true
// +groupName=flotilla.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every flotilla kind.
	GroupVersion = schema.GroupVersion{Group: "flotilla.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the flotilla kinds with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the flotilla kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
