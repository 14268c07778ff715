package ocipkg

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/flotilla-dev/flotilla/internal/ocitest"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// A registry that lists tags without end, in one page or in pages without end (empty ones too),
// is cut: Resolve
// of latest fails with ErrAnswerTooLarge and says which bound, and an exact revision, which
// lists nothing, still resolves.
func TestEndlessTagListIsCut(t *testing.T) {
	// pagesOf answers with pages of n new tags each, each page naming a next one.
	pagesOf := func(n int) func(w http.ResponseWriter, r *http.Request, sent *atomic.Int64) {
		return func(w http.ResponseWriter, r *http.Request, sent *atomic.Int64) {
			page := sent.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Link", fmt.Sprintf(`<%s?n=1000&last=p%d>; rel="next"`, r.URL.Path, page))
			tags := make([]string, n)
			for i := range tags {
				tags[i] = fmt.Sprintf(`"t%d-%d"`, page, i)
			}
			fmt.Fprintf(w, `{"name":"x","tags":[%s]}`, strings.Join(tags, ","))
		}
	}
	for name, tc := range map[string]struct {
		serve func(w http.ResponseWriter, r *http.Request, sent *atomic.Int64)
		want  string
	}{
		"one endless page": {
			serve: func(w http.ResponseWriter, _ *http.Request, sent *atomic.Int64) {
				w.Header().Set("Content-Type", "application/json")
				if _, err := fmt.Fprint(w, `{"name":"team/web","tags":["v1"`); err != nil {
					return
				}
				chunk := strings.Repeat(`,"v1"`, 10000)
				for sent.Load() < 1<<30 {
					n, err := fmt.Fprint(w, chunk)
					sent.Add(int64(n))
					if err != nil {
						return
					}
				}
			},
			want: "the registry's answer was larger than 8 MiB",
		},
		"empty pages without end": {serve: pagesOf(0), want: "the registry lists tags in more than 1000 pages"},
		"pages without end":       {serve: pagesOf(1000), want: "the registry lists more than 100000 tags"},
	} {
		// A repository may have a "blobs" component of its own: its answers are no blobs.
		for _, prefix := range []string{"team", "team/blobs"} {
			t.Run(name+" in "+prefix, func(t *testing.T) {
				var on atomic.Bool
				var sent atomic.Int64
				host := ocitest.NewRegistry(t, func(next http.Handler) http.Handler {
					return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						if on.Load() && strings.HasSuffix(r.URL.Path, "/tags/list") {
							tc.serve(w, r, &sent)
							return
						}
						next.ServeHTTP(w, r)
					})
				})
				opts := Options{Insecure: true}
				pushed := mustPush(t, host+"/"+prefix+"/web:v1", pkgFiles("1"), opts)
				on.Store(true)
				ctx := context.Background()
				_, err := Resolve(ctx, host+"/"+prefix, "web", "latest", opts)
				if !errors.Is(err, pkgrepo.ErrAnswerTooLarge) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Resolve latest = %v, want ErrAnswerTooLarge saying %q", err, tc.want)
				}
				if name == "one endless page" && sent.Load() >= 1<<30 {
					t.Errorf("the client read all %d bytes", sent.Load())
				}
				rev, err := Resolve(ctx, host+"/"+prefix, "web", "v1", opts)
				if err != nil || rev.Digest != pushed.Digest {
					t.Fatalf("Resolve v1 = %+v, %v; want %s", rev, err, pushed.Digest)
				}
			})
		}
	}
}

// A registry's error page (a 403 with a long HTML body, as a proxy or some other service gives)
// is read up to maxErrorBytes: its status still tells what failed (the registry library
// fails with "body exceeds 65536 byte limit", and no status, past its own bound of 64 KiB), and
// the message, which reaches a tenant's status, does not copy the page. A blob's error page too.
// (The error answers only GETs: an exact revision resolves with a HEAD, whose answer has no body.)
func TestErrorPageIsCut(t *testing.T) {
	for _, size := range []int{60 << 10, 1 << 20} {
		for _, what := range []string{"/tags/list", "/manifests/", "/blobs/"} {
			t.Run(fmt.Sprintf("%s %d bytes", strings.Trim(what, "/"), size), func(t *testing.T) {
				var on atomic.Bool
				host := ocitest.NewRegistry(t, func(next http.Handler) http.Handler {
					return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						if on.Load() && r.Method == http.MethodGet && strings.Contains(r.URL.Path, what) {
							w.Header().Set("Content-Type", "text/html")
							w.WriteHeader(http.StatusForbidden)
							_, _ = fmt.Fprint(w, "<html>the page of some other service"+strings.Repeat(" and more", size/9))
							return
						}
						next.ServeHTTP(w, r)
					})
				})
				opts := Options{Insecure: true}
				pushed := mustPush(t, host+"/team/web:v1", pkgFiles("1"), opts)
				on.Store(true)
				var err error
				if what == "/tags/list" {
					_, err = Resolve(context.Background(), host+"/team", "web", "latest", opts)
				} else {
					_, err = Fetch(context.Background(), host+"/team/web", pushed.Digest, opts)
				}
				if !errors.Is(err, pkgrepo.ErrAuthentication) || !strings.Contains(err.Error(), "403") ||
					!strings.Contains(err.Error(), "the page of some other service") || len(err.Error()) > 5<<10 {
					t.Fatalf("error (%d bytes) = %.300q…; want ErrAuthentication, saying 403 and the page's start, under 5 KiB", len(err.Error()), err)
				}
			})
		}
	}
}

// A registry's JSON error with long details keeps its code: a 400 that says DENIED is an
// authentication failure (cut at a git server's 1 KiB, the JSON broke and the code was lost).
func TestErrorCodeWithLongDetails(t *testing.T) {
	var on atomic.Bool
	host := ocitest.NewRegistry(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if on.Load() && r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/manifests/") {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = fmt.Fprintf(w, `{"errors":[{"code":"DENIED","message":"requested access to the resource is denied","detail":%q}]}`, strings.Repeat("scope ", 400))
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	opts := Options{Insecure: true}
	pushed := mustPush(t, host+"/team/web:v1", pkgFiles("1"), opts)
	on.Store(true)
	_, err := Fetch(context.Background(), host+"/team/web", pushed.Digest, opts)
	if !errors.Is(err, pkgrepo.ErrAuthentication) || !strings.Contains(err.Error(), "DENIED") {
		t.Fatalf("Fetch = %.500v; want ErrAuthentication, saying DENIED", err)
	}
}
