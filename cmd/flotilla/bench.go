package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/flotilla-dev/flotilla/internal/bench"
)

func benchCmd() *cobra.Command {
	o := bench.Options{}
	transport := bench.TransportHTTP
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the controller on a synthetic fleet: convergence, git writes, status writes, memory, CPU",
		Long: `bench creates a synthetic fleet (a catalog of packages published as v1 and v2, one bare
repository per cluster, PackageSets deploying the packages to every cluster), starts a real
kube-apiserver and etcd (KUBEBUILDER_ASSETS, see ` + "`make bench`" + `) and the flotilla controller as a
child process, and measures: the cold convergence (every cluster publishes its deployed-packages),
one blueprint bump (the first set from v1 to v2), commits and bytes written, status writes per
object, the controller's peak memory and CPU, the git requests each repository received; then git
fast-import writing the same commits, the git floor (the git CLI fetching and pushing one commit
per cluster, --workers at once) and the local mode (flotilla render) publishing the same fleet. It
prints progress, then a table.

Every repository is served over git's smart HTTP protocol by a git server inside the bench (git
http-backend), as a user's is; --transport file hands the controller file:// URLs instead, and
--transport both runs the whole bench once over each.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			o.Controller = []string{exe, "bench", "controller"}
			for _, p := range []*string{&o.CPUProfile, &o.MemProfile, &o.APIServerCPUProfile, &o.IdleCPUProfile, &o.HeapProfile} {
				if *p != "" {
					if *p, err = filepath.Abs(*p); err != nil {
						return err
					}
				}
			}
			o.Progress = cmd.ErrOrStderr()
			transports := []string{transport}
			if transport == "both" {
				transports = []string{bench.TransportHTTP, bench.TransportFile}
			}
			for _, t := range transports {
				ot := o
				ot.Transport = t
				if len(transports) > 1 {
					ot = perTransport(ot)
				}
				if err := runBench(cmd, ot); err != nil {
					return err
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Clusters, "clusters", 200, "number of WorkloadClusters, each with its own bare repository")
	f.IntVar(&o.Packages, "packages", 5, "number of catalog packages (each published as v1 and v2)")
	f.IntVar(&o.Sets, "sets", 0, "number of PackageSets, each deploying one package to every cluster (default: --packages)")
	f.IntVar(&o.RolloutSteps, "rollout-steps", 0, "add two rollout phases: set s-00 rolls out v2→v1 and back as a RollingUpdate of this many steps (clusters labelled into waves, partitionBy), reporting each step")
	f.IntVar(&o.Shards, "shards", 1, "run the controller as this many shards (one process each, --watch-label-selector shard=shard-K, --leader-elect), then kill the last one, move s-00 back to v1 and restart it: shows each cluster is handled by one shard and a dead shard's clusters are left alone")
	f.DurationVar(&o.Idle, "idle", 0, "after the last phase, measure this long of nothing changing (CPU, API and git requests, writes), with every cluster's health read back from a workload API server the bench starts; e.g. 5m")
	f.StringVar(&transport, "transport", bench.TransportHTTP, "how the controller reaches the repositories: http (a smart-HTTP git server in the bench), file (file:// URLs), or both (the whole bench once over each)")
	f.StringVar(&o.MemoryLimit, "controller-memory-limit", "", "the controller's GOMEMLIMIT (e.g. 640MiB), as the manifests set it from the container's memory limit; other processes of the bench do not get it (default: none)")
	f.IntVar(&o.Workers, "workers", 0, "the controller's --workers, and how many clusters the git floor runs at once (default: the controller's, 4)")
	f.DurationVar(&o.Timeout, "timeout", 0, "how long each phase (cold, bump, rollouts) may take (default 10m)")
	f.BoolVar(&o.Keep, "keep", false, "keep the work directory: repositories, objects, controller log and cache")
	f.StringVar(&o.Dir, "dir", "", "work directory (default: a new temporary directory)")
	f.StringVar(&o.CPUProfile, "cpuprofile", "", "write the controller's CPU profile to this file (go tool pprof)")
	f.StringVar(&o.HeapProfile, "heap-profile", "", "write the controller's heap profile, after a forced GC, to PREFIX-PHASE.pb.gz when each phase converged and to PREFIX-idle.pb.gz at the end of the --idle window, and report the live heap of each (go tool pprof)")
	f.StringVar(&o.IdleCPUProfile, "idle-cpuprofile", "", fmt.Sprintf("write the controller's CPU profile over the --idle window and %s after it (its encoding stays out of the window's figures) to this file (go tool pprof)", bench.IdleProfileTail))
	f.StringVar(&o.MemProfile, "memprofile", "", "write the controller's heap profile, taken when it stops, to this file")
	f.StringVar(&o.APIServerCPUProfile, "apiserver-cpuprofile", "", "write kube-apiserver's CPU profile over the start of the cold phase to this file (go tool pprof)")
	f.IntVar(&o.APIServerProfileSeconds, "apiserver-profile-seconds", 60, "how many seconds of the cold phase --apiserver-cpuprofile covers")
	f.DurationVar(&o.ProgressInterval, "progress", 0, "how often to print progress (default 5s)")
	cmd.AddCommand(profiledControllerCmd())
	return cmd
}

// runBench runs one bench and prints its table.
func runBench(cmd *cobra.Command, o bench.Options) error {
	// Interrupted or terminated, the bench stops its API servers, git server and controller
	// instead of leaving them running.
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	report, err := bench.Run(ctx, o)
	if report != nil && report.Cold.Name != "" {
		fmt.Fprintln(cmd.OutOrStdout())
		if perr := report.Print(cmd.OutOrStdout()); perr != nil && err == nil {
			err = perr
		}
	}
	if o.Keep && report != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "work directory kept: %s\n", report.Dir)
	}
	return err
}

// perTransport gives a run of --transport both its own work directory and profile files, named
// after the transport, so the second run does not overwrite the first's.
func perTransport(o bench.Options) bench.Options {
	suffix := func(p string) string {
		if p == "" {
			return ""
		}
		ext := filepath.Ext(p)
		return strings.TrimSuffix(p, ext) + "-" + o.Transport + ext
	}
	if o.Dir != "" {
		o.Dir = filepath.Join(o.Dir, o.Transport)
	}
	o.CPUProfile, o.MemProfile, o.APIServerCPUProfile, o.IdleCPUProfile = suffix(o.CPUProfile), suffix(o.MemProfile), suffix(o.APIServerCPUProfile), suffix(o.IdleCPUProfile)
	return o
}

// profiledControllerCmd is `flotilla controller` with --cpuprofile and --memprofile: the bench's
// child process.
func profiledControllerCmd() *cobra.Command {
	cmd := controllerCmd()
	cmd.Hidden = true
	cmd.Short = "Run the controller manager, optionally with CPU and heap profiles (the bench's child process)"
	var cpuProfile, memProfile string
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile to this file until the controller stops")
	cmd.Flags().StringVar(&memProfile, "memprofile", "", "write a heap profile to this file when the controller stops")
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if cpuProfile != "" {
			f, err := os.Create(cpuProfile)
			if err != nil {
				return err
			}
			defer f.Close()
			if err := pprof.StartCPUProfile(f); err != nil {
				return err
			}
			defer pprof.StopCPUProfile()
		}
		if memProfile == "" {
			return run(c, args)
		}
		// The heap is written when SIGTERM arrives, before the manager releases its caches.
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM)
		written := make(chan error, 1)
		go func() {
			<-sig
			runtime.GC()
			written <- writeHeapProfile(memProfile)
		}()
		err := run(c, args)
		select {
		case werr := <-written:
			if err == nil {
				err = werr
			}
		case <-time.After(30 * time.Second):
		}
		return err
	}
	return cmd
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
