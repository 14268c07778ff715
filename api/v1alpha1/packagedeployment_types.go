package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PackageDeploymentSpec deploys one package revision to one cluster.
// +kubebuilder:validation:XValidation:rule="self.cluster == oldSelf.cluster",message="cluster is immutable: delete this PackageDeployment and create one for the other cluster"
// +kubebuilder:validation:XValidation:rule="!has(self.package.revisionFrom)",message="spec.package.revisionFrom is for PackageSets: a PackageDeployment names its revision"
type PackageDeploymentSpec struct {
	// Cluster is the WorkloadCluster, in the same namespace, that runs the package.
	Cluster LocalObjectReference `json:"cluster"`

	// Package is the package revision to deploy.
	Package PackageReference `json:"package"`

	// Namespace deploys the package namespace-scoped (a RepoSync in that namespace for Config
	// Sync). Empty: cluster-scoped (RootSync).
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="namespace must be a DNS label: lower-case letters, digits and '-'"
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// DeletionPolicy: Delete (default) prunes the workload when undeployed; Orphan leaves it
	// running.
	// +kubebuilder:default=Delete
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// DependsOn names PackageDeployments on the same cluster that must be synced first. One that
	// does not exist or is on another cluster is an error (Stalled); the deployment is not
	// published before every one it names is.
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=name
	// +optional
	DependsOn []LocalObjectReference `json:"dependsOn,omitempty"`

	// Suspend keeps the current pin: flotilla neither re-resolves nor changes it.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// PackageReference names a package revision in a repository.
type PackageReference struct {
	// Repository holding the package; default: the cluster's repository.
	// +optional
	Repository *LocalObjectReference `json:"repository,omitempty"`

	// Name is the package path under the repository directory, e.g. free5gc-upf or
	// network/free5gc-upf.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$')",message="name must be a relative package path of letters, digits, '.', '_' and '-' segments separated by '/' (no leading '/', no empty segments)"
	// +kubebuilder:validation:XValidation:rule="!self.matches('(^|/)\\\\.\\\\.?(/|$)')",message="name must not contain '.' or '..' segments: a package path cannot leave the repository directory"
	Name string `json:"name"`

	// Revision is a published revision: vN, or latest (the highest published; follows new tags).
	// With revisionFrom it is the revision deployed until the first promotion.
	// +kubebuilder:validation:XValidation:rule="self == 'latest' || self.matches('^v[1-9][0-9]{0,8}$')",message="revision must be vN (v1, v2, ...) or latest"
	Revision string `json:"revision"`

	// RevisionFrom (PackageSets only) promotes from another set: the set moves to the revision
	// the named PackageSet deploys once that set is Ready at it and has stayed Ready for
	// healthyFor. The annotation flotilla.dev/promotion: hold keeps the current revision, force
	// promotes without waiting healthyFor.
	// +optional
	RevisionFrom *RevisionFrom `json:"revisionFrom,omitempty"`
}

// RevisionFrom is where a PackageSet takes its revision from.
type RevisionFrom struct {
	// PackageSet names the set of the namespace to promote from; it must deploy the same package.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	PackageSet string `json:"packageSet"`
	// HealthyFor is how long that set must have been Ready at a revision before it is promoted.
	// Default 0: as soon as it is Ready.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="revisionFrom.healthyFor must be a duration such as 30m"
	// +optional
	HealthyFor *metav1.Duration `json:"healthyFor,omitempty"`
}

// PackageDeploymentStatus is the pin flotilla resolved and where it is published.
type PackageDeploymentStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready, Reconciling, Stalled, Published.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Resolved is the exact package revision the deployment pins.
	// +optional
	Resolved *ResolvedRevision `json:"resolved,omitempty"`
	// SyncObject is the sync object in deployed-packages that deploys the package.
	// +optional
	SyncObject *SyncObjectReference `json:"syncObject,omitempty"`
	// DeployedPackagesRevision is the first deployed-packages revision that carries this pin (later
	// revisions that change other deployments keep carrying it).
	// +optional
	DeployedPackagesRevision int `json:"deployedPackagesRevision,omitempty"`
	// Drain is the progress of an EmptyFirst undeploy (spec.sync.deletion of the cluster).
	// +optional
	Drain *DrainStatus `json:"drain,omitempty"`
}

// DrainStatus is the progress of an EmptyFirst undeploy: the sync object points at the empty
// package until its agent reports that nothing it applied is left.
type DrainStatus struct {
	// StartedAt is when flotilla first saw the deployment deleted and began draining it.
	StartedAt metav1.Time `json:"startedAt"`
	// Tag is the empty package revision the sync object points at while it drains.
	// +optional
	Tag string `json:"tag,omitempty"`
	// Commit is the commit of Tag, the commit the agent must report synced.
	// +optional
	Commit string `json:"commit,omitempty"`
	// Drained is true once the agent reported the empty revision synced with nothing left applied:
	// the sync object is then removed from deployed-packages.
	// +optional
	Drained bool `json:"drained,omitempty"`
}

// ResolvedRevision is one published package revision.
type ResolvedRevision struct {
	// Repository is the Repository object the package comes from.
	Repository string `json:"repository"`
	// Revision is N of vN.
	Revision int `json:"revision"`
	// Tag is the git tag, <package path>/vN.
	Tag string `json:"tag"`
	// Commit is the tagged commit.
	Commit string `json:"commit"`
	// Directory is the package directory in the repository, with a leading '/' ("/", the
	// artifact's root, for an OCI package).
	Directory string `json:"directory"`
	// Image is the OCI artifact of an OCI package (a Repository with spec.oci), REGISTRY/REPO/PKG:
	// Tag is then PKG:vN and Commit the artifact's manifest digest (sha256:...), which every sync
	// object pins.
	// +optional
	Image string `json:"image,omitempty"`
}

// SyncObjectReference names the sync object in the workload cluster.
type SyncObjectReference struct {
	// APIVersion of the sync object.
	APIVersion string `json:"apiVersion"`
	// Kind of the sync object: RootSync, RepoSync, Application, Kustomization.
	Kind string `json:"kind"`
	// Namespace of the sync object.
	Namespace string `json:"namespace"`
	// Name of the sync object.
	Name string `json:"name"`
}

// PackageDeployment deploys one package revision to one cluster.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pd,categories=flotilla
// +kubebuilder:validation:XValidation:rule="!has(self.spec.dependsOn) || !self.spec.dependsOn.exists(d, d.name == self.metadata.name)",message="a PackageDeployment cannot depend on itself"
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.cluster.name`
// +kubebuilder:printcolumn:name="Package",type=string,JSONPath=`.spec.package.name`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.spec.package.revision`
// +kubebuilder:printcolumn:name="Resolved",type=string,JSONPath=`.status.resolved.tag`
// +kubebuilder:printcolumn:name="Deployed",type=integer,JSONPath=`.status.deployedPackagesRevision`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PackageDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PackageDeploymentSpec   `json:"spec"`
	Status PackageDeploymentStatus `json:"status,omitempty"`
}

// PackageDeploymentList is a list of PackageDeployments.
// +kubebuilder:object:root=true
type PackageDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PackageDeployment `json:"items"`
}
