// Package bench measures flotilla on a synthetic fleet: N clusters, each with its own bare git
// repository, a catalog of M packages published as v1 and v2, and PackageSets deploying them to
// every cluster. It runs the real controller (a child process) against a real API server
// (envtest), first from nothing published (cold) and then through one blueprint bump, counting
// what it wrote to git and to the API server, and compares with git fast-import writing the same
// commits and with the local mode (`flotilla render`) publishing the same fleet.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"time"

	"github.com/flotilla-dev/flotilla/internal/controller"
	"github.com/flotilla-dev/flotilla/internal/testenv"
)

// Options size and steer a run.
type Options struct {
	Clusters int
	Packages int
	// Sets is the number of PackageSets; set i deploys package i mod Packages to every cluster.
	Sets int
	// RolloutSteps, when not 0, adds two rollout phases: set s-00 rolls out v2→v1 and back in
	// that many steps (the clusters labelled into as many waves, partitionBy).
	RolloutSteps int
	// Idle, when not 0, measures this long of nothing changing after the last phase. Over HTTP
	// every cluster gets a kubeconfig (one workload API server for all) and the Flux engine, so
	// health is read back; over file:// not (Flux cannot sync file:// repositories).
	Idle time.Duration
	// Shards, when more than 1, runs the controller as that many shards over the one fleet (one
	// process each, --watch-label-selector shard=shard-K, leader election on), and adds two
	// phases after the bump: the last shard is killed and set s-00 moves back to v1 (the other
	// shards' clusters follow, the killed shard's stay as they are), then the shard restarts
	// and catches up.
	Shards int
	// Transport is how the controller, the git floor and the local mode reach every repository:
	// TransportHTTP (default) or TransportFile.
	Transport string
	// MemoryLimit, when set (e.g. 640MiB), is the controller's GOMEMLIMIT, as the manifests set
	// it from the container's memory limit; the bench's other processes do not get it.
	MemoryLimit string
	// Workers is the controller's --workers (default controller.DefaultWorkers), and how many
	// clusters the git floor runs at once.
	Workers int
	// Timeout bounds each convergence phase (cold, bump, rollouts).
	Timeout time.Duration
	// Dir is the work directory (repositories, objects, controller cache and log); a new
	// temporary directory when empty.
	Dir string
	// Keep keeps the work directory.
	Keep bool
	// Controller is the command that runs the controller (e.g. `flotilla controller`); the bench
	// adds --kubeconfig, --cache-dir, --workers, --metrics-bind-address,
	// --health-probe-bind-address, and over file:// --allow-local-repositories.
	Controller []string
	// CPUProfile and MemProfile, when set, are passed to Controller as --cpuprofile and
	// --memprofile.
	CPUProfile, MemProfile string
	// IdleCPUProfile, when set, receives a CPU profile of the controller over the idle window and
	// IdleProfileTail after it (the bench then passes it --pprof-bind-address).
	IdleCPUProfile string
	// HeapProfile, when set, is the prefix of the controller's heap profiles, each taken after a
	// forced GC: PREFIX-PHASE.pb.gz when a phase converged (PREFIX-cold.pb.gz, PREFIX-bump.pb.gz,
	// ...) and PREFIX-idle.pb.gz at the end of the idle window; each phase reports the live heap
	// its profile found (the bench then passes the controller --pprof-bind-address).
	HeapProfile string
	// APIServerCPUProfile, when set, receives a CPU profile of kube-apiserver over the first
	// APIServerProfileSeconds (default 60) of the cold phase.
	APIServerCPUProfile     string
	APIServerProfileSeconds int
	// Progress receives progress lines every ProgressInterval (default 5s); nil: none.
	Progress         io.Writer
	ProgressInterval time.Duration
}

// memoryLimit is a size as the Go runtime reads GOMEMLIMIT.
var memoryLimit = regexp.MustCompile(`^[0-9]+(B|KiB|MiB|GiB|TiB)?$`)

// Report is what a run measured.
type Report struct {
	Clusters, Packages, Sets, CPUs int
	Dir                            string
	Transport                      string
	MemoryLimit                    string

	Repositories, Deployments int
	// Create is how long the bench took to create the Repositories, clusters and sets.
	Create time.Duration
	// Cold and Bump are the two phases the controller ran.
	Cold, Bump Phase
	// RolloutPhase and ForwardPhase are the rollout phases (Options.RolloutSteps), with their
	// steps in Rollout and Forward.
	RolloutPhase, ForwardPhase Phase
	Rollout, Forward           Rollout
	// KillPhase and RecoverPhase are the shard phases (Options.Shards), with what they showed
	// in Shards.
	KillPhase, RecoverPhase Phase
	Shards                  ShardsReport
	// Idle is the idle window (Options.Idle).
	Idle Idle
	// PeakRSS is the controller's VmHWM at the end of the run.
	PeakRSS int64
	// CacheBytes is the size of the controller's git mirrors (--cache-dir) at the end.
	CacheBytes int64
	FastImport fastImportResult
	// Floor is the git CLI doing each cluster's git work of one publish (fetch, push one commit).
	Floor floorResult
	Local localResult
}

// ErrNoAssets says how to get the API server binaries.
var ErrNoAssets = errors.New("KUBEBUILDER_ASSETS is not set: run `make bench`, or set it to the output of `bash hack/envtest.sh` (kube-apiserver and etcd)")

// Run runs the benchmark. When it returns an error after the controller started, the report holds
// what was measured until then.
func Run(ctx context.Context, o Options) (*Report, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := preflight(); err != nil {
		return nil, err
	}
	dir := o.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "flotilla-bench-"); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if !o.Keep {
		defer os.RemoveAll(dir)
	}
	b := &run{o: o, dir: dir, f: fleet{clusters: o.Clusters, packages: o.Packages, sets: o.Sets, waves: o.RolloutSteps, shards: o.Shards, health: o.Idle > 0 && o.Transport == TransportHTTP}}
	b.report = &Report{Clusters: o.Clusters, Packages: o.Packages, Sets: o.Sets, CPUs: runtime.NumCPU(), Dir: dir, Transport: o.Transport, MemoryLimit: o.MemoryLimit}
	return b.report, b.run(ctx)
}

func (o Options) withDefaults() (Options, error) {
	if o.Sets == 0 {
		o.Sets = o.Packages
	}
	if o.Shards == 0 {
		o.Shards = 1
	}
	if o.Transport == "" {
		o.Transport = TransportHTTP
	}
	if o.Workers == 0 {
		o.Workers = controller.DefaultWorkers
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Minute
	}
	if o.ProgressInterval == 0 {
		o.ProgressInterval = 5 * time.Second
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	switch {
	case o.Clusters < 1 || o.Packages < 1 || o.Sets < 1:
		return o, fmt.Errorf("clusters, packages and sets must be at least 1")
	case o.Clusters > 99999 || o.Sets > 99:
		return o, fmt.Errorf("at most 99999 clusters and 99 sets (names are c-NNNNN and s-NN)")
	case o.RolloutSteps < 0 || o.RolloutSteps > min(o.Clusters, 100):
		return o, fmt.Errorf("rollout steps must be between 0 and min(clusters, 100)")
	case o.Transport != TransportHTTP && o.Transport != TransportFile:
		return o, fmt.Errorf("transport %q: want %s or %s", o.Transport, TransportHTTP, TransportFile)
	case o.Idle < 0:
		return o, fmt.Errorf("idle must not be negative")
	case o.IdleCPUProfile != "" && o.Idle == 0:
		return o, fmt.Errorf("--idle-cpuprofile needs --idle: it profiles the idle window")
	case o.Idle > 0 && o.RolloutSteps > 0:
		return o, fmt.Errorf("--idle and --rollout-steps run apart: the rollout phases take a cluster as healthy once published (no kubeconfig), while --idle reads health back from a workload API server where no GitOps agent makes it healthy, so a rollout would halt at its first step")
	case o.Shards < 1 || o.Shards > o.Clusters:
		return o, fmt.Errorf("shards must be between 1 and the number of clusters")
	case o.Shards > 1 && (o.Idle > 0 || o.RolloutSteps > 0):
		return o, fmt.Errorf("--shards runs apart from --idle and --rollout-steps: their figures are those of one controller process")
	case o.Shards > 1 && (o.CPUProfile != "" || o.MemProfile != "" || o.HeapProfile != ""):
		return o, fmt.Errorf("--cpuprofile, --memprofile and --heap-profile profile one controller: run them with --shards 1")
	case o.Workers < 1:
		return o, fmt.Errorf("workers must be at least 1")
	case o.MemoryLimit != "" && !memoryLimit.MatchString(o.MemoryLimit):
		return o, fmt.Errorf("controller memory limit %q: want a size as GOMEMLIMIT takes it, e.g. 640MiB or 1GiB", o.MemoryLimit)
	case len(o.Controller) == 0:
		return o, fmt.Errorf("no controller command")
	}
	return o, nil
}

// preflight fails early, and clearly, when the API server cannot start.
func preflight() error {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return ErrNoAssets
	}
	for _, d := range []string{filepath.Join(testenv.Root(), "config", "crd", "bases"), testenv.SharedCRDs()} {
		if _, err := os.Stat(d); err != nil {
			return fmt.Errorf("the bench loads CRDs from %s: %w (run it from a source checkout, or set FLOTILLA_SHARED_CRDS for the third-party CRDs)", d, err)
		}
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return fmt.Errorf("the bench reads controller CPU and memory from /proc (Linux only): %w", err)
	}
	return nil
}
