package controller_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/kubetest"
	"github.com/flotilla-dev/flotilla/internal/webhook"
)

// A push event signed with the Repository's webhook token makes the controller fetch it at once,
// although its interval is an hour; unsigned and forged events, and events for a repository
// without a webhook, change nothing.
func TestWebhookRefreshesAtOnce(t *testing.T) {
	f := newFixture(t)
	g := f.g
	f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: f.ns}, Data: map[string][]byte{"token": []byte("s3cret")}})
	hourly := func(r *v1alpha1.Repository) {
		r.Spec.Interval = &metav1.Duration{Duration: time.Hour}
		r.Spec.Webhook = &v1alpha1.RepositoryWebhook{SecretRef: v1alpha1.LocalObjectReference{Name: "hook"}}
	}
	repo := f.repository("catalog", hourly)
	f.repository("edge01", func(r *v1alpha1.Repository) { r.Spec.Interval = &metav1.Duration{Duration: time.Hour} })
	f.condition(repo, func() []metav1.Condition { return repo.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "Fetched")
	before := repo.Status.RefsDigest

	srv := httptest.NewServer(&webhook.Handler{Client: env.Client, Secrets: env.Client})
	defer srv.Close()
	body := []byte(`{"ref":"refs/tags/nginx-hello/v4"}`)
	post := func(path string, header map[string]string) int {
		req, err := http.NewRequest(http.MethodPost, srv.URL+path, bytes.NewReader(body))
		g.Expect(err).NotTo(HaveOccurred())
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		return resp.StatusCode
	}
	mac := hmac.New(sha256.New, []byte("s3cret"))
	mac.Write(body)
	signed := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	digest := func() string {
		g.Expect(env.Client.Get(f.ctx, f.key("catalog"), repo)).To(Succeed())
		return repo.Status.RefsDigest
	}

	f.publish("nginx-hello", 4)
	g.Expect(post("/hook/"+f.ns+"/catalog", map[string]string{"X-GitHub-Event": "push"})).To(Equal(http.StatusUnauthorized), "unsigned")
	g.Expect(post("/hook/"+f.ns+"/catalog", map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": "sha256=" + hex.EncodeToString(make([]byte, 32))})).
		To(Equal(http.StatusUnauthorized), "forged")
	g.Expect(post("/hook/"+f.ns+"/edge01", map[string]string{"X-Hub-Signature-256": signed})).To(Equal(http.StatusNotFound), "a repository without spec.webhook")
	g.Expect(post("/hook/other-namespace/catalog", map[string]string{"X-Hub-Signature-256": signed})).To(Equal(http.StatusNotFound))
	g.Consistently(digest, 3*time.Second, 500*time.Millisecond).Should(Equal(before), "nothing refused triggers a fetch")
	g.Expect(repo.Annotations).NotTo(HaveKey(v1alpha1.AnnotationRefreshRequested))

	g.Expect(post("/hook/"+f.ns+"/catalog", map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": signed})).To(Equal(http.StatusAccepted))
	g.Eventually(digest, 20*time.Second, 200*time.Millisecond).ShouldNot(Equal(before), "the signed push is fetched at once")
	g.Expect(repo.Annotations).To(HaveKey(v1alpha1.AnnotationRefreshRequested))

	// GitLab sends its token; an event that is not a push is verified and ignored.
	g.Expect(post("/hook/"+f.ns+"/catalog", map[string]string{"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": "s3cret"})).To(Equal(http.StatusAccepted))
	g.Expect(post("/hook/"+f.ns+"/catalog", map[string]string{"X-GitHub-Event": "issues", "X-Hub-Signature-256": signed})).To(Equal(http.StatusNoContent))
}

// Anyone who reaches the receiver may post to it: a flood of forged events reads the webhook
// Secret once per TokenTTL, not once per event (a rotated token takes effect after it), and posts
// whose payloads trickle in keep no one else out.
func TestWebhookFloodReadsTheSecretOnce(t *testing.T) {
	f := newFixture(t)
	g := f.g
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: f.ns}, Data: map[string][]byte{"token": []byte("s3cret")}}
	f.create(secret)
	f.repository("catalog", func(r *v1alpha1.Repository) {
		r.Spec.Interval = &metav1.Duration{Duration: time.Hour}
		r.Spec.Webhook = &v1alpha1.RepositoryWebhook{SecretRef: v1alpha1.LocalObjectReference{Name: "hook"}}
	})
	reads := &kubetest.SecretReads{Reader: env.Client}
	var mu sync.Mutex
	clock := time.Now()
	h := &webhook.Handler{Client: env.Client, Secrets: reads, Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }}
	srv := httptest.NewServer(h)
	defer srv.Close()
	body := []byte(`{"ref":"refs/heads/main"}`)
	post := func(token string, payload io.Reader) int {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/hook/"+f.ns+"/catalog", payload)
		g.Expect(err).NotTo(HaveOccurred())
		mac := hmac.New(sha256.New, []byte(token))
		mac.Write(body)
		req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
		req.Header.Set("X-GitHub-Event", "push")
		resp, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		return resp.StatusCode
	}

	// 300 forged events, 10 at a time: they wait for one read of the Secret, and then take it.
	var flood sync.WaitGroup
	var refused atomic.Int32
	for range 10 {
		flood.Add(1)
		go func() {
			defer flood.Done()
			for range 30 { // no assertions off the test's goroutine: counted, checked after
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/hook/"+f.ns+"/catalog", bytes.NewReader(body))
				req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(make([]byte, 32)))
				if resp, err := http.DefaultClient.Do(req); err == nil {
					if resp.StatusCode == http.StatusUnauthorized {
						refused.Add(1)
					}
					resp.Body.Close()
				}
			}
		}()
	}
	flood.Wait()
	g.Expect(refused.Load()).To(BeEquivalentTo(300))
	g.Expect(reads.N.Load()).To(BeEquivalentTo(1), "300 forged events, one Secret read")

	secret.Data["token"] = []byte("n3w")
	g.Expect(env.Client.Update(f.ctx, secret)).To(Succeed())
	g.Expect(post("n3w", bytes.NewReader(body))).To(Equal(http.StatusUnauthorized), "the token read before holds for TokenTTL")
	mu.Lock()
	clock = clock.Add(webhook.TokenTTL)
	mu.Unlock()
	g.Expect(post("n3w", bytes.NewReader(body))).To(Equal(http.StatusAccepted), "after TokenTTL, the rotated token")
	g.Expect(reads.N.Load()).To(BeEquivalentTo(2))

	// Posts whose payloads trickle in hold their connections, not the receiver: a signed event
	// sent meanwhile is taken at once.
	var held []*io.PipeWriter
	var wg sync.WaitGroup
	for range 32 {
		pr, pw := io.Pipe()
		held = append(held, pw)
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/hook/"+f.ns+"/catalog", pr)
			req.Header.Set("X-Hub-Signature-256", "sha256=00")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		_, _ = pw.Write([]byte("{")) // the post reaches the handler, which reads its payload
	}
	g.Expect(post("n3w", bytes.NewReader(body))).To(Equal(http.StatusAccepted), "a signed event while 32 posts trickle")
	for _, pw := range held {
		pw.Close()
	}
	wg.Wait()
}
