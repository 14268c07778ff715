package remotecluster

import (
	"fmt"
	"net/http"

	"github.com/flotilla-dev/flotilla/internal/bounded"
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
		resp.Body = bounded.Body(resp.Body, t.max, func() error {
			return fmt.Errorf("the workload cluster's API server answered with more than %d MiB: refused", t.max>>20)
		})
	}
	return resp, err
}
