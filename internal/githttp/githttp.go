// Package githttp serves bare git repositories over git's smart HTTP protocol: the real
// `git http-backend` behind net/http/cgi, push enabled, counting the requests each repository
// receives. The tests' git server (internal/gittest) and the bench (internal/bench) both run it,
// so what the bench measures is what a user's git server answers.
package githttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/cgi"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Requests counts the smart-HTTP requests of one repository by kind.
type Requests struct {
	// InfoRefs is GET .../info/refs (the ref advertisement that starts every fetch and push).
	InfoRefs int
	// UploadPack is POST .../git-upload-pack (fetch), ReceivePack POST .../git-receive-pack (push).
	UploadPack, ReceivePack int
	// Other is anything else (the dumb protocol's object and pack files).
	Other int
	// Time is the wall time spent serving them, summed (requests served at once each count).
	Time time.Duration
}

// Total is every request counted.
func (r Requests) Total() int { return r.InfoRefs + r.UploadPack + r.ReceivePack + r.Other }

// Add returns r + o.
func (r Requests) Add(o Requests) Requests {
	return Requests{r.InfoRefs + o.InfoRefs, r.UploadPack + o.UploadPack, r.ReceivePack + o.ReceivePack, r.Other + o.Other, r.Time + o.Time}
}

// Sub returns r - o.
func (r Requests) Sub(o Requests) Requests {
	return Requests{r.InfoRefs - o.InfoRefs, r.UploadPack - o.UploadPack, r.ReceivePack - o.ReceivePack, r.Other - o.Other, r.Time - o.Time}
}

// Handler serves the bare repositories under a root directory: repository DIR/x/name.git is
// URL/x/name.git. Every repository accepts pushes.
type Handler struct {
	cgi *cgi.Handler

	mu       sync.Mutex
	requests map[string]Requests
}

// NewHandler serves the repositories under root; git http-backend's own errors (and hook output)
// go to stderr.
func NewHandler(root string, stderr io.Writer) (*Handler, error) {
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		return nil, fmt.Errorf("git --exec-path: %w", err)
	}
	return &Handler{
		cgi: &cgi.Handler{
			Path: filepath.Join(strings.TrimSpace(string(out)), "git-http-backend"),
			Root: "/",
			Env: []string{
				"GIT_PROJECT_ROOT=" + root,
				"GIT_HTTP_EXPORT_ALL=1",
				// Push without per-repository configuration (http.receivepack).
				"GIT_CONFIG_COUNT=1",
				"GIT_CONFIG_KEY_0=http.receivepack",
				"GIT_CONFIG_VALUE_0=true",
				// Keep the machine's own git configuration out of the server.
				"GIT_CONFIG_NOSYSTEM=1",
				"GIT_CONFIG_GLOBAL=/dev/null",
				"HOME=" + root,
			},
			Stderr: stderr,
		},
		requests: map[string]Requests{},
	}, nil
}

// ServeHTTP hands the request to git http-backend, then counts it and the time it took.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	h.cgi.ServeHTTP(w, r)
	took := time.Since(start)
	repo, kind := classify(r.URL.Path)
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.requests[repo]
	c.Time += took
	switch kind {
	case "info/refs":
		c.InfoRefs++
	case "git-upload-pack":
		c.UploadPack++
	case "git-receive-pack":
		c.ReceivePack++
	default:
		c.Other++
	}
	h.requests[repo] = c
}

// Requests returns the requests counted so far by repository: its path under the root, e.g.
// "clusters/c-00001.git".
func (h *Handler) Requests() map[string]Requests {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.requests)
}

// classify splits a request path into the repository (up to and including ".git", without the
// leading slash) and what is asked of it ("info/refs", "git-upload-pack", ...).
func classify(path string) (repo, kind string) {
	path = strings.TrimPrefix(path, "/")
	i := strings.Index(path, ".git/")
	if i < 0 {
		return path, ""
	}
	return path[:i+len(".git")], path[i+len(".git/"):]
}

// Server is a Handler listening on a loopback port.
type Server struct {
	*Handler
	// URL is http://127.0.0.1:PORT; repository DIR/x/name.git is URL + "/x/name.git".
	URL string

	srv  *http.Server
	done chan error
}

// Serve starts a server for the repositories under root on a free loopback port.
func Serve(root string, stderr io.Writer) (*Server, error) {
	h, err := NewHandler(root, stderr)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{Handler: h, URL: "http://" + ln.Addr().String(), srv: &http.Server{Handler: h, ReadHeaderTimeout: time.Minute}, done: make(chan error, 1)}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the server, waiting up to a minute for the requests in flight.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
