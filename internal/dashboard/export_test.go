package dashboard

import (
	"context"
	"net/http"

	"github.com/flotilla-dev/flotilla/internal/fleetstatus"
)

// BigFleet is bigFleet, for the browser test.
var BigFleet = bigFleet

// StaticHandler serves the dashboard of a fixed snapshot, for the browser test of a fleet too
// large to create in a test's API server.
func StaticHandler(s fleetstatus.Snapshot, o Options) http.Handler {
	return newHandler(func(context.Context) (fleetstatus.Snapshot, error) { return s, nil }, o)
}
