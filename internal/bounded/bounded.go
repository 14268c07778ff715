// Package bounded reads what comes from outside (a git server, a registry, a workload cluster's
// API server, a package's layer) up to a bound: a read past it fails, instead of going on for as
// long as the other side sends.
package bounded

import (
	"io"
	"net/http"
	"sync/atomic"
)

// Reader reads its source up to a bound. One goroutine reads; Raise may be called from another.
type Reader struct {
	r    io.Reader
	left atomic.Int64
	cut  func() error
	err  error
}

// NewReader reads r up to limit bytes. The read that goes past it returns the bytes up to the
// bound and cut's error (cut is called once, and may close r); every read after returns that
// error too. A source that ends exactly at the bound ends as it does.
func NewReader(r io.Reader, limit int64, cut func() error) *Reader {
	b := &Reader{r: r, cut: cut}
	b.left.Store(limit)
	return b
}

func (b *Reader) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if left := b.left.Load(); int64(len(p)) > left+1 {
		p = p[:left+1] // one byte more than allowed tells a source that ends here from a longer one
	}
	n, err := b.r.Read(p)
	if after := b.left.Add(-int64(n)); after < 0 {
		b.err = b.cut()
		return max(0, n+int(after)), b.err
	}
	return n, err
}

// Raise allows n bytes more.
func (b *Reader) Raise(n int64) { b.left.Add(n) }

// Body is rc read as NewReader reads it; Close closes rc.
func Body(rc io.ReadCloser, limit int64, cut func() error) io.ReadCloser {
	return struct {
		io.Reader
		io.Closer
	}{NewReader(rc, limit, cut), rc}
}

// ErrorPageBytes is as much of an answer that is not a success (a 401, a 404, a 500) as a git
// server's is read. go-git and the registry library read such a body and put it in their error,
// which reaches a status that tenants read. A git server's message is a line or two; a server
// that is none (a URL naming some other service, or a redirect to one) must not have its page
// copied there.
const ErrorPageBytes = 1 << 10

// ErrorPage reads the body of res up to limit bytes, quietly (its status is the error), when res
// is not a success, and tells whether it was not.
func ErrorPage(res *http.Response, limit int64) bool {
	if res.StatusCode >= 200 && res.StatusCode <= 299 {
		return false
	}
	res.Body = struct {
		io.Reader
		io.Closer
	}{io.LimitReader(res.Body, limit), res.Body}
	return true
}
