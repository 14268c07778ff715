// Package kubetest holds helpers for tests against a real API server.
package kubetest

import (
	"context"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SecretReads is a client.Reader that counts the Secrets read through it (N): tests of what reads
// Secrets only when it must (the API server has no cache in front of Secrets).
type SecretReads struct {
	client.Reader
	N atomic.Int32
}

func (r *SecretReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Secret); ok {
		r.N.Add(1)
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}
