// Package ocitest serves a real OCI registry (go-containerregistry's, in memory) for tests, the way
// gittest serves git.
package ocitest

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
)

// NewRegistry serves an in-memory registry over plain http until the test ends and returns its
// host (host:port, as OCI references name it). wrap, when not nil, goes in front of the registry
// (authentication, faults).
func NewRegistry(t testing.TB, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	h := Handler()
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// Handler is a new in-memory registry, quiet.
func Handler() http.Handler {
	return registry.New(registry.Logger(log.New(io.Discard, "", 0)))
}
