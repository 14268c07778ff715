package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PackageVariantSpec specializes one upstream package revision into one downstream package,
// published as revisions DOWNSTREAM/vN of the downstream repository. It deploys nothing: a
// PackageDeployment, a PackageSet or another PackageVariant takes the downstream package as its
// package. Chained, variants are the layers blueprint → use → environment, each keeping its own
// direct edits (3-way merge), each new upstream revision flowing down layer by layer.
// +kubebuilder:validation:XValidation:rule="!has(self.values) || !has(self.values.hierarchy) || self.values.hierarchy.all(l, !has(l.configMapExpr) && !(has(l.facts) && l.facts))",message="spec.values.hierarchy: a PackageVariant has no target cluster (for configMapExpr or facts): name each layer's configMap"
type PackageVariantSpec struct {
	// Upstream is the package revision to specialize: a package of a Repository, or the output of
	// another PackageVariant (its latest published revision).
	Upstream VariantUpstream `json:"upstream"`

	// Downstream is where the specialized package is published.
	Downstream VariantDownstream `json:"downstream"`

	// Values are the values the variant is rendered with (package-context.yaml and setters):
	// ConfigMaps of the namespace, lowest priority first, then inline values.
	// +optional
	Values VariantValues `json:"values,omitempty"`

	// Pipeline holds extra KRM functions, run before the package's own pipeline.
	// +optional
	Pipeline *VariantPipeline `json:"pipeline,omitempty"`

	// Approval: Automatic publishes each new downstream revision at once; Manual proposes it on
	// branch proposed/<package>/vN and publishes it when the annotation flotilla.dev/approve
	// names status.proposal.commit (the rule of WorkloadCluster approvals). The layers below move
	// only once it is published.
	// +kubebuilder:validation:Enum=Automatic;Manual
	// +kubebuilder:default=Automatic
	// +optional
	Approval Approval `json:"approval,omitempty"`

	// Suspend stops publishing: the downstream package keeps its revisions.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// VariantUpstream is a PackageVariant's upstream: exactly one of variant, or repository with
// name (and revision).
// +kubebuilder:validation:XValidation:rule="has(self.variant) != has(self.name)",message="spec.upstream: set either variant (another PackageVariant, whose latest output is the upstream) or repository, name and revision"
// +kubebuilder:validation:XValidation:rule="!has(self.variant) || (!has(self.repository) && !has(self.revision))",message="spec.upstream.variant takes the other variant's latest published revision: do not set repository or revision with it"
// +kubebuilder:validation:XValidation:rule="!has(self.name) || has(self.repository)",message="spec.upstream.repository is required with name: name the Repository that holds the upstream package"
type VariantUpstream struct {
	// Variant names another PackageVariant in the namespace: its downstream package, at the
	// revision it last published, is the upstream.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Variant string `json:"variant,omitempty"`
	// Repository holding the upstream package.
	// +optional
	Repository *LocalObjectReference `json:"repository,omitempty"`
	// Name is the package path under the repository directory.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$') && !self.matches('(^|/)\\\\.\\\\.?(/|$)')",message="spec.upstream.name must be a relative package path without '.' or '..' segments"
	// +optional
	Name string `json:"name,omitempty"`
	// Revision is vN, or latest (default: follows new revisions).
	// +kubebuilder:validation:XValidation:rule="self == 'latest' || self.matches('^v[1-9][0-9]{0,8}$')",message="spec.upstream.revision must be vN (v1, v2, ...) or latest"
	// +optional
	Revision string `json:"revision,omitempty"`
}

// VariantDownstream is where a PackageVariant publishes.
type VariantDownstream struct {
	// Repository is a git Repository of the namespace.
	Repository LocalObjectReference `json:"repository"`
	// Package is the downstream package path under the repository directory.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$') && !self.matches('(^|/)\\\\.\\\\.?(/|$)')",message="spec.downstream.package must be a relative package path without '.' or '..' segments"
	Package string `json:"package"`
}

// PackageVariantStatus is what the variant last rendered and published.
type PackageVariantStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready, Reconciling, Stalled.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Upstream is the upstream revision the latest downstream revision was rendered from.
	// +optional
	Upstream *ResolvedRevision `json:"upstream,omitempty"`
	// Downstream is the latest downstream revision published.
	// +optional
	Downstream *ResolvedRevision `json:"downstream,omitempty"`
	// Lineage lists the revisions above this variant, the root blueprint first and Upstream
	// last: which blueprint revision the downstream comes from, through which layers.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Lineage []LineageEntry `json:"lineage,omitempty"`
	// Proposal is the downstream revision waiting for approval (approval Manual).
	// +optional
	Proposal *VariantProposal `json:"proposal,omitempty"`
	// ApprovedCommit is the proposal commit whose approval published status.downstream: an
	// approval annotation still naming it approves nothing more.
	// +optional
	ApprovedCommit string `json:"approvedCommit,omitempty"`
}

// VariantProposal is a downstream revision waiting for approval.
type VariantProposal struct {
	// Revision is the N it will be published as.
	Revision int `json:"revision"`
	// Branch holds the proposed commit.
	Branch string `json:"branch"`
	// Commit is the proposed commit; approve it with flotilla.dev/approve=<commit>.
	Commit string `json:"commit"`
	// Upstream is the upstream revision the proposal was rendered from.
	Upstream ResolvedRevision `json:"upstream"`
	// Lineage is the lineage the downstream gets once approved.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Lineage []LineageEntry `json:"lineage,omitempty"`
}

// LineageEntry is one layer above a variant.
type LineageEntry struct {
	// Variant is the PackageVariant that published Tag ("" for the root blueprint).
	// +optional
	Variant string `json:"variant,omitempty"`
	// Repository and Tag name the revision; Commit is its commit.
	Repository string `json:"repository"`
	Tag        string `json:"tag"`
	Commit     string `json:"commit"`
}

// PackageVariant specializes one upstream package revision into a downstream package.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pvar,categories=flotilla
// +kubebuilder:printcolumn:name="Upstream",type=string,JSONPath=`.status.upstream.tag`
// +kubebuilder:printcolumn:name="Downstream",type=string,JSONPath=`.status.downstream.tag`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PackageVariant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PackageVariantSpec   `json:"spec"`
	Status PackageVariantStatus `json:"status,omitempty"`
}

// PackageVariantList is a list of PackageVariants.
// +kubebuilder:object:root=true
type PackageVariantList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PackageVariant `json:"items"`
}
