// Package metrics defines flotilla's Prometheus metrics, registered with controller-runtime's
// registry (served on --metrics-bind-address next to controller_runtime_reconcile_total and
// workqueue_depth). Every name is documented in docs/metrics.md.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/flotilla-dev/flotilla/internal/buildinfo"
)

var (
	// Publishes counts deployed-packages writes by outcome: published, proposed, approved,
	// unchanged, failed.
	Publishes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flotilla_publish_total",
		Help: "deployed-packages publish attempts per cluster reconcile, by result (published, proposed, approved, unchanged, failed).",
	}, []string{"result"})

	// PublishSeconds is how long rendering and publishing one cluster's deployed-packages takes,
	// git round trips included.
	PublishSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "flotilla_publish_duration_seconds",
		Help:    "Time to render and publish one cluster's deployed-packages, git fetch and push included.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
	})

	// Renders counts the renders of deployed-packages by the WorkloadCluster reconciler:
	// rendered (fleet.Render ran), or reused (its inputs were those of the last publish's render).
	Renders = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flotilla_render_total",
		Help: "deployed-packages renders per WorkloadCluster reconcile that reached one, by result (rendered, reused: the inputs were those of the last publish).",
	}, []string{"result"})
	// GitErrors counts git failures by condition reason (RepositoryUnreachable,
	// AuthenticationFailed, ...).
	GitErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flotilla_git_errors_total",
		Help: "Git operations that failed, by reason.",
	}, []string{"reason"})

	// Targets is the number of targets of each PackageSet by state (ready, updated, failed).
	Targets = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "flotilla_packageset_targets",
		Help: "Targets of a PackageSet by state: total, updated, ready, failed.",
	}, []string{"namespace", "packageset", "state"})

	// BuildInfo is 1, labelled with the running controller's version (SetBuildInfo).
	BuildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "flotilla_build_info",
		Help: "Always 1, labelled with the version, commit, commit date and Go version of the running controller.",
	}, []string{"version", "commit", "date", "goversion"})
)

func init() {
	crmetrics.Registry.MustRegister(Publishes, PublishSeconds, Renders, GitErrors, Targets, BuildInfo)
}

// SetBuildInfo labels flotilla_build_info with info, the one series it has.
func SetBuildInfo(info buildinfo.Info) {
	BuildInfo.Reset()
	BuildInfo.WithLabelValues(info.Version, info.Commit, info.Date, info.GoVersion).Set(1)
}
