// Package gitremote turns a Repository object and its Secret into a pkgrepo.Remote.
package gitremote

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// ErrSecret is wrapped by every error about a repository's credentials Secret.
var ErrSecret = errors.New("git credentials secret")

// Remote builds the remote of repo. Credentials come only from the Secret named by
// spec.git.secretRef in the repository's own namespace. Reader should be uncached (the API
// reader), so flotilla needs only `get` on Secrets, not a cluster-wide watch.
func Remote(ctx context.Context, reader client.Reader, repo *v1alpha1.Repository) (pkgrepo.Remote, error) {
	r := pkgrepo.Remote{URL: repo.Spec.Git.URL, Branch: Branch(repo)}
	ref := repo.Spec.Git.SecretRef
	if ref == nil {
		return r, nil
	}
	var secret corev1.Secret
	if err := reader.Get(ctx, client.ObjectKey{Namespace: repo.Namespace, Name: ref.Name}, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return r, fmt.Errorf("%w %s/%s not found: create it with username and password, or bearerToken", ErrSecret, repo.Namespace, ref.Name)
		}
		return r, fmt.Errorf("read %w %s/%s: %w", ErrSecret, repo.Namespace, ref.Name, err)
	}
	auth, err := FromSecret(&secret)
	if err != nil {
		return r, err
	}
	r.Auth = auth
	return r, nil
}

// FromSecret reads username+password or bearerToken from a Secret.
func FromSecret(secret *corev1.Secret) (pkgrepo.Auth, error) {
	get := func(k string) string {
		if v, ok := secret.Data[k]; ok {
			return string(v)
		}
		return secret.StringData[k]
	}
	auth := pkgrepo.Auth{Username: get("username"), Password: get("password"), BearerToken: get("bearerToken")}
	switch {
	case auth.BearerToken != "" && auth.Password == "":
		return auth, nil
	case auth.Username != "" && auth.Password != "" && auth.BearerToken == "":
		return auth, nil
	default:
		return pkgrepo.Auth{}, fmt.Errorf("%w %s/%s must hold either username and password, or bearerToken", ErrSecret, secret.Namespace, secret.Name)
	}
}

// Branch is the repository's branch, main by default.
func Branch(repo *v1alpha1.Repository) string {
	if repo.Spec.Git.Branch != "" {
		return repo.Spec.Git.Branch
	}
	return "main"
}

// SyncURL is the URL the clusters' agents read the repository from.
func SyncURL(repo *v1alpha1.Repository) string {
	if repo.Spec.Git.SyncURL != "" {
		return repo.Spec.Git.SyncURL
	}
	return repo.Spec.Git.URL
}

// Reason maps a git error to a condition reason, and whether the user must act (Stalled) rather
// than wait for a retry.
func Reason(err error) (reason string, stalled bool) {
	switch {
	case errors.Is(err, ErrSecret):
		return "SecretInvalid", true
	case errors.Is(err, pkgrepo.ErrAuthentication):
		return "AuthenticationFailed", true
	case errors.Is(err, pkgrepo.ErrPackageNotFound):
		return "PackageNotFound", true
	case errors.Is(err, pkgrepo.ErrRevisionNotFound):
		return "RevisionNotFound", true
	case errors.Is(err, pkgrepo.ErrInvalidPackage):
		return "InvalidPackage", true
	case errors.Is(err, pkgrepo.ErrUnreachable), errors.Is(err, context.DeadlineExceeded):
		return "RepositoryUnreachable", false
	default:
		return "GitError", false
	}
}
