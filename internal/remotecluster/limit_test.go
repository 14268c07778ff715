package remotecluster

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A workload cluster's API server that answers without end (a list that never closes) gets an
// error once the answer passes the bound, not the controller's memory; an answer under the bound
// is read as before. (A hostile server is what is tested: a real API server pages its lists.)
func TestWorkloadClusterAnswersAreBounded(t *testing.T) {
	var endless atomic.Bool
	var written atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"apiVersion":"v1","kind":"ConfigMapList","metadata":{"resourceVersion":"1"},"items":[`)
		item := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"site-%d","namespace":"kube-system"},"data":{"x":"` + strings.Repeat("y", 1000) + `"}}`
		n := 10 // about 10 KB
		if endless.Load() {
			n = 1 << 30
		}
		for i := range n {
			if i > 0 {
				fmt.Fprint(w, ",")
			}
			k, err := fmt.Fprintf(w, item, i)
			written.Add(int64(k))
			if err != nil || r.Context().Err() != nil {
				return // the client gave up
			}
		}
		fmt.Fprint(w, `]}`)
	}))
	t.Cleanup(srv.Close)
	cluster, secret := clusterAt(t, srv.URL)
	clients := &Clients{Known: KnownKinds(), MaxResponseBytes: 1 << 20}
	configMaps := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	ctx := context.Background()

	if obj, err := clients.Get(ctx, oneSecret{secret: secret}, cluster, configMaps, "kube-system", "site-9", 0); err != nil || obj == nil {
		t.Fatalf("Get from a list of 10 KB: %v, %v; want site-9", obj, err)
	}

	endless.Store(true)
	began := time.Now()
	_, err := clients.Get(ctx, oneSecret{secret: secret}, cluster, configMaps, "kube-system", "site-0", 0)
	if err == nil || !strings.Contains(err.Error(), "more than 1 MiB") {
		t.Fatalf("Get from a list without end: %v, want an error saying the answer passed 1 MiB", err)
	}
	if took := time.Since(began); took > 20*time.Second {
		t.Errorf("the endless answer took %s to refuse", took)
	}
	// The server may have written ahead into the connection's buffers; not much more.
	if w := written.Load(); w > 64<<20 {
		t.Errorf("the server wrote %d MiB before the client refused", w>>20)
	}
}
