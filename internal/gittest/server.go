// Package gittest runs real git for tests: a smart-HTTP(S) server (git
// http-backend behind net/http/cgi, internal/githttp), an ssh server running git-upload-pack and
// git-receive-pack, and helpers that seed and inspect bare
// repositories with the git CLI.
//
// Tests talk to the same git a user's server runs instead of a mock, so what
// passes here passes against GitHub, Gitea or Porch's git.
package gittest

import (
	"crypto/subtle"
	"crypto/tls"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/flotilla-dev/flotilla/internal/githttp"
)

// Server is a smart-HTTP git server whose repositories live in a temporary
// directory. Every repository accepts pushes (githttp).
type Server struct {
	// URL is the base URL, e.g. http://127.0.0.1:PORT; a repository's clone
	// URL is URL + "/" + name + ".git".
	URL string
	// CACert is, for a server started WithTLS, the PEM certificate that
	// signs its TLS certificate: what a client must trust (ca.crt).
	CACert []byte

	root  string
	conns atomic.Int64
	user  string
	pass  string
	tls   bool
	wrap  []func(http.Handler) http.Handler
}

// Option configures a Server.
type Option func(*Server)

// WithBasicAuth makes the server answer 401 with a WWW-Authenticate header to
// every request that does not carry exactly these basic-auth credentials.
func WithBasicAuth(user, password string) Option {
	return func(s *Server) { s.user, s.pass = user, password }
}

// WithTLS serves https with a certificate from a private CA of its own (CACert) instead of
// http. Every server gets a new CA: one server's CACert does not verify another.
func WithTLS() Option {
	return func(s *Server) { s.tls = true }
}

// WithMiddleware wraps the git handler (inside basic auth), so a test can
// act between a client's requests, e.g. push a competing commit just before
// a receive-pack request is served to provoke a lost race.
func WithMiddleware(mw func(http.Handler) http.Handler) Option {
	return func(s *Server) { s.wrap = append(s.wrap, mw) }
}

// WithRedirect serves repository to in place of repository from while *when is true, as a server
// being restored, or a proxy that sends requests to a fresh repository, would: a test makes a
// repository look emptied (to an empty one) and back.
func WithRedirect(when *atomic.Bool, from, to string) Option {
	return WithMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if when.Load() {
				r.URL.Path = strings.Replace(r.URL.Path, "/"+from+".git/", "/"+to+".git/", 1)
			}
			next.ServeHTTP(w, r)
		})
	})
}

// NewServer starts a server rooted in t.TempDir(); t.Cleanup stops it.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{root: t.TempDir()}
	for _, o := range opts {
		o(s)
	}
	// Hook output and backend errors show up with the test's log.
	h, err := githttp.NewHandler(s.root, logWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	// Every server has a path of its own: a port the kernel hands out again to a later test's
	// server must not make its repositories the same URL as an earlier test's (flotilla compares
	// repository locations across namespaces: one writer per branch and directory).
	prefix := fmt.Sprintf("/srv%d", serverCount.Add(1))
	var handler http.Handler = h
	for _, mw := range s.wrap {
		handler = mw(handler)
	}
	// Middlewares see paths as the repositories' (/name.git/...), without the server's prefix.
	srv := httptest.NewUnstartedServer(http.StripPrefix(prefix, s.authenticate(handler)))
	srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			s.conns.Add(1)
		}
	}
	if s.tls {
		cert, ca := newTLSCertificate(t)
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		// Handshakes refused by a client without the CA are expected: log them with the test.
		srv.Config.ErrorLog = log.New(logWriter{t}, "https server: ", 0)
		s.CACert = ca
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	s.URL = srv.URL + prefix
	return s
}

// Connections is how many connections clients have opened to the server so far.
func (s *Server) Connections() int64 {
	return s.conns.Load()
}

// serverCount numbers the servers of a test binary, for their paths.
var serverCount atomic.Int64

// authenticate guards next with basic auth when the server was configured
// with credentials.
func (s *Server) authenticate(next http.Handler) http.Handler {
	if s.user == "" && s.pass == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(s.user)) != 1 ||
			subtle.ConstantTimeCompare([]byte(p), []byte(s.pass)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="gittest"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// CreateRepo creates the empty bare repository "<name>.git" (default branch
// main, push over HTTP allowed) and returns its clone URL.
func (s *Server) CreateRepo(t testing.TB, name string) string {
	t.Helper()
	dir := s.Dir(name)
	git(t, "", "init", "-q", "--bare", "-b", "main", dir)
	return s.URL + "/" + name + ".git"
}

// Dir is the path of the bare repository on disk, so a test can also reach
// it through a file:// URL or the helpers in this package.
func (s *Server) Dir(name string) string {
	return filepath.Join(s.root, name+".git")
}

// logWriter sends what the servers and git print to stderr to the test log.
type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Logf("gittest: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
