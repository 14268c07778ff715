package gittest

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// EndlessAdvertisement makes a server answer git-upload-pack of one repository (over http, its
// info/refs; over ssh, the session) while On is true with a ref advertisement that never ends (a
// new tag per line), as a hostile server could: until the client hangs up, or EndlessMaxBytes, so
// a client that never does fails its test instead of hanging it.
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
			w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
			e.serve(w, pkt("# service=git-upload-pack\n")+"0000")
		})
	}), e
}

// EndlessAdvertisement makes git-upload-pack sessions for repository name answer with an endless
// advertisement while the returned EndlessAdvertisement's On is true.
func (s *SSHServer) EndlessAdvertisement(name string) *EndlessAdvertisement {
	e := &EndlessAdvertisement{ended: make(chan struct{})}
	s.endless.Store(&endlessFor{repo: name + ".git", e: e})
	return e
}

type endlessFor struct {
	repo string
	e    *EndlessAdvertisement
}

func pkt(s string) string { return fmt.Sprintf("%04x%s", len(s)+4, s) }

// serve writes head, then the advertisement without end.
func (e *EndlessAdvertisement) serve(w io.Writer, head string) {
	defer e.once.Do(func() { close(e.ended) })
	const hash = "1111111111111111111111111111111111111111"
	head += pkt(hash + " refs/heads/main\x00ofs-delta side-band-64k\n")
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
