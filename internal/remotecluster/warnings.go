package remotecluster

import (
	"context"
	"strings"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

const (
	// MaxWarnings is how many distinct warnings one client of a workload cluster logs.
	MaxWarnings = 32
	// MaxWarningLen is how much of a warning is logged, in bytes.
	MaxWarningLen = 512
)

// warnings logs what a workload cluster's API server warns about (deprecated APIs, mostly), in
// place of client-go's default handler, which logs every warning of every response as it came. A
// workload cluster is input: its API server may send any number of warnings of any length with
// every answer. Each distinct warning is logged once, with the cluster named, cut to
// MaxWarningLen; after MaxWarnings of them one line says that no more are logged, until the
// cluster's kubeconfig changes (a new client).
type warnings struct {
	cluster client.ObjectKey

	mu   sync.Mutex
	seen map[string]struct{}
	full bool
}

// HandleWarningHeaderWithContext implements rest.WarningHandlerWithContext.
func (w *warnings) HandleWarningHeaderWithContext(ctx context.Context, code int, _ string, text string) {
	if code != 299 || text == "" {
		return // what client-go's handler logs: 299, with a text
	}
	if len(text) > MaxWarningLen {
		text = strings.ToValidUTF8(text[:MaxWarningLen], "") + "…"
	}
	w.mu.Lock()
	_, dup := w.seen[text]
	over := !dup && len(w.seen) >= MaxWarnings
	first := over && !w.full
	switch {
	case over:
		w.full = true
	case !dup:
		if w.seen == nil {
			w.seen = map[string]struct{}{}
		}
		w.seen[text] = struct{}{}
	}
	w.mu.Unlock()
	logger := log.FromContext(ctx).WithValues("workloadCluster", w.cluster.String())
	switch {
	case first:
		logger.Info("the workload cluster's API server sent more distinct warnings than are logged; no more are logged until its kubeconfig changes", "logged", MaxWarnings)
	case !dup && !over:
		logger.Info("warning from the workload cluster's API server", "warning", text)
	}
}
