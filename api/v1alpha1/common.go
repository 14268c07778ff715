package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

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
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
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

	// AnnotationRefreshRequested on a Repository, set by the webhook receiver to the time a
	// verified push event arrived, makes the controller fetch it at once.
	AnnotationRefreshRequested = "flotilla.dev/refresh-requested-at"
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

// LabelSelector selects objects by their labels, as Kubernetes spells it (matchLabels ANDed with
// matchExpressions; empty selects everything), with bounds that let the API server check every
// operator and requirement. The keys and values of matchLabels are checked by the controller (the
// set reports GeneratorFailed naming the selector): the API server cannot bound a map's keys for
// CEL.
type LabelSelector struct {
	// MatchLabels: each key must have this value.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
	// MatchExpressions: each requirement must hold.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelSelectorRequirement is one requirement of a label selector.
// +kubebuilder:validation:XValidation:rule="(self.operator in ['In', 'NotIn']) == (has(self.values) && size(self.values) > 0)",message="matchExpressions: operators In and NotIn need values, Exists and DoesNotExist take none"
type LabelSelectorRequirement struct {
	// Key is the label key.
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="!format.qualifiedName().validate(self).hasValue()",message="matchExpressions: key must be a label key such as region or example.com/site"
	Key string `json:"key"`
	// Operator is In, NotIn, Exists or DoesNotExist.
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist
	Operator metav1.LabelSelectorOperator `json:"operator"`
	// Values for In and NotIn.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	// +optional
	Values []string `json:"values,omitempty"`
}

// Selector is s as a labels.Selector.
func (s *LabelSelector) Selector() (labels.Selector, error) {
	if s == nil {
		return labels.Everything(), nil
	}
	out := &metav1.LabelSelector{MatchLabels: s.MatchLabels}
	for _, r := range s.MatchExpressions {
		out.MatchExpressions = append(out.MatchExpressions, metav1.LabelSelectorRequirement{Key: r.Key, Operator: r.Operator, Values: r.Values})
	}
	return metav1.LabelSelectorAsSelector(out)
}
