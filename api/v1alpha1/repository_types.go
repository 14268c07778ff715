package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RepositorySpec says where a repository of packages is and how to reach it: a git repository, or
// an OCI repository whose artifacts are package revisions.
// +kubebuilder:validation:XValidation:rule="has(self.git) != has(self.oci)",message="set exactly one of spec.git (a git repository) and spec.oci (an OCI repository of package artifacts)"
type RepositorySpec struct {
	// Git is the repository's location and credentials.
	// +optional
	Git *GitRepository `json:"git,omitempty"`

	// OCI is an OCI repository (a registry path) whose artifacts are package revisions: package
	// PKG, revision vN is the artifact URL/PKG:vN, which flotilla pins by digest. It holds
	// packages only: a WorkloadCluster's repository (deployed-packages) is always git.
	// +optional
	OCI *OCIRepository `json:"oci,omitempty"`

	// Interval is how often flotilla polls the repository for new branches and tags. A fetch
	// flotilla made for its own publish counts as a poll (the next one comes an interval later).
	// +kubebuilder:default="1m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('5s')",message="interval must be at least 5s"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// Webhook lets the git server announce pushes: with the controller's
	// --webhook-bind-address, a push event POSTed to /hook/NAMESPACE/NAME whose signature
	// verifies with the token in secretRef (key token) refreshes the repository at once, so
	// interval can be long. GitHub (X-Hub-Signature-256), Gitea and Forgejo
	// (X-Gitea-Signature), GitLab (X-Gitlab-Token) and a generic form (X-Signature-256:
	// sha256=HMAC) are understood; anything else is refused.
	// +optional
	Webhook *RepositoryWebhook `json:"webhook,omitempty"`
}

// RepositoryWebhook names the Secret holding a repository's webhook token.
type RepositoryWebhook struct {
	// SecretRef names a Secret of the namespace whose key token is the webhook's secret.
	SecretRef LocalObjectReference `json:"secretRef"`
}

// GitRepository is the git side of a Repository.
// +kubebuilder:validation:XValidation:rule="!has(self.syncURL) || size(self.syncURL) == 0 || self.syncURL.matches('^(https?|ssh|file|git)://.+$') || self.syncURL.matches('^[^@/:]+@[^:/]+:.+$')",message="syncURL must be an http(s)://, ssh://, git:// or file:// URL, or user@host:path"
type GitRepository struct {
	// URL is what flotilla clones and pushes: http(s)://, ssh://, scp-style user@host:path, or
	// file:// (refused unless the controller runs with --allow-local-repositories).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.matches('^(https?|ssh|file)://.+$') || self.matches('^[^@/:]+@[^:/]+:.+$')",message="url must start with http://, https://, ssh:// or file://, or be scp-style user@host:path"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^(https?|git|file)://[^/]*@') && !self.matches('^[a-z+]+://[^/@]*:[^/@]*@') && !self.contains('?')",message="url must not carry credentials (user info, or a token in a ?query); put them in a Secret named by secretRef (ssh URLs may name a user, never a password)"
	URL string `json:"url"`

	// SyncURL is the URL the clusters' GitOps agents use to read this repository. Default: url.
	// It is written into sync objects in git, so it never carries credentials: the agents read
	// them from the cluster's own Secret (spec.sync.git.secretRef of the WorkloadCluster).
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="!self.matches('^(https?|git|file)://[^/]*@') && !self.matches('^[a-z+]+://[^/@]*:[^/@]*@') && !self.contains('?')",message="syncURL must not carry credentials (user info, or a token in a ?query: it is written into git): give the agents their credentials through spec.sync.git.secretRef of the WorkloadCluster; ssh URLs may name a user, never a password"
	// +optional
	SyncURL string `json:"syncURL,omitempty"`

	// Branch holds the packages and receives flotilla's commits.
	// +kubebuilder:default=main
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('refs/') && !self.contains('..') && !self.contains(' ') && !self.endsWith('/') && !self.startsWith('/')",message="branch must be a plain branch name such as main (no refs/ prefix, no '..', spaces or leading/trailing '/')"
	// +optional
	Branch string `json:"branch,omitempty"`

	// Directory is where packages live inside the repository, as in Porch's
	// Repository.spec.git.directory.
	// +kubebuilder:default="/"
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.matches('(^|/)\\\\.\\\\.(/|$)')",message="directory must not contain '..' segments"
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9._/-]*$')",message="directory may only contain letters, digits, '.', '_', '-' and '/'"
	// +optional
	Directory string `json:"directory,omitempty"`

	// SecretRef names a Secret in the same namespace with the credentials, under the keys Flux
	// uses: `username`+`password` or `bearerToken` for http(s); `identity` (a private key),
	// `known_hosts` (the server's host key lines, as `ssh-keyscan` prints them; required, host
	// keys are never trusted blindly) and optionally `password` (the key's passphrase) for ssh;
	// `ca.crt` (PEM) for an https server whose certificate a private CA signed, alone or with
	// either http form.
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
}

// OCIRepository is the OCI side of a Repository.
type OCIRepository struct {
	// URL is the registry host and repository path the packages are under, without a scheme or
	// with oci://: registry.example.com/catalog makes package upf the artifact
	// registry.example.com/catalog/upf. No tag, digest or credentials.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.matches('^(oci://)?[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]+)?(/[a-z0-9]+([._-]+[a-z0-9]+)*)*$')",message="url must be a registry host and repository path such as registry.example.com/catalog (optionally oci://...), with no tag, digest, credentials or trailing '/'"
	URL string `json:"url"`

	// SecretRef names a Secret in the same namespace with the registry credentials flotilla uses:
	// `username` and `password` (a password or a token), and optionally `ca.crt` (PEM) for a
	// registry whose certificate a private CA signed. The clusters' agents use their own.
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`

	// Insecure lets flotilla and the agents reach the registry over plain HTTP.
	// +optional
	Insecure bool `json:"insecure,omitempty"`
}

// RepositoryStatus is what flotilla last saw of the repository.
type RepositoryStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready, Reconciling, Stalled.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Head is the commit at the tip of spec.git.branch.
	// +optional
	Head string `json:"head,omitempty"`
	// RefsDigest changes whenever any branch or tag of the repository changes; deployments that
	// follow `latest` re-resolve when it does.
	// +optional
	RefsDigest string `json:"refsDigest,omitempty"`
}

// Repository is a git repository flotilla reads packages from and writes deployed-packages to.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=frepo,categories=flotilla
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.git.url`
// +kubebuilder:printcolumn:name="Branch",type=string,JSONPath=`.spec.git.branch`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Repository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RepositorySpec   `json:"spec"`
	Status RepositoryStatus `json:"status,omitempty"`
}

// RepositoryList is a list of Repositories.
// +kubebuilder:object:root=true
type RepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Repository `json:"items"`
}
