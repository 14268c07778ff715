package v1alpha1

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// Name of the object, in the same namespace as the referrer.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	Name string `json:"name"`
}

// SecretKeyReference names one key of a Secret in the same namespace.
type SecretKeyReference struct {
	// Name of the Secret, in the same namespace as the referrer.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Key in the Secret's data.
	// +kubebuilder:default=value
	// +optional
	Key string `json:"key,omitempty"`
}

// Condition types shared by every kind. Ready, Reconciling and Stalled follow kstatus, so
// `kubectl wait --for=condition=Ready` and GitOps dashboards understand them.
const (
	ConditionReady       = "Ready"
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
	// ConditionPublished is True on a PackageDeployment once the deployed-packages revision that
	// carries its pin is published on the cluster repository's branch.
	ConditionPublished = "Published"
	// ConditionBootstrapped is True on a WorkloadCluster with kubeConfigSecretRef once its root
	// sync object is applied in the workload cluster.
	ConditionBootstrapped = "Bootstrapped"
	// ConditionSynced is True on a PackageDeployment once the workload cluster's agent reports
	// the pinned revision applied (health feedback, needs kubeConfigSecretRef).
	ConditionSynced = "Synced"
	// ConditionHealthy is True on a WorkloadCluster whose sync objects all report their pins
	// applied.
	ConditionHealthy = "Healthy"
	// ConditionFactsRead is True on a WorkloadCluster with kubeConfigSecretRef whose facts
	// (status.facts) were read from the cluster.
	ConditionFactsRead = "FactsRead"
)

// Annotations, labels and finalizers.
const (
	// AnnotationApprove on a WorkloadCluster with Manual approval approves the proposal whose
	// full commit id it names (status.proposal.commit): `flotilla approve CLUSTER` writes it. A
	// proposal that changed since has a new commit and is not approved by it; the old form "v4" is
	// refused.
	AnnotationApprove = "flotilla.dev/approve"
	// FinalizerPackageDeployment holds a deleted PackageDeployment until the deployed-packages
	// revision without it is published.
	FinalizerPackageDeployment = "flotilla.dev/undeploy"
	// AnnotationResume on a PackageSet releases a paused rollout when its value changes.
	AnnotationResume = "flotilla.dev/resume"
	// AnnotationUndo on a PackageSet rolls its rollout back by hand when its value changes: every
	// target the rollout moved returns to its last healthy revision, and the rollout halts
	// (flotilla rollout undo SET).
	AnnotationUndo = "flotilla.dev/undo"
	// AnnotationPromotion on a PackageSet with spec.package.revisionFrom: hold keeps its current
	// revision, force promotes without waiting revisionFrom.healthyFor.
	AnnotationPromotion = "flotilla.dev/promotion"
	// LabelPackageSet names, on a generated PackageDeployment, the PackageSet that owns it.
	LabelPackageSet = "flotilla.dev/packageset"
	// FinalizerPackageSet holds a deleted PackageSet until its deletion policy is applied to the
	// deployments it generated.
	FinalizerPackageSet = "flotilla.dev/packageset"
	// ConditionProgressing is True on a PackageSet while its deployments move to what it asks.
	ConditionProgressing = "Progressing"
	// LabelDeployment names, on a sync object, the PackageDeployment it comes from.
	LabelDeployment = "flotilla.dev/deployment"
)

// DeletionPolicy says what undeploying does to the workload.
// +kubebuilder:validation:Enum=Delete;Orphan
type DeletionPolicy string

const (
	// DeletionPolicyDelete prunes what the sync object applied.
	DeletionPolicyDelete DeletionPolicy = "Delete"
	// DeletionPolicyOrphan leaves the workload running.
	DeletionPolicyOrphan DeletionPolicy = "Orphan"
)
