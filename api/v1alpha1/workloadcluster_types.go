package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SyncEngine is the GitOps agent running in a workload cluster.
// +kubebuilder:validation:Enum=ConfigSync;ArgoCD;Flux
type SyncEngine string

// Sync engines.
const (
	EngineConfigSync SyncEngine = "ConfigSync"
	EngineArgoCD     SyncEngine = "ArgoCD"
	EngineFlux       SyncEngine = "Flux"
)

// Approval says whether deployed-packages changes publish at once or wait for approval.
// +kubebuilder:validation:Enum=Automatic;Manual
type Approval string

// Approval modes.
const (
	ApprovalAutomatic Approval = "Automatic"
	ApprovalManual    Approval = "Manual"
)

// WorkloadClusterSpec says where a cluster's deployed-packages lives and how the cluster syncs it.
// +kubebuilder:validation:XValidation:rule="!has(self.sync) || !has(self.sync.deletion) || self.sync.deletion != 'EmptyFirst' || has(self.kubeConfigSecretRef)",message="spec.sync.deletion EmptyFirst needs spec.kubeConfigSecretRef: flotilla reads from the workload cluster when its agent has pruned a package, and only then removes the sync object"
type WorkloadClusterSpec struct {
	// Repository is the cluster's deployment repository: it holds deployed-packages (and variants).
	Repository LocalObjectReference `json:"repository"`

	// Sync says which GitOps engine the cluster runs and how it reads git.
	// +kubebuilder:default={}
	// +optional
	Sync ClusterSync `json:"sync,omitempty"`

	// Approval: Automatic publishes every deployed-packages change at once; Manual pushes it to
	// proposed/<package>/vN and waits for the annotation flotilla.dev/approve=<commit>, naming
	// status.proposal.commit (flotilla approve CLUSTER writes it).
	// +kubebuilder:default=Automatic
	// +optional
	Approval Approval `json:"approval,omitempty"`

	// Context holds facts about the cluster (env, region, ...), input to specialization.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	Context map[string]string `json:"context,omitempty"`

	// KubeConfigSecretRef names a Secret key holding a kubeconfig for the cluster, which lets
	// flotilla apply the root sync object and read sync health.
	// +optional
	KubeConfigSecretRef *SecretKeyReference `json:"kubeConfigSecretRef,omitempty"`

	// FactsConfigMap is the ConfigMap in the workload cluster whose data are the site's own facts
	// (status.facts.site), read with kubeConfigSecretRef. Default kube-system/flotilla-facts.
	// +optional
	FactsConfigMap *NamespacedName `json:"factsConfigMap,omitempty"`

	// Suspend stops flotilla from publishing for this cluster; nothing is removed.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// PinBy is what a sync object names as the revision it syncs.
type PinBy string

// What sync objects pin.
const (
	PinByTag    PinBy = "Tag"
	PinByCommit PinBy = "Commit"
)

// ClusterSync is the cluster's GitOps engine and how it reads git.
type ClusterSync struct {
	// Engine is the GitOps agent in the cluster.
	// +kubebuilder:default=ConfigSync
	// +optional
	Engine SyncEngine `json:"engine,omitempty"`

	// Package is the name of the deployed-packages package (a directory under the repository
	// directory).
	// +kubebuilder:default=deployed-packages
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$')",message="package must be a relative path of letters, digits, '.', '_' and '-' segments separated by '/' (no leading '/')"
	// +kubebuilder:validation:XValidation:rule="!self.matches('(^|/)\\\\.\\\\.?(/|$)')",message="package must not contain '.' or '..' segments"
	// +optional
	Package string `json:"package,omitempty"`

	// PinBy is what each generated sync object names as its revision: Tag (the package
	// revision's tag, pkg/vN) or Commit (the commit that tag named when flotilla pinned it, so
	// the agent never follows a tag moved later). With Commit the tag stays visible in the
	// flotilla.dev/pinned-tag annotation.
	// +kubebuilder:validation:Enum=Tag;Commit
	// +kubebuilder:default=Tag
	// +optional
	PinBy PinBy `json:"pinBy,omitempty"`

	// Deletion is how undeploying a package (deletionPolicy Delete) removes its workload:
	// Propagation removes the sync object at once and relies on the agent propagating the
	// deletion; EmptyFirst, for agents that do not (Config Sync before 1.16, a root object that does
	// not prune), first points the sync object at an empty package (flotilla-empty/v1 in the
	// cluster's repository), waits until the agent reports it synced with nothing left applied,
	// and only then removes it. EmptyFirst needs kubeConfigSecretRef to watch the prune.
	// +kubebuilder:validation:Enum=Propagation;EmptyFirst
	// +kubebuilder:default=Propagation
	// +optional
	Deletion DeletionMode `json:"deletion,omitempty"`

	// DrainTimeout is how long an EmptyFirst undeploy waits for the agent to prune before the
	// deployment reports DrainTimedOut (Stalled). It keeps waiting after that: removing the sync
	// object early would leave the workload running with nothing managing it.
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="spec.sync.drainTimeout must be a positive duration such as 10m"
	// +kubebuilder:default="10m"
	// +optional
	DrainTimeout *metav1.Duration `json:"drainTimeout,omitempty"`

	// Git is how the cluster's agent authenticates to git (Config Sync's auth).
	// +optional
	Git ClusterGitAuth `json:"git,omitempty"`

	// OCI is how the cluster's agent authenticates to OCI registries, for packages from
	// Repositories with spec.oci.
	// +optional
	OCI ClusterOCIAuth `json:"oci,omitempty"`

	// ArgoCD settings, for engine ArgoCD.
	// +optional
	ArgoCD *ArgoCDSync `json:"argoCD,omitempty"`

	// Flux settings, for engine Flux.
	// +optional
	Flux *FluxSync `json:"flux,omitempty"`
}

// DeletionMode is how undeploying a package removes its workload from the cluster.
type DeletionMode string

// Deletion modes.
const (
	// DeletionPropagation removes the sync object and relies on the agent to delete what it
	// applied (Config Sync's deletion-propagation annotation, Flux's prune, Argo CD's finalizer).
	DeletionPropagation DeletionMode = "Propagation"
	// DeletionEmptyFirst first points the sync object at an empty package, waits until the agent
	// reports it pruned everything, and only then removes the sync object.
	DeletionEmptyFirst DeletionMode = "EmptyFirst"
)

// ClusterGitAuth is the git authentication the cluster's agent uses.
// +kubebuilder:validation:XValidation:rule="!has(self.auth) || !(self.auth in ['ssh', 'cookiefile', 'token', 'githubapp']) || has(self.secretRef)",message="auth ssh, cookiefile, token and githubapp need secretRef naming the Secret with the credentials"
type ClusterGitAuth struct {
	// Auth is the Config Sync git auth type.
	// +kubebuilder:validation:Enum=none;ssh;cookiefile;gcenode;token;gcpserviceaccount;k8sserviceaccount;githubapp
	// +kubebuilder:default=none
	// +optional
	Auth string `json:"auth,omitempty"`
	// SecretRef names the Secret, in the sync object's namespace of the workload cluster, with
	// the agent's git credentials.
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
	// GCPServiceAccountEmail is used with auth gcpserviceaccount.
	// +kubebuilder:validation:MaxLength=254
	// +kubebuilder:validation:XValidation:rule="self.matches('^[^@ ]+@[^@ ]+$')",message="gcpServiceAccountEmail must be an email address such as sync@project.iam.gserviceaccount.com"
	// +optional
	GCPServiceAccountEmail string `json:"gcpServiceAccountEmail,omitempty"`
}

// ClusterOCIAuth is the OCI registry authentication the cluster's agent uses.
type ClusterOCIAuth struct {
	// Auth is Config Sync's oci.auth.
	// +kubebuilder:validation:Enum=none;gcenode;gcpserviceaccount;k8sserviceaccount
	// +kubebuilder:default=none
	// +optional
	Auth string `json:"auth,omitempty"`
	// GCPServiceAccountEmail is Config Sync's oci.gcpServiceAccountEmail, for auth gcpserviceaccount.
	// +kubebuilder:validation:MaxLength=254
	// +kubebuilder:validation:XValidation:rule="self.matches('^[^@ ]+@[^@ ]+$')",message="gcpServiceAccountEmail must be an email address such as sync@project.iam.gserviceaccount.com"
	// +optional
	GCPServiceAccountEmail string `json:"gcpServiceAccountEmail,omitempty"`
	// SecretRef names the Secret (in the sync objects' namespace of the workload cluster) with the
	// registry credentials of Flux's OCIRepository (a kubernetes.io/dockerconfigjson Secret).
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
}

// ArgoCDSync configures Applications for engine ArgoCD.
type ArgoCDSync struct {
	// Namespace of the Argo CD installation.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Label().validate(self).hasValue()",message="argoCD.namespace must be a namespace name (a DNS label)"
	// +kubebuilder:default=argocd
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Project of the generated Applications.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Subdomain().validate(self).hasValue()",message="argoCD.project must be an AppProject name"
	// +kubebuilder:default=default
	// +optional
	Project string `json:"project,omitempty"`
	// Destination of the generated child Applications (the root Application always deploys to
	// Argo CD's own cluster). Another cluster than Argo CD's own means one central Argo CD: the
	// root is then named per cluster, and kubeConfigSecretRef names the Argo CD cluster.
	// +optional
	Destination ArgoCDDestination `json:"destination,omitempty"`
}

// ArgoCDDestination is where Argo CD applies.
type ArgoCDDestination struct {
	// Server is the API server URL.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['https', 'http'] && url(self).getHostname() != ''",message="argoCD.destination.server must be an API server URL such as https://kubernetes.default.svc"
	// +optional
	Server string `json:"server,omitempty"`
	// Name is the Argo CD cluster name (instead of server).
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[^ ]+$')",message="argoCD.destination.name must be an Argo CD cluster name, without spaces"
	// +optional
	Name string `json:"name,omitempty"`
}

// FluxSync configures GitRepositories and Kustomizations for engine Flux.
type FluxSync struct {
	// Namespace of the Flux objects.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Label().validate(self).hasValue()",message="flux.namespace must be a namespace name (a DNS label)"
	// +kubebuilder:default=flux-system
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Interval of the generated Flux objects.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s')",message="flux.interval must be a duration of at least 1s, such as 1m"
	// +kubebuilder:default="1m"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`
}

// WorkloadClusterStatus is what flotilla last published for the cluster.
type WorkloadClusterStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready, Reconciling, Stalled.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// DeployedPackages is the latest published deployed-packages revision.
	// +optional
	DeployedPackages *DeployedPackagesStatus `json:"deployedPackages,omitempty"`
	// Proposal is the deployed-packages change waiting for approval (Manual only).
	// +optional
	Proposal *ProposalStatus `json:"proposal,omitempty"`
	// Facts are what flotilla last read from the workload cluster (kubeConfigSecretRef):
	// `target.facts` in a PackageSet's CEL, and a values layer (facts: true).
	// +optional
	Facts *ClusterFacts `json:"facts,omitempty"`
}

// NamespacedName names an object in another cluster.
type NamespacedName struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// ClusterFacts are facts about a workload cluster, read from it.
type ClusterFacts struct {
	// KubernetesVersion is the API server's version, e.g. v1.33.1.
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// Nodes is the number of nodes.
	Nodes int32 `json:"nodes"`
	// CPU and Memory are the nodes' allocatable totals.
	// +optional
	CPU resource.Quantity `json:"cpu,omitempty"`
	// +optional
	Memory resource.Quantity `json:"memory,omitempty"`
	// Regions, Zones and InstanceTypes are the distinct values of the nodes' well-known labels
	// topology.kubernetes.io/region, topology.kubernetes.io/zone and
	// node.kubernetes.io/instance-type, sorted.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Regions []string `json:"regions,omitempty"`
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Zones []string `json:"zones,omitempty"`
	// +kubebuilder:validation:MaxItems=64
	// +optional
	InstanceTypes []string `json:"instanceTypes,omitempty"`
	// Site is the data of the facts ConfigMap (spec.factsConfigMap), where sites publish their own
	// facts.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	Site map[string]string `json:"site,omitempty"`
}

// DeployedPackagesStatus is one published deployed-packages revision.
type DeployedPackagesStatus struct {
	// Revision is N of the tag <package>/vN.
	Revision int `json:"revision"`
	// Tag is the git tag of the revision.
	Tag string `json:"tag"`
	// Commit is the tagged commit.
	Commit string `json:"commit"`
	// Location is where the revision is: the cluster repository's normalized URL, branch and
	// package directory. Of the clusters that share one location, the one published there keeps
	// writing (see RepositoryInUse).
	// +optional
	Location string `json:"location,omitempty"`
	// ApprovedCommit is the proposal commit whose approval published this revision (Manual): an
	// approval annotation still naming it approves nothing more and is not reported as outdated.
	// +optional
	ApprovedCommit string `json:"approvedCommit,omitempty"`
	// Packages lists the pins this revision carries, one per PackageDeployment.
	// +listType=map
	// +listMapKey=deployment
	// +optional
	Packages []PublishedPin `json:"packages,omitempty"`
}

// PublishedPin is one PackageDeployment's pin inside a deployed-packages revision.
type PublishedPin struct {
	// Deployment is the PackageDeployment's name.
	Deployment string `json:"deployment"`
	// Tag is the package revision it pins.
	Tag string `json:"tag"`
}

// ProposalStatus is a deployed-packages change waiting for approval.
type ProposalStatus struct {
	// Revision is the N the proposal will be published as.
	Revision int `json:"revision"`
	// Branch holds the proposed commit.
	Branch string `json:"branch"`
	// Commit is the proposed commit; approve it with flotilla.dev/approve=<commit>. Any change to
	// the proposal's content makes a new commit.
	Commit string `json:"commit"`
	// Summary says what changes, e.g. "+upf free5gc-upf/v6, -smf".
	// +optional
	Summary string `json:"summary,omitempty"`
	// Packages lists the pins the proposal carries.
	// +listType=map
	// +listMapKey=deployment
	// +optional
	Packages []PublishedPin `json:"packages,omitempty"`
}

// WorkloadCluster is a cluster that consumes packages through one deployed-packages package.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=wc,categories=flotilla
// +kubebuilder:printcolumn:name="Engine",type=string,JSONPath=`.spec.sync.engine`
// +kubebuilder:printcolumn:name="Approval",type=string,JSONPath=`.spec.approval`
// +kubebuilder:printcolumn:name="Deployed",type=string,JSONPath=`.status.deployedPackages.tag`
// +kubebuilder:printcolumn:name="Proposal",type=string,JSONPath=`.status.proposal.branch`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WorkloadCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WorkloadClusterSpec   `json:"spec"`
	Status WorkloadClusterStatus `json:"status,omitempty"`
}

// WorkloadClusterList is a list of WorkloadClusters.
// +kubebuilder:object:root=true
type WorkloadClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkloadCluster `json:"items"`
}
