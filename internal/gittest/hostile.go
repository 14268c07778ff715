package gittest

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// EndlessAdvertisement makes a Server answer info/refs of one repository, while On is true, with
// a ref advertisement that never ends (a new tag per line), as a hostile server could: until the
// client hangs up, or MaxBytes, so a client that never does fails its test instead of hanging it.
type EndlessAdvertisement struct {
	On atomic.Bool

	written atomic.Int64
	hungUp  atomic.Bool
	once    sync.Once
	ended   chan struct{}
}

// EndlessMaxBytes is as much as an EndlessAdvertisement sends before it gives up on the client.
const EndlessMaxBytes = 1 << 30

// WithEndlessAdvertisement returns the Option that serves e for repository name (served as
// usual while e.On is false).
func WithEndlessAdvertisement(name string) (Option, *EndlessAdvertisement) {
	e := &EndlessAdvertisement{ended: make(chan struct{})}
	return WithMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !e.On.Load() || r.Method != http.MethodGet || r.URL.Path != "/"+name+".git/info/refs" {
				next.ServeHTTP(w, r)
				return
			}
			defer e.once.Do(func() { close(e.ended) })
			e.serve(w)
		})
	}), e
}

func (e *EndlessAdvertisement) serve(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
	const hash = "1111111111111111111111111111111111111111"
	pkt := func(s string) string { return fmt.Sprintf("%04x%s", len(s)+4, s) }
	head := pkt("# service=git-upload-pack\n") + "0000" + pkt(hash+" refs/heads/main\x00ofs-delta side-band-64k\n")
	if _, err := w.Write([]byte(head)); err != nil {
		e.hungUp.Store(true)
		return
	}
	var buf strings.Builder
	for i := 0; e.written.Load() < EndlessMaxBytes; i++ {
		buf.Reset()
		for j := range 1000 {
			buf.WriteString(pkt(fmt.Sprintf("%s refs/tags/t%d-%d\n", hash, i, j)))
		}
		n, err := w.Write([]byte(buf.String()))
		e.written.Add(int64(n))
		if err != nil {
			e.hungUp.Store(true)
			return
		}
	}
}

// Ended is closed when the first endless answer ended.
func (e *EndlessAdvertisement) Ended() <-chan struct{} { return e.ended }

// HungUp tells whether the client hung up on the first endless answer (rather than reading all
// EndlessMaxBytes), and how many bytes it was sent.
func (e *EndlessAdvertisement) HungUp() (bool, int64) { return e.hungUp.Load(), e.written.Load() }
