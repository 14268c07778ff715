package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/flotilla-dev/flotilla/internal/bench"
)

func benchCmd() *cobra.Command {
	o := bench.Options{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the controller on a synthetic fleet: convergence, git writes, status writes, memory, CPU",
		Long: `bench creates a synthetic fleet (a catalog of packages published as v1 and v2, one bare
repository per cluster, PackageSets deploying the packages to every cluster), starts a real
kube-apiserver and etcd (KUBEBUILDER_ASSETS, see ` + "`make bench`" + `) and the flotilla controller as a
child process, and measures: the cold convergence (every cluster publishes its deployed-packages),
one blueprint bump (the first set from v1 to v2), commits and bytes written, status writes per
object, the controller's peak memory and CPU; then git fast-import writing the same commits, and
the local mode (flotilla render) publishing the same fleet. It prints progress, then a table.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			o.Controller = []string{exe, "bench", "controller"}
			for _, p := range []*string{&o.CPUProfile, &o.MemProfile, &o.APIServerCPUProfile} {
				if *p != "" {
					if *p, err = filepath.Abs(*p); err != nil {
						return err
					}
				}
			}
			o.Progress = cmd.ErrOrStderr()
			report, err := bench.Run(cmd.Context(), o)
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
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Clusters, "clusters", 200, "number of WorkloadClusters, each with its own bare repository")
	f.IntVar(&o.Packages, "packages", 5, "number of catalog packages (each published as v1 and v2)")
	f.IntVar(&o.Sets, "sets", 0, "number of PackageSets, each deploying one package to every cluster (default: --packages)")
	f.IntVar(&o.RolloutSteps, "rollout-steps", 0, "add two rollout phases: set s-00 rolls out v2→v1 and back as a RollingUpdate of this many steps (clusters labelled into waves, partitionBy), reporting each step")
	f.DurationVar(&o.Timeout, "timeout", 0, "how long each phase (cold, bump, rollouts) may take (default 10m)")
	f.BoolVar(&o.Keep, "keep", false, "keep the work directory: repositories, objects, controller log and cache")
	f.StringVar(&o.Dir, "dir", "", "work directory (default: a new temporary directory)")
	f.StringVar(&o.CPUProfile, "cpuprofile", "", "write the controller's CPU profile to this file (go tool pprof)")
	f.StringVar(&o.MemProfile, "memprofile", "", "write the controller's heap profile, taken when it stops, to this file")
	f.StringVar(&o.APIServerCPUProfile, "apiserver-cpuprofile", "", "write kube-apiserver's CPU profile over the start of the cold phase to this file (go tool pprof)")
	f.IntVar(&o.APIServerProfileSeconds, "apiserver-profile-seconds", 60, "how many seconds of the cold phase --apiserver-cpuprofile covers")
	f.DurationVar(&o.ProgressInterval, "progress", 0, "how often to print progress (default 5s)")
	cmd.AddCommand(profiledControllerCmd())
	return cmd
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
