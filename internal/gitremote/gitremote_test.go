package gitremote

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

func TestFromSecret(t *testing.T) {
	for _, tc := range []struct {
		name string
		data map[string]string
		want pkgrepo.Auth
		err  string // part of the message; "" for no error
	}{
		{"basic auth", map[string]string{"username": "u", "password": "p"}, pkgrepo.Auth{Username: "u", Password: "p"}, ""},
		{"bearer token with CA", map[string]string{"bearerToken": "t", "ca.crt": "CA"}, pkgrepo.Auth{BearerToken: "t", CABundle: "CA"}, ""},
		{"CA alone", map[string]string{"ca.crt": "CA"}, pkgrepo.Auth{CABundle: "CA"}, ""},
		{"ssh key", map[string]string{"identity": "KEY", "known_hosts": "KH"}, pkgrepo.Auth{Identity: "KEY", KnownHosts: "KH"}, ""},
		{"ssh key with passphrase", map[string]string{"identity": "KEY", "known_hosts": "KH", "password": "pp"}, pkgrepo.Auth{Identity: "KEY", KnownHosts: "KH", Passphrase: "pp"}, ""},
		{"ssh key without known_hosts", map[string]string{"identity": "KEY"}, pkgrepo.Auth{}, "no known_hosts: add the ssh server's host key"},
		{"known_hosts without key", map[string]string{"known_hosts": "KH"}, pkgrepo.Auth{}, "no identity"},
		{"ssh key and token", map[string]string{"identity": "KEY", "known_hosts": "KH", "bearerToken": "t"}, pkgrepo.Auth{}, "not both"},
		{"empty", nil, pkgrepo.Auth{}, "must hold"},
		{"username alone", map[string]string{"username": "u"}, pkgrepo.Auth{}, "must hold"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "git"}, Data: map[string][]byte{}}
			for k, v := range tc.data {
				s.Data[k] = []byte(v)
			}
			got, err := FromSecret(s)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.err != "" && (err == nil || !errors.Is(err, ErrSecret) || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error = %v, want ErrSecret saying %q", err, tc.err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestScope(t *testing.T) {
	repo := &v1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "catalog"}, Spec: v1alpha1.RepositorySpec{Git: &v1alpha1.GitRepository{}}}
	if got := Scope(repo); got != "team-a/" {
		t.Errorf("Scope without a Secret = %q", got)
	}
	repo.Spec.Git.SecretRef = &v1alpha1.LocalObjectReference{Name: "git"}
	if got := Scope(repo); got != "team-a/git" {
		t.Errorf("Scope with a Secret = %q", got)
	}
}

func TestReason(t *testing.T) {
	type result struct {
		Reason  string
		Stalled bool
	}
	for err, want := range map[error]result{
		fmt.Errorf("x: %w", pkgrepo.ErrLocalRepository):      {"LocalRepositoryRefused", true},
		fmt.Errorf("x: %w", pkgrepo.ErrHostKeyUnknown):       {"HostKeyUnknown", true},
		fmt.Errorf("x: %w", pkgrepo.ErrHostKeyMismatch):      {"HostKeyMismatch", true},
		fmt.Errorf("x: %w", pkgrepo.ErrCertificateUntrusted): {"CertificateUntrusted", true},
		fmt.Errorf("x: %w", pkgrepo.ErrCredentials):          {"SecretInvalid", true},
		fmt.Errorf("x: %w", ErrSecret):                       {"SecretInvalid", true},
		fmt.Errorf("x: %w", pkgrepo.ErrUnreachable):          {"RepositoryUnreachable", false},
		fmt.Errorf("x: %w", pkgrepo.ErrAnswerTooLarge):       {"RepositoryTooLarge", true},
	} {
		reason, stalled := Reason(err)
		if diff := cmp.Diff(want, result{reason, stalled}); diff != "" {
			t.Errorf("Reason(%v) (-want +got)\n%s", err, diff)
		}
	}
}
