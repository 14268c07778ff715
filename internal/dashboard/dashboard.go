// Package dashboard serves flotilla's read-only web dashboard: one embedded page (HTML, CSS and
// JavaScript files, nothing fetched from elsewhere) and a small JSON API over fleetstatus.Fleet,
// the model `flotilla status` prints. It only lists flotilla's four fleet kinds (the RBAC of
// `flotilla status`), never reads a Secret, and answers GET and HEAD only.
package dashboard

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/internal/fleetstatus"
)

//go:embed web
var web embed.FS

// Options configure a dashboard.
type Options struct {
	// Namespace limits what the dashboard reads ("" for every namespace the reader sees).
	Namespace string
	// Interval is how often the page asks for fresh data (default 5s).
	Interval time.Duration
	// Hosts, when set, are the only host names a request may name (its Host header, without
	// the port): a dashboard on a loopback address answers no other name, so a web page that
	// rebinds its own name to 127.0.0.1 cannot read it through the browser.
	Hosts []string
}

// DefaultInterval is how often the page refreshes by default.
const DefaultInterval = 5 * time.Second

// LoopbackHosts are the names of a dashboard bound to a loopback address.
var LoopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// New serves the dashboard of the fleet r lists: a controller-runtime cache (the controller's, or
// one the CLI starts) or a client.
func New(r client.Reader, o Options) http.Handler {
	read := func(ctx context.Context) (fleetstatus.Snapshot, error) {
		return fleetstatus.Read(ctx, r, o.Namespace, client.UnsafeDisableDeepCopy)
	}
	return newHandler(read, o)
}

// buildEvery bounds how often the model is rebuilt: building a fleet of 1,000 clusters × 10
// packages takes tens of milliseconds, and every open page asks every few seconds.
const buildEvery = time.Second

type handler struct {
	read  func(context.Context) (fleetstatus.Snapshot, error)
	opts  Options
	mux   *http.ServeMux
	mu    sync.Mutex
	built time.Time
	fleet fleetstatus.Fleet
}

func newHandler(read func(context.Context) (fleetstatus.Snapshot, error), o Options) *handler {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	h := &handler{read: read, opts: o, mux: http.NewServeMux()}
	static, err := fs.Sub(web, "web")
	if err != nil {
		panic(err) // the embedded directory is part of the binary
	}
	h.mux.Handle("GET /{$}", file(static, "index.html", "text/html; charset=utf-8"))
	h.mux.Handle("GET /app.js", file(static, "app.js", "text/javascript; charset=utf-8"))
	h.mux.Handle("GET /app.css", file(static, "app.css", "text/css; charset=utf-8"))
	h.mux.Handle("GET /favicon.svg", file(static, "favicon.svg", "image/svg+xml"))
	h.mux.HandleFunc("GET /api/config", h.api(func(*http.Request, fleetstatus.Fleet) (any, error) {
		return map[string]any{"namespace": o.Namespace, "intervalSeconds": o.Interval.Seconds()}, nil
	}))
	h.mux.HandleFunc("GET /api/fleet", h.api(fleetPage))
	h.mux.HandleFunc("GET /api/clusters/{namespace}/{name}", h.api(clusterPage))
	h.mux.HandleFunc("GET /api/sets", h.api(setsPage))
	h.mux.HandleFunc("GET /api/packages", h.api(packagesPage))
	h.mux.HandleFunc("GET /api/packages/{name...}", h.api(packagePage))
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	// Everything the page loads is its own: no inline script or style, no other origin.
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		http.Error(w, "the dashboard is read-only: GET and HEAD only", http.StatusMethodNotAllowed)
		return
	}
	if !h.hostAllowed(r.Host) {
		http.Error(w, "unknown host name: open the dashboard at the address flotilla printed", http.StatusMisdirectedRequest)
		return
	}
	h.mux.ServeHTTP(w, r)
}

func (h *handler) hostAllowed(hostport string) bool {
	if len(h.opts.Hosts) == 0 {
		return true
	}
	host := hostport
	if hh, _, err := net.SplitHostPort(hostport); err == nil {
		host = hh
	}
	host = strings.Trim(host, "[]")
	for _, allowed := range h.opts.Hosts {
		if strings.EqualFold(host, allowed) {
			return true
		}
	}
	return false
}

// model is the fleet, rebuilt at most every buildEvery.
func (h *handler) model(ctx context.Context) (fleetstatus.Fleet, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.built.IsZero() && time.Since(h.built) < buildEvery {
		return h.fleet, nil
	}
	s, err := h.read(ctx)
	if err != nil {
		return fleetstatus.Fleet{}, err
	}
	h.fleet, h.built = fleetstatus.Build(s), time.Now()
	return h.fleet, nil
}

// api serves one JSON view of the model, with an ETag: a page polling an unchanged view gets
// 304 Not Modified and redraws nothing.
func (h *handler) api(view func(*http.Request, fleetstatus.Fleet) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		f, err := h.model(r.Context())
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, "read the fleet: "+err.Error())
			return
		}
		v, err := view(r, f)
		if err != nil {
			writeError(w, statusOf(err), err.Error())
			return
		}
		var b bytes.Buffer
		if err := json.NewEncoder(&b).Encode(v); err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		sum := sha256.Sum256(b.Bytes())
		etag := `"` + hex.EncodeToString(sum[:12]) + `"`
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b.Bytes())
	}
}

// httpError is an error with the status it answers.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func statusOf(err error) int {
	var he *httpError
	if errors.As(err, &he) {
		return he.code
	}
	return http.StatusInternalServerError
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

func file(static fs.FS, name, contentType string) http.Handler {
	b, err := fs.ReadFile(static, name)
	if err != nil {
		panic(err) // embedded
	}
	sum := sha256.Sum256(b)
	etag := `"` + hex.EncodeToString(sum[:12]) + `"`
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		_, _ = w.Write(b)
	})
}
