package remotecluster

import (
	"fmt"
	"io"
	"net/http"
)

// DefaultMaxResponseBytes bounds one answer of a workload cluster's API server, a watch's whole
// stream included (Clients.MaxResponseBytes): far above what flotilla reads (a page of 500 nodes,
// a list of sync objects, a site ConfigMap of at most 1 MiB), far below what would exhaust the
// controller's memory, which every tenant shares.
const DefaultMaxResponseBytes = 32 << 20

// boundResponses makes every response body of rt fail after max bytes: a workload cluster is
// input, and client-go reads an answer whole, however long the server makes it.
func boundResponses(max int64) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return boundedTransport{next: rt, max: max}
	}
}

type boundedTransport struct {
	next http.RoundTripper
	max  int64
}

func (t boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err == nil && resp.Body != nil {
		resp.Body = &boundedBody{ReadCloser: resp.Body, left: t.max, max: t.max}
	}
	return resp, err
}

// boundedBody reads at most max bytes of its body; a body longer than that is an error.
type boundedBody struct {
	io.ReadCloser
	left, max int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, b.tooLarge()
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // one byte more than allowed tells a body that ends here from a longer one
	}
	n, err := b.ReadCloser.Read(p)
	if int64(n) <= b.left {
		b.left -= int64(n)
		return n, err
	}
	n, b.left = int(b.left), -1
	return n, b.tooLarge()
}

func (b *boundedBody) tooLarge() error {
	return fmt.Errorf("the workload cluster's API server answered with more than %d MiB: refused", b.max>>20)
}
