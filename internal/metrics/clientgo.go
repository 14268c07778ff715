package metrics

import (
	"context"

	clientmetrics "k8s.io/client-go/tools/metrics"
)

// WorkloadClustersHost is the host label under which rest_client_requests_total counts the
// requests to every workload cluster (FoldWorkloadHosts).
const WorkloadClustersHost = "workload-clusters"

// FoldWorkloadHosts makes client-go's request counter (rest_client_requests_total{code, method,
// host}, registered by controller-runtime) keep the host label of the management API server,
// management (host[:port], as client-go labels it), and count the requests to any other API
// server, the workload clusters', under host="workload-clusters". Labelled by address, the
// counter grows a few series per workload cluster (thousands in a fleet's scrape) and keeps
// each in memory for the life of the process; a cluster's own requests are told apart by its
// WorkloadCluster's conditions, not by a series. Call it once, before the first request.
func FoldWorkloadHosts(management string) {
	clientmetrics.RequestResult = foldedHosts{next: clientmetrics.RequestResult, keep: management}
}

type foldedHosts struct {
	next clientmetrics.ResultMetric
	keep string
}

func (f foldedHosts) Increment(ctx context.Context, code, method, host string) {
	if host != f.keep {
		host = WorkloadClustersHost
	}
	f.next.Increment(ctx, code, method, host)
}
