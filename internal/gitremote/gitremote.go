// Package gitremote turns a Repository object and its Secret into a pkgrepo.Remote.
package gitremote

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// ErrSecret is wrapped by every error about a repository's credentials Secret.
var ErrSecret = errors.New("git credentials secret")

// ErrNotGit is wrapped by the error for an OCI Repository (spec.oci) used where only git will do:
// a cluster's deployed-packages, a variant's blueprint or downstream.
var ErrNotGit = pkgrepo.ErrNotGit

// Remote builds the remote of repo. Credentials come only from the Secret named by
// spec.git.secretRef in the repository's own namespace. Reader should be uncached (the API
// reader), so flotilla needs only `get` on Secrets, not a cluster-wide watch.
func Remote(ctx context.Context, reader client.Reader, repo *v1alpha1.Repository) (pkgrepo.Remote, error) {
	r, ref, err := Base(repo)
	if err != nil || ref == nil {
		return r, err
	}
	var secret corev1.Secret
	if err := reader.Get(ctx, client.ObjectKey{Namespace: repo.Namespace, Name: ref.Name}, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return r, fmt.Errorf("%w %s/%s not found: create it with username and password, bearerToken, or (for ssh) identity and known_hosts", ErrSecret, repo.Namespace, ref.Name)
		}
		return r, fmt.Errorf("read %w %s/%s: %w", ErrSecret, repo.Namespace, ref.Name, err)
	}
	return WithSecret(r, &secret)
}

// Base is repo's remote without credentials (git, or OCI with Remote.OCI), and the Secret that
// holds them (nil when there is none).
func Base(repo *v1alpha1.Repository) (pkgrepo.Remote, *v1alpha1.LocalObjectReference, error) {
	switch {
	case repo.Spec.Git != nil:
		return pkgrepo.Remote{URL: repo.Spec.Git.URL, Branch: Branch(repo), Scope: Scope(repo), MaxAge: readMaxAge(repo)}, repo.Spec.Git.SecretRef, nil
	case repo.Spec.OCI != nil:
		return pkgrepo.Remote{URL: strings.TrimPrefix(repo.Spec.OCI.URL, "oci://"), Scope: Scope(repo), OCI: true, Insecure: repo.Spec.OCI.Insecure},
			repo.Spec.OCI.SecretRef, nil
	}
	return pkgrepo.Remote{}, nil, fmt.Errorf("the Repository %s/%s has neither spec.git nor spec.oci", repo.Namespace, repo.Name)
}

// WithSecret is r with the credentials of its Secret (see FromSecret).
func WithSecret(r pkgrepo.Remote, secret *corev1.Secret) (pkgrepo.Remote, error) {
	auth, err := FromSecret(secret)
	if err != nil {
		return r, err
	}
	if r.OCI && auth.Identity != "" {
		return r, fmt.Errorf("%w %s/%s holds an ssh identity, which an OCI registry does not take: use username and password (or a token as password)", ErrSecret, secret.Namespace, secret.Name)
	}
	r.Auth = auth
	return r, nil
}

// NotGit is the ErrNotGit error for repo.
func NotGit(repo *v1alpha1.Repository) error {
	return fmt.Errorf("%w: Repository %s/%s is an OCI repository (spec.oci), and flotilla writes deployed-packages and variants to git only: name a Repository with spec.git here",
		ErrNotGit, repo.Namespace, repo.Name)
}

// Scope is who holds the repository's credentials: its namespace and Secret. Remotes of
// different scopes never share a git mirror, so a Repository naming another namespace's URL
// never reads what that namespace's credentials fetched.
func Scope(repo *v1alpha1.Repository) string {
	var ref *v1alpha1.LocalObjectReference
	switch {
	case repo.Spec.Git != nil:
		ref = repo.Spec.Git.SecretRef
	case repo.Spec.OCI != nil:
		ref = repo.Spec.OCI.SecretRef
	}
	if ref != nil {
		return repo.Namespace + "/" + ref.Name
	}
	return repo.Namespace + "/"
}

// FromSecret reads a Repository's credentials from its Secret, with the keys Flux uses:
// username+password or bearerToken for http(s); identity (a private key), known_hosts and
// optionally password (the key's passphrase) for ssh; ca.crt (PEM) for https servers signed by a
// private CA, alone or with either http form.
func FromSecret(secret *corev1.Secret) (pkgrepo.Auth, error) {
	get := func(k string) string {
		if v, ok := secret.Data[k]; ok {
			return string(v)
		}
		return secret.StringData[k]
	}
	invalid := func(what string) (pkgrepo.Auth, error) {
		return pkgrepo.Auth{}, fmt.Errorf("%w %s/%s %s", ErrSecret, secret.Namespace, secret.Name, what)
	}
	user, pass, token := get("username"), get("password"), get("bearerToken")
	identity, knownHosts, ca := get("identity"), get("known_hosts"), get("ca.crt")
	switch {
	case identity != "":
		if knownHosts == "" {
			return invalid("has identity but no known_hosts: add the ssh server's host key line, as `ssh-keyscan HOST` prints it (check its fingerprint first)")
		}
		if token != "" {
			return invalid("must hold either identity and known_hosts (ssh), or bearerToken, not both")
		}
		// For ssh, password is the key's passphrase, as in Flux.
		return pkgrepo.Auth{Identity: identity, KnownHosts: knownHosts, Passphrase: pass}, nil
	case knownHosts != "":
		return invalid("has known_hosts but no identity: add the ssh private key as identity")
	case token != "" && pass == "":
		return pkgrepo.Auth{BearerToken: token, CABundle: ca}, nil
	case user != "" && pass != "" && token == "":
		return pkgrepo.Auth{Username: user, Password: pass, CABundle: ca}, nil
	case ca != "" && user == "" && pass == "" && token == "":
		return pkgrepo.Auth{CABundle: ca}, nil
	default:
		return invalid("must hold username and password, bearerToken, or identity and known_hosts (ssh); ca.crt may go with the first two or alone")
	}
}

// Branch is the repository's branch, main by default.
func Branch(repo *v1alpha1.Repository) string {
	if repo.Spec.Git != nil && repo.Spec.Git.Branch != "" {
		return repo.Spec.Git.Branch
	}
	return "main"
}

// SyncURL is the URL the clusters' agents read the repository from.
func SyncURL(repo *v1alpha1.Repository) string {
	switch {
	case repo.Spec.Git == nil:
		return ""
	case repo.Spec.Git.SyncURL != "":
		return repo.Spec.Git.SyncURL
	}
	return repo.Spec.Git.URL
}

// Reason maps a git error to a condition reason, and whether the user must act (Stalled) rather
// than wait for a retry.
func Reason(err error) (reason string, stalled bool) {
	switch {
	case errors.Is(err, ErrNotGit):
		return "RepositoryNotGit", true
	case errors.Is(err, ErrSecret), errors.Is(err, pkgrepo.ErrCredentials):
		return "SecretInvalid", true
	case errors.Is(err, pkgrepo.ErrLocalRepository):
		return "LocalRepositoryRefused", true
	case errors.Is(err, pkgrepo.ErrHostKeyUnknown):
		return "HostKeyUnknown", true
	case errors.Is(err, pkgrepo.ErrHostKeyMismatch):
		return "HostKeyMismatch", true
	case errors.Is(err, pkgrepo.ErrCertificateUntrusted):
		return "CertificateUntrusted", true
	case errors.Is(err, pkgrepo.ErrAuthentication):
		return "AuthenticationFailed", true
	case errors.Is(err, pkgrepo.ErrPackageNotFound):
		return "PackageNotFound", true
	case errors.Is(err, pkgrepo.ErrTagMoved):
		return "TagMoved", true
	case errors.Is(err, pkgrepo.ErrRevisionNotFound):
		return "RevisionNotFound", true
	case errors.Is(err, pkgrepo.ErrInvalidPackage):
		return "InvalidPackage", true
	case errors.Is(err, pkgrepo.ErrAnswerTooLarge):
		return "RepositoryTooLarge", true
	case errors.Is(err, pkgrepo.ErrRemoteEmptied):
		return "RepositoryEmptied", false
	case errors.Is(err, pkgrepo.ErrUnreachable), errors.Is(err, context.DeadlineExceeded):
		return "RepositoryUnreachable", false
	default:
		return "GitError", false
	}
}

// readMaxAge is how old a Repository's mirror may be before a read fetches (0 when spec.interval
// is unset): a quarter longer than spec.interval, so the Repository's own refresh, every
// interval, is the one fetch an idle repository gets.
func readMaxAge(repo *v1alpha1.Repository) time.Duration {
	if repo.Spec.Interval == nil {
		return 0
	}
	return repo.Spec.Interval.Duration * 5 / 4
}
