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
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// MaxBody bounds a payload: push events are a few KiB to a few hundred.
const MaxBody = 1 << 20

// SecretKey is the key of the webhook Secret that holds the token.
const SecretKey = "token"

// Handler serves /hook/NAMESPACE/NAME. It patches Repositories (the annotation) and reads Secrets:
// the manager role grants both (see the Repository reconciler).
type Handler struct {
	// Client reads Repositories and patches their annotation.
	Client client.Client
	// Secrets reads the webhook Secrets (uncached, as the git credentials).
	Secrets client.Reader
	Now     func() time.Time
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
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil || len(body) > MaxBody {
		http.Error(w, "payload too large or unreadable", http.StatusRequestEntityTooLarge)
		return
	}
	ctx := r.Context()
	logger := log.FromContext(ctx).WithValues("repository", key.String())
	repo, token, err := h.lookup(ctx, key)
	if err != nil {
		// One answer for "no such repository" and "no webhook": the endpoint does not tell
		// who has which repositories.
		logger.Info("webhook refused", "reason", err.Error())
		http.NotFound(w, r)
		return
	}
	if err := Verify(r.Header, body, token); err != nil {
		logger.Info("webhook refused", "reason", err.Error())
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

// lookup reads the repository and its webhook token.
func (h *Handler) lookup(ctx context.Context, key types.NamespacedName) (*v1alpha1.Repository, []byte, error) {
	repo := &v1alpha1.Repository{}
	if err := h.Client.Get(ctx, key, repo); err != nil {
		return nil, nil, err
	}
	if repo.Spec.Webhook == nil {
		return nil, nil, fmt.Errorf("the repository has no spec.webhook")
	}
	secret := &corev1.Secret{}
	if err := h.Secrets.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: repo.Spec.Webhook.SecretRef.Name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, fmt.Errorf("its webhook Secret %s does not exist", repo.Spec.Webhook.SecretRef.Name)
		}
		return nil, nil, err
	}
	token := secret.Data[SecretKey]
	if len(token) == 0 {
		return nil, nil, fmt.Errorf("its webhook Secret %s has no key %s", secret.Name, SecretKey)
	}
	return repo, token, nil
}

// request marks repo for a refresh now.
func (h *Handler) request(ctx context.Context, repo *v1alpha1.Repository) error {
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.AnnotationRefreshRequested, now().UTC().Format(time.RFC3339Nano))
	return h.Client.Patch(ctx, repo, client.RawPatch(types.MergePatchType, []byte(patch)))
}

// Verify checks body's signature with token, in the spelling of the git server that sent it.
func Verify(header http.Header, body, token []byte) error {
	mac := hmac.New(sha256.New, token)
	mac.Write(body)
	want := mac.Sum(nil)
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
	srv := &http.Server{Addr: s.addr, Handler: s.h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second}
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
