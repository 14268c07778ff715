package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// PackageSetSpec deploys one blueprint revision to every target its generator yields.
// +kubebuilder:validation:XValidation:rule="has(self.package.repository)",message="package.repository is required: name the Repository that holds the blueprint"
type PackageSetSpec struct {
	// Package is the blueprint: repository, package and revision (vN or latest).
	Package PackageReference `json:"package"`

	// Targets is the generator of targets: exactly one of clusters, list, objects or matrix.
	Targets Generator `json:"targets"`

	// Template says how each target's PackageDeployment looks.
	// +kubebuilder:default={}
	// +optional
	Template DeploymentTemplate `json:"template,omitempty"`

	// Variant renders, per target, a specialized copy of the blueprint into the target cluster's
	// repository, publishes it as a revision, and deploys exactly that revision.
	// +optional
	Variant *VariantSpec `json:"variant,omitempty"`

	// DependsOn orders this set after other PackageSets of the namespace: with scope Cluster
	// (default) a target moves to a new revision only once the named set is Ready at its revision
	// on the same cluster (deploy the SMF before the UPF on each site); with Fleet, only once the
	// named set is Ready fleet-wide (its whole rollout done: the core before the edge). A cycle is
	// refused (DependencyCycle).
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	// +optional
	DependsOn []SetDependency `json:"dependsOn,omitempty"`

	// AllowEmpty lets a generator result of zero targets delete every generated deployment.
	// Without it, a set that had targets and suddenly has none keeps them and reports why.
	// +optional
	AllowEmpty bool `json:"allowEmpty,omitempty"`

	// DeletionPolicy says what deleting the set does: Delete (default) deletes the generated
	// deployments, which undeploys them; Orphan leaves them running as standalone deployments.
	// +kubebuilder:default=Delete
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// Strategy says how a change of the blueprint revision reaches the targets.
	// +optional
	Strategy RolloutStrategy `json:"strategy,omitempty"`
}

// SetDependency names a PackageSet this one waits for.
type SetDependency struct {
	// Name of the PackageSet, in the same namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Scope is Cluster (per target cluster) or Fleet (the whole set).
	// +kubebuilder:validation:Enum=Cluster;Fleet
	// +kubebuilder:default=Cluster
	// +optional
	Scope DependencyScope `json:"scope,omitempty"`
}

// DependencyScope is how far a set dependency reaches.
type DependencyScope string

// Dependency scopes.
const (
	DependencyCluster DependencyScope = "Cluster"
	DependencyFleet   DependencyScope = "Fleet"
)

// VariantSpec says how each target's specialized package is rendered.
type VariantSpec struct {
	// Package is the downstream package name in the target cluster's repository (under its
	// directory). Default: the blueprint's name.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$') && !self.matches('(^|/)\\\\.\\\\.?(/|$)')",message="package must be a relative path without '.' or '..' segments"
	// +optional
	Package string `json:"package,omitempty"`
	// Values are the values the variant is rendered with (package-context.yaml and setters).
	// +optional
	Values VariantValues `json:"values,omitempty"`
	// Injectors select in-cluster objects for kpt.dev/config-injection points.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Injectors []Injector `json:"injectors,omitempty"`
	// Pipeline holds extra KRM functions, run before the package's own pipeline.
	// +optional
	Pipeline *VariantPipeline `json:"pipeline,omitempty"`
}

// VariantValues is a Hiera-like hierarchy: later layers win, inline wins over all.
type VariantValues struct {
	// Hierarchy lists ConfigMaps in the set's namespace, lowest priority first.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Hierarchy []ValuesLayer `json:"hierarchy,omitempty"`
	// Inline values, highest priority.
	// +optional
	Inline map[string]string `json:"inline,omitempty"`
}

// ValuesLayer is one layer of values: a ConfigMap, or the target cluster's facts.
// +kubebuilder:validation:XValidation:rule="(has(self.configMap) ? 1 : 0) + (has(self.configMapExpr) ? 1 : 0) + (has(self.facts) && self.facts ? 1 : 0) == 1",message="set exactly one of configMap, configMapExpr or facts: true"
type ValuesLayer struct {
	// Facts takes the values from the target cluster's facts (WorkloadCluster status.facts, read
	// from the cluster): kubernetesVersion, nodes, cpu, memory, region, zone, instanceType (the
	// distinct values, comma-separated) and every key of the site facts ConfigMap.
	// +optional
	Facts bool `json:"facts,omitempty"`
	// ConfigMap names the ConfigMap.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Subdomain().validate(self).hasValue()",message="values.hierarchy[].configMap must be a ConfigMap name (lower-case letters, digits, '-' and '.')"
	// +optional
	ConfigMap string `json:"configMap,omitempty"`
	// ConfigMapExpr is a CEL expression over target, values, upstream and set giving the name.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	ConfigMapExpr string `json:"configMapExpr,omitempty"`
	// Required makes a missing ConfigMap a per-target error; otherwise the layer is skipped.
	// +optional
	Required bool `json:"required,omitempty"`
}

// Injector selects an in-cluster object whose spec (or data) fills the injection points of its
// kind.
type Injector struct {
	// APIVersion of the object (default flotilla.dev/v1alpha1).
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?v[0-9]+((alpha|beta)[0-9]+)?$')",message="injectors[].apiVersion must be GROUP/VERSION or VERSION, such as infra.nephio.org/v1alpha1 or v1"
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind of the object, e.g. WorkloadCluster or ConfigMap.
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
	// NameExpr is a CEL expression over target, values, upstream and set giving its name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	NameExpr string `json:"nameExpr"`
}

// VariantPipeline is a list of extra functions.
type VariantPipeline struct {
	// Mutators run before the package's own pipeline.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Mutators []KptFunction `json:"mutators,omitempty"`
}

// KptFunction is a KRM function, as in a Kptfile pipeline. Built-in functions (apply-setters,
// set-namespace, set-labels, set-annotations, apply-replacements, starlark) run in process.
// +kubebuilder:validation:XValidation:rule="has(self.image) != has(self.exec)",message="set exactly one of image or exec"
type KptFunction struct {
	// Image names the function, e.g. gcr.io/kpt-fn/set-namespace:v0.4.1.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]+([._/:@-][a-zA-Z0-9_]+)*$')",message="mutators[].image must be an image reference such as gcr.io/kpt-fn/set-namespace:v0.4.1"
	// +optional
	Image string `json:"image,omitempty"`
	// Exec runs an executable on the controller: only one its --allow-exec-functions names (by
	// name on PATH or absolute path); any other is a problem of the target.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.matches('^[^ ]+$')",message="mutators[].exec must be an executable's name or absolute path, without spaces or arguments"
	// +optional
	Exec string `json:"exec,omitempty"`
	// ConfigMap is the function's configuration.
	// +optional
	ConfigMap map[string]string `json:"configMap,omitempty"`
	// Name identifies the function in messages.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Name string `json:"name,omitempty"`
}

// StrategyType is how a PackageSet rolls a new blueprint revision out.
// +kubebuilder:validation:Enum=AllAtOnce;RollingUpdate
type StrategyType string

// Strategy types.
const (
	StrategyAllAtOnce     StrategyType = "AllAtOnce"
	StrategyRollingUpdate StrategyType = "RollingUpdate"
)

// RolloutStrategy is how a new blueprint revision reaches the targets.
// +kubebuilder:validation:XValidation:rule="!has(self.type) || self.type != 'RollingUpdate' || (has(self.rollingUpdate) && size(self.rollingUpdate.steps) > 0)",message="type RollingUpdate needs rollingUpdate.steps"
type RolloutStrategy struct {
	// Type: AllAtOnce (default) pins every target at once; RollingUpdate moves targets step by
	// step, each step only once the previous one is healthy.
	// +kubebuilder:default=AllAtOnce
	// +optional
	Type StrategyType `json:"type,omitempty"`
	// RollingUpdate configures type RollingUpdate.
	// +optional
	RollingUpdate *RollingUpdate `json:"rollingUpdate,omitempty"`
}

// RollingUpdate is a stepwise rollout.
// +kubebuilder:validation:XValidation:rule="!has(self.partitionBy) || (size(self.steps) == 1 && !has(self.steps[0].selector))",message="rollingUpdate.partitionBy makes one step per value of the label: give exactly one step, without selector, as the template of every step (its maxUnavailable and pause)"
type RollingUpdate struct {
	// PartitionBy is a cluster label key, e.g. topology.kubernetes.io/region: the rollout makes
	// one step per value of that label among the targets, in sorted order, then one step for the
	// targets without it. steps then holds exactly one step, without selector: the template of
	// every step (maxUnavailable, a count or a percentage of the step's targets, and pause).
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')",message="rollingUpdate.partitionBy must be a label key such as region or topology.kubernetes.io/region"
	// +optional
	PartitionBy string `json:"partitionBy,omitempty"`
	// Steps in order. A step takes the targets its selector matches that no earlier step took; a
	// step without selector takes the rest.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Steps []RolloutStep `json:"steps"`
	// HealthTimeout is how long a target may take to become healthy after its pin changed before
	// the rollout halts (Stalled). Default 10m.
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="rollingUpdate.healthTimeout must be a positive duration such as 10m or 90s"
	// +optional
	HealthTimeout *metav1.Duration `json:"healthTimeout,omitempty"`
	// OnFailure is what a target that does not become healthy within healthTimeout does to the
	// rollout: Halt (default) stops it on the failed revision; Rollback stops it too and returns
	// targets (rollbackScope) to the last revision that was healthy on them.
	// +kubebuilder:validation:Enum=Halt;Rollback
	// +kubebuilder:default=Halt
	// +optional
	OnFailure RolloutFailurePolicy `json:"onFailure,omitempty"`
	// RollbackScope is which targets a Rollback returns: Failed (default), the targets that did
	// not become healthy, or All, every target the rollout moved to the failed revision.
	// +kubebuilder:validation:Enum=Failed;All
	// +kubebuilder:default=Failed
	// +optional
	RollbackScope RollbackScope `json:"rollbackScope,omitempty"`
}

// RolloutFailurePolicy is what a failed target does to a rollout.
type RolloutFailurePolicy string

// Failure policies.
const (
	OnFailureHalt     RolloutFailurePolicy = "Halt"
	OnFailureRollback RolloutFailurePolicy = "Rollback"
)

// RollbackScope is which targets a rollback returns.
type RollbackScope string

// Rollback scopes.
const (
	RollbackFailed RollbackScope = "Failed"
	RollbackAll    RollbackScope = "All"
)

// RolloutStep is one step of a rollout.
type RolloutStep struct {
	// Selector over the target clusters' labels; empty or absent takes every target left.
	// +optional
	Selector *LabelSelector `json:"selector,omitempty"`
	// MaxUnavailable is how many targets of the step may be moving (pinned to the new revision
	// but not yet healthy) at once: a number or a percentage of the step's targets. Default 1.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? int(self) >= 1 : string(self).matches('^(100|[1-9][0-9]?)%$')",message="maxUnavailable must be a count of at least 1 or a percentage from 1% to 100%, such as 1 or 25%"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// Pause stops the rollout after this step until the annotation flotilla.dev/resume gets a
	// new value (flotilla rollout resume SET).
	// +optional
	Pause bool `json:"pause,omitempty"`
}

// Generator yields targets: clusters with values.
// +kubebuilder:validation:XValidation:rule="(has(self.clusters) ? 1 : 0) + (has(self.list) ? 1 : 0) + (has(self.objects) ? 1 : 0) + (has(self.matrix) ? 1 : 0) == 1",message="set exactly one generator: clusters, list, objects or matrix"
// +kubebuilder:validation:XValidation:rule="!has(self.matrix) || self.matrix.all(m, (has(m.clusters) ? 1 : 0) + (has(m.list) ? 1 : 0) + (has(m.objects) ? 1 : 0) == 1)",message="each matrix element sets exactly one of clusters, list or objects"
type Generator struct {
	LeafGenerator `json:",inline"`

	// Matrix is the cartesian product of two generators; the values of each pair are merged
	// (the second wins). When both name a cluster, only pairs naming the same cluster are kept.
	// A matrix that makes more than 100,000 pairs fails as a whole (GeneratorFailed).
	// +kubebuilder:validation:MinItems=2
	// +kubebuilder:validation:MaxItems=2
	// +optional
	Matrix []LeafGenerator `json:"matrix,omitempty"`
}

// LeafGenerator is a generator that is not a matrix.
type LeafGenerator struct {
	// Clusters selects WorkloadClusters in the set's namespace by label.
	// +optional
	Clusters *ClusterGenerator `json:"clusters,omitempty"`

	// List is literal elements: a cluster (optional inside a matrix) and values.
	// +kubebuilder:validation:MaxItems=10000
	// +optional
	List []ListElement `json:"list,omitempty"`

	// Objects selects objects of a kind the controller allows (--objects-generator-kinds) in the
	// set's namespace; clusterExpr names each one's cluster (Nephio's infra.nephio.org
	// WorkloadCluster objects, for example).
	// +optional
	Objects *ObjectGenerator `json:"objects,omitempty"`
}

// ClusterGenerator selects WorkloadClusters.
type ClusterGenerator struct {
	// Selector over the WorkloadClusters' labels; empty selects every cluster of the namespace.
	// +optional
	Selector LabelSelector `json:"selector,omitempty"`
}

// ListElement is one literal target.
type ListElement struct {
	// Cluster names a WorkloadCluster in the set's namespace.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Cluster string `json:"cluster,omitempty"`
	// Values are the element's values, `values` in CEL.
	// +optional
	Values map[string]string `json:"values,omitempty"`
}

// ObjectGenerator selects objects of one kind, among those the controller's
// --objects-generator-kinds allows (others are refused: KindNotAllowed).
type ObjectGenerator struct {
	// APIVersion of the objects, e.g. infra.nephio.org/v1alpha1.
	// +kubebuilder:validation:MinLength=1
	APIVersion string `json:"apiVersion"`
	// Kind of the objects, e.g. WorkloadCluster.
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
	// Selector over the objects' labels; empty selects every object of the namespace.
	// +optional
	Selector LabelSelector `json:"selector,omitempty"`
	// ClusterExpr is a CEL expression over `object` (the selected object) giving the name of the
	// WorkloadCluster it stands for.
	// +kubebuilder:default="object.metadata.name"
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	ClusterExpr string `json:"clusterExpr,omitempty"`
	// ValuesExpr is an optional CEL expression over `object` giving a map of string values.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	ValuesExpr string `json:"valuesExpr,omitempty"`
}

// DeploymentTemplate is how each target's PackageDeployment looks. Expressions are CEL over
// `target` (name, namespace, labels, annotations, context of the cluster), `values` (the
// element's values), `upstream` (repository, name, revision, tag, commit of the blueprint) and
// `set` (name, namespace, labels, annotations of the PackageSet).
type DeploymentTemplate struct {
	// NameExpr gives the deployment's name (hashed down to 63 characters when longer). Default:
	// set.name + '-' + target.name.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	NameExpr string `json:"nameExpr,omitempty"`
	// Namespace deploys namespace-scoped (PackageDeployment.spec.namespace).
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Label().validate(self).hasValue()",message="template.namespace must be a namespace name (a DNS label); namespaceExpr computes one per target"
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// NamespaceExpr gives the namespace per target; it wins over namespace.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	NamespaceExpr string `json:"namespaceExpr,omitempty"`
	// DeletionPolicy of the generated deployments.
	// +kubebuilder:default=Delete
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
	// Labels to put on each deployment: label key → CEL expression giving the value.
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.qualifiedName().validate(k).hasValue())",message="template.labels keys must be label keys such as app or example.com/site (the values are CEL expressions)"
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations to put on each deployment: annotation key → CEL expression giving the value.
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.qualifiedName().validate(k.lowerAscii()).hasValue())",message="template.annotations keys must be annotation keys such as example.com/owner (the values are CEL expressions)"
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// DependsOn orders each generated deployment after other deployments on its target's cluster
	// (PackageDeployment spec.dependsOn), e.g. the SMF before the UPF on every site: each entry
	// gives, per target, the name of one.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	DependsOn []TemplateDependency `json:"dependsOn,omitempty"`
}

// TemplateDependency names, per target, a deployment on the target's cluster that the generated
// deployment waits for.
type TemplateDependency struct {
	// NameExpr is a CEL expression giving the deployment's name, e.g. "'smf-' + target.name"
	// (the name nameExpr gives the other set's deployment on this cluster).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	NameExpr string `json:"nameExpr"`
}

// PackageSetStatus summarizes the generated deployments.
type PackageSetStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready, Progressing, Stalled.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Targets is the number of targets the generator yields.
	// +optional
	Targets int `json:"targets"`
	// Updated is the number of deployments whose spec is the one the set asks for.
	// +optional
	Updated int `json:"updated"`
	// Ready is the number of deployments that are Ready.
	// +optional
	Ready int `json:"ready"`
	// Failed is the number of targets with a problem.
	// +optional
	Failed int `json:"failed,omitempty"`
	// Problems lists the first problems by target, so status stays small at any fleet size.
	// +kubebuilder:validation:MaxItems=10
	// +optional
	Problems []TargetProblem `json:"problems,omitempty"`
	// Rollout is the state of a RollingUpdate.
	// +optional
	Rollout *RolloutStatus `json:"rollout,omitempty"`
	// Revision is the blueprint revision (tag) the set deploys now.
	// +optional
	Revision string `json:"revision,omitempty"`
	// Promotion says where the set's revision comes from (spec.package.revisionFrom) and what the
	// next promotion waits for.
	// +optional
	Promotion *PromotionStatus `json:"promotion,omitempty"`
}

// PromotionStatus is the state of a promotion from another set.
type PromotionStatus struct {
	// From is the set promoted from.
	From string `json:"from"`
	// Revision is the revision (vN) the set deploys now.
	Revision string `json:"revision"`
	// Message says what the next promotion waits for.
	// +optional
	Message string `json:"message,omitempty"`
}

// RolloutStatus is where a RollingUpdate stands.
type RolloutStatus struct {
	// Revision is the blueprint revision being rolled out (its tag).
	Revision string `json:"revision"`
	// Step is the index of the current step.
	Step int `json:"step"`
	// Partition is, with partitionBy, the label value of the current step ("" for the step of
	// the targets without the label): the rollout stays at that partition when a new value
	// changes the steps' indexes.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Partition string `json:"partition,omitempty"`
	// Paused is true after a step with pause: true, until flotilla.dev/resume changes.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// Resume is the value of flotilla.dev/resume that released the last pause.
	// +optional
	Resume string `json:"resume,omitempty"`
	// Halted is true when a target did not become healthy within healthTimeout; nothing more is
	// touched until the spec changes.
	// +optional
	Halted bool `json:"halted,omitempty"`
	// FailedTargets names (some of) the targets that did not become healthy.
	// +kubebuilder:validation:MaxItems=10
	// +optional
	FailedTargets []string `json:"failedTargets,omitempty"`
	// Message says what the rollout waits for.
	// +optional
	Message string `json:"message,omitempty"`
	// RolledBack lists the targets the rollout returned to their last healthy revision (onFailure
	// Rollback, or flotilla rollout undo), and why.
	// +kubebuilder:validation:MaxItems=100
	// +optional
	RolledBack []RolledBackTarget `json:"rolledBack,omitempty"`
	// Undo is the value of flotilla.dev/undo that the last rollback by hand answered.
	// +optional
	Undo string `json:"undo,omitempty"`
}

// RolledBackTarget is one target a rollout rolled back.
type RolledBackTarget struct {
	// Target is the deployment's name.
	Target string `json:"target"`
	// From is the revision it left (the rollout's), To the last one healthy on it.
	From string `json:"from"`
	To   string `json:"to"`
}

// TargetProblem is why one target could not be rendered.
type TargetProblem struct {
	// Target is the cluster (and values) the problem is about.
	Target string `json:"target"`
	// Message says what is wrong and what to fix.
	Message string `json:"message"`
}

// PackageSet deploys a blueprint revision to every target a generator yields, as owned
// PackageDeployments.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pset,categories=flotilla
// +kubebuilder:printcolumn:name="Package",type=string,JSONPath=`.spec.package.name`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.spec.package.revision`
// +kubebuilder:printcolumn:name="Targets",type=integer,JSONPath=`.status.targets`
// +kubebuilder:printcolumn:name="Updated",type=integer,JSONPath=`.status.updated`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.ready`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PackageSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PackageSetSpec   `json:"spec"`
	Status PackageSetStatus `json:"status,omitempty"`
}

// PackageSetList is a list of PackageSets.
// +kubebuilder:object:root=true
type PackageSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PackageSet `json:"items"`
}
