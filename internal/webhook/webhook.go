// Package webhook receives push events from git servers: a POST to /hook/NAMESPACE/NAME whose
// signature verifies with the token of the Repository's spec.webhook.secretRef marks the
// Repository (annotation flotilla.dev/refresh-requested-at), and the Repository reconciler fetches
// it at once. Nothing in the payload is trusted beyond "this repository changed": the handler
// never reads refs or URLs from it, so a forged or replayed event can at most cause one fetch.
package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// MaxBody bounds a payload: push events are a few KiB to a few hundred.
const MaxBody = 1 << 20

// SecretKey is the key of the webhook Secret that holds the token.
const SecretKey = "token"

// TokenTTL is how long a webhook Secret's token, once read, is used before it is read again: a
// request needs the token before it can tell a forged signature from a good one, so without it
// anyone who reaches the endpoint could make the controller read a Secret from the API server
// once per request. A rotated token takes effect within TokenTTL.
const TokenTTL = 30 * time.Second

// refusalLogEvery is the most often a refused event of one repository is logged.
const refusalLogEvery = time.Minute

// Handler serves /hook/NAMESPACE/NAME. It patches Repositories (the annotation) and reads Secrets:
// the manager role grants both (see the Repository reconciler).
type Handler struct {
	// Client reads Repositories and patches their annotation.
	Client client.Client
	// Secrets reads the webhook Secrets (uncached, as the git credentials), at most once per
	// Secret per TokenTTL.
	Secrets client.Reader
	Now     func() time.Time

	init    sync.Once
	reads   singleflight.Group // one read of a Secret at a time, however many posts wait for it
	tokens  *lru.Cache         // Secret key -> tokenRead
	mu      sync.Mutex         // guards refused's entries
	refused *lru.Cache         // Repository key -> refusals
}

// tokenRead is a read of a webhook Secret: its token, or why there is none.
type tokenRead struct {
	token []byte
	err   error
	at    time.Time
}

// refusals counts a repository's refused events since the last one logged.
type refusals struct {
	logged  time.Time
	dropped int
}

func (h *Handler) setup() {
	h.init.Do(func() {
		h.tokens = lru.New(4096)
		h.refused = lru.New(4096)
	})
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// Errors a request is refused with; the response says no more than the status.
var (
	errUnsigned = errors.New("no signature header (X-Hub-Signature-256, X-Gitea-Signature, X-Gitlab-Token or X-Signature-256)")
	errForged   = errors.New("signature does not verify")
)

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST a push event", http.StatusMethodNotAllowed)
		return
	}
	parts := strings.Split(strings.Trim(strings.TrimPrefix(r.URL.Path, "/hook/"), "/"), "/")
	if !strings.HasPrefix(r.URL.Path, "/hook/") || len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		http.NotFound(w, r)
		return
	}
	key := types.NamespacedName{Namespace: parts[0], Name: parts[1]}
	h.setup()
	ctx := r.Context()
	logger := log.FromContext(ctx).WithValues("repository", key.String())
	repo, token, err := h.lookup(ctx, key)
	if err != nil {
		// One answer for "no such repository" and "no webhook": the endpoint does not tell
		// who has which repositories. Logged at debug level: any name can be asked for.
		logger.V(1).Info("webhook refused", "reason", err.Error())
		http.NotFound(w, r)
		return
	}
	if !signed(r.Header) {
		h.logRefusal(logger, key, errUnsigned)
		http.Error(w, "signature missing or invalid", http.StatusUnauthorized)
		return
	}
	// The payload is signed, never kept: it streams through the HMAC in 4 KiB reads, so a post
	// holds its connection and that much however slowly it comes (the server's ReadTimeout ends
	// it).
	mac := hmac.New(sha256.New, token)
	if n, err := io.CopyBuffer(mac, io.LimitReader(r.Body, MaxBody+1), make([]byte, 4<<10)); err != nil || n > MaxBody {
		http.Error(w, "payload too large or unreadable", http.StatusRequestEntityTooLarge)
		return
	}
	if err := check(r.Header, mac.Sum(nil), token); err != nil {
		h.logRefusal(logger, key, err)
		http.Error(w, "signature missing or invalid", http.StatusUnauthorized)
		return
	}
	if event := eventOf(r.Header); event != "" && event != "push" && event != "Push Hook" && event != "Tag Push Hook" && event != "ping" && event != "repo:push" {
		w.WriteHeader(http.StatusNoContent) // verified, but not about new commits or tags
		return
	}
	if err := h.request(ctx, repo); err != nil {
		logger.Error(err, "webhook: marking the repository for a refresh failed")
		http.Error(w, "could not request a refresh; it will be fetched at its interval", http.StatusServiceUnavailable)
		return
	}
	logger.Info("webhook: refresh requested")
	w.WriteHeader(http.StatusAccepted)
}

// logRefusal logs a refused event of a repository that has a webhook, at most once per
// refusalLogEvery per repository, with how many were refused since: a flood of forged events
// costs no more log lines than one.
func (h *Handler) logRefusal(logger interface{ Info(string, ...any) }, key types.NamespacedName, err error) {
	now := h.now()
	h.mu.Lock()
	var rs refusals
	if v, ok := h.refused.Get(key); ok {
		rs = v.(refusals)
	}
	if !rs.logged.IsZero() && now.Sub(rs.logged) < refusalLogEvery {
		rs.dropped++
		h.refused.Add(key, rs)
		h.mu.Unlock()
		return
	}
	h.refused.Add(key, refusals{logged: now})
	h.mu.Unlock()
	logger.Info("webhook refused", "reason", err.Error(), "refusedSinceLastLine", rs.dropped)
}

// lookup reads the repository (from the cache) and its webhook token (token).
func (h *Handler) lookup(ctx context.Context, key types.NamespacedName) (*v1alpha1.Repository, []byte, error) {
	repo := &v1alpha1.Repository{}
	if err := h.Client.Get(ctx, key, repo); err != nil {
		return nil, nil, err
	}
	if repo.Spec.Webhook == nil {
		return nil, nil, fmt.Errorf("the repository has no spec.webhook")
	}
	token, err := h.token(ctx, types.NamespacedName{Namespace: key.Namespace, Name: repo.Spec.Webhook.SecretRef.Name})
	if err != nil {
		return nil, nil, err
	}
	return repo, token, nil
}

// token returns the token of the webhook Secret key, read at most once per TokenTTL (a Secret
// that does not exist, or has no token, too). A read that failed otherwise (the API server) is
// not kept.
func (h *Handler) token(ctx context.Context, key types.NamespacedName) ([]byte, error) {
	cached := func() (tokenRead, bool) {
		if v, ok := h.tokens.Get(key); ok {
			if t := v.(tokenRead); h.now().Sub(t.at) < TokenTTL {
				return t, true
			}
		}
		return tokenRead{}, false
	}
	if t, ok := cached(); ok {
		return t.token, t.err
	}
	v, err, _ := h.reads.Do(key.String(), func() (any, error) {
		if t, ok := cached(); ok { // read while this post waited
			return t, nil
		}
		secret := &corev1.Secret{}
		t := tokenRead{at: h.now()}
		switch err := h.Secrets.Get(ctx, key, secret); {
		case apierrors.IsNotFound(err):
			t.err = fmt.Errorf("its webhook Secret %s does not exist", key.Name)
		case err != nil:
			return nil, err
		case len(secret.Data[SecretKey]) == 0:
			t.err = fmt.Errorf("its webhook Secret %s has no key %s", secret.Name, SecretKey)
		default:
			t.token = secret.Data[SecretKey]
		}
		h.tokens.Add(key, t)
		return t, nil
	})
	if err != nil {
		return nil, err
	}
	t := v.(tokenRead)
	return t.token, t.err
}

// request marks repo for a refresh now.
func (h *Handler) request(ctx context.Context, repo *v1alpha1.Repository) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.AnnotationRefreshRequested, h.now().UTC().Format(time.RFC3339Nano))
	return h.Client.Patch(ctx, repo, client.RawPatch(types.MergePatchType, []byte(patch)))
}

// Verify checks body's signature with token, in the spelling of the git server that sent it.
func Verify(header http.Header, body, token []byte) error {
	mac := hmac.New(sha256.New, token)
	mac.Write(body)
	return check(header, mac.Sum(nil), token)
}

// check checks the signature header says want, the body's HMAC with token (GitLab sends the
// token itself).
func check(header http.Header, want, token []byte) error {
	hexSig := func(v string) error {
		got, err := hex.DecodeString(strings.TrimSpace(v))
		if err != nil || !hmac.Equal(got, want) {
			return errForged
		}
		return nil
	}
	switch {
	case header.Get("X-Hub-Signature-256") != "": // GitHub, and Gitea/Forgejo too
		v, ok := strings.CutPrefix(header.Get("X-Hub-Signature-256"), "sha256=")
		if !ok {
			return errForged
		}
		return hexSig(v)
	case header.Get("X-Signature-256") != "": // generic
		v, ok := strings.CutPrefix(header.Get("X-Signature-256"), "sha256=")
		if !ok {
			return errForged
		}
		return hexSig(v)
	case header.Get("X-Gitea-Signature") != "":
		return hexSig(header.Get("X-Gitea-Signature"))
	case header.Get("X-Gitlab-Token") != "":
		// GitLab sends the secret itself (over TLS), not a signature.
		if subtle.ConstantTimeCompare([]byte(header.Get("X-Gitlab-Token")), token) != 1 {
			return errForged
		}
		return nil
	}
	return errUnsigned
}

// signed tells whether header carries a signature (or GitLab's token) at all.
func signed(header http.Header) bool {
	for _, k := range []string{"X-Hub-Signature-256", "X-Signature-256", "X-Gitea-Signature", "X-Gitlab-Token"} {
		if header.Get(k) != "" {
			return true
		}
	}
	return false
}

// eventOf is the event type the git server names ("" when it names none).
func eventOf(h http.Header) string {
	for _, k := range []string{"X-GitHub-Event", "X-Gitea-Event", "X-Gitlab-Event", "X-Event-Key"} {
		if v := h.Get(k); v != "" {
			return v
		}
	}
	return ""
}

// server runs the receiver on every replica (a push may reach any; the annotation it writes
// reaches the leader).
type server struct {
	addr string
	h    http.Handler
}

// Server is a manager runnable serving h on addr until the manager stops.
func Server(addr string, h *Handler) manager.Runnable {
	mux := http.NewServeMux()
	mux.Handle("/hook/", h)
	return &server{addr: addr, h: mux}
}

func (s *server) NeedLeaderElection() bool { return false }

func (s *server) Start(ctx context.Context) error {
	srv := &http.Server{Addr: s.addr, Handler: s.h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, MaxHeaderBytes: 64 << 10}
	errs := make(chan error, 1)
	go func() { errs <- srv.ListenAndServe() }()
	select {
	case err := <-errs:
		return fmt.Errorf("webhook receiver on %s: %w", s.addr, err)
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(shutdown)
	}
}
