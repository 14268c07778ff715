// Package fleet runs flotilla's rollouts over a fleet of real API servers: a management server
// with the flotilla controller, and three workload servers, each with its own Flux
// source-controller and kustomize-controller applying what flotilla publishes for that cluster.
// Every story asserts on what Flux really applied to each workload server.
package fleet

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/flotilla-dev/flotilla/internal/testenv"
)

var (
	// env is the management cluster: flotilla's objects and controller.
	env *testenv.Env
	// workloads[i] is the API server of the WorkloadCluster clusters[i], each story's cluster of
	// that name reaches it through its kubeConfigSecretRef.
	workloads = make([]*testenv.Workload, len(clusters))
)

// clusters are the names of the WorkloadClusters each story creates, one per workload server.
var clusters = []string{"alpha", "beta", "gamma"}

func TestMain(m *testing.M) {
	flag.Parse()
	// The stories mostly wait (for Flux's polls, health reads, health timeouts), not compute: all
	// of them run at once rather than GOMAXPROCS at a time, unless -test.parallel says otherwise.
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", "4")
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	work, err := os.MkdirTemp("", "flotilla-fleet-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(work)
	// The four API servers start at once: most of their start is waiting for CRDs to be served.
	var g errgroup.Group
	g.Go(func() (err error) {
		env, err = testenv.Start()
		return err
	})
	for i, name := range clusters {
		g.Go(func() error {
			dir := filepath.Join(work, name)
			if err := os.Mkdir(dir, 0o755); err != nil {
				return err
			}
			w, err := testenv.StartWorkload(dir)
			workloads[i] = w
			return err
		})
	}
	err = g.Wait()
	defer func() {
		for _, w := range workloads {
			if w != nil {
				_ = w.Stop()
			}
		}
		if env != nil {
			_ = env.Stop()
		}
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	stop, err := env.StartManager(filepath.Join(work, "git-cache"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if code != 0 {
		for i, w := range workloads {
			w.DumpLogs(os.Stderr, clusters[i])
		}
		dumpErrors()
	}
	if err := stop(); err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		return 1
	}
	return code
}

// dumpErrors prints the last errors the flotilla controllers logged, to see why a story failed
// (FLOTILLA_TEST_LOG=1 shows every line as it is logged).
func dumpErrors() {
	var errs []string
	for _, l := range strings.Split(testenv.Logs(), "\n") {
		if strings.Contains(l, "\tERROR\t") {
			errs = append(errs, l)
		}
	}
	errs = errs[max(len(errs)-40, 0):]
	fmt.Fprintf(os.Stderr, "--- flotilla: last %d errors\n%s\n", len(errs), strings.Join(errs, "\n"))
}
