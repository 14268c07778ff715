package bench

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// Print writes the report as two tables: per phase, then the run as a whole.
func (r *Report) Print(w io.Writer) error {
	fmt.Fprintf(w, "flotilla bench: %d clusters × %d packages, %d PackageSets → %d PackageDeployments, %d CPUs, git over %s\n\n",
		r.Clusters, r.Packages, r.Sets, r.Clusters*r.Sets, r.CPUs, r.transportName())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	phases := []Phase{r.Cold, r.Bump}
	header := "\tCOLD (all sets v1)\tBUMP (s-00 v1→v2)"
	if r.RolloutPhase.Name != "" {
		phases = append(phases, r.RolloutPhase, r.ForwardPhase)
		header += fmt.Sprintf("\tROLLOUT (s-00 v2→v1, %d steps)\tROLLOUT (s-00 v1→v2)", len(r.Rollout.Steps))
	}
	if r.KillPhase.Name != "" {
		phases = append(phases, r.KillPhase, r.RecoverPhase)
		header += fmt.Sprintf("\tKILL (%s SIGKILL, s-00 v2→v1)\tRECOVER (%s restarted)", r.Shards.Killed, r.Shards.Killed)
	}
	row := func(name string, cell func(p Phase) string) {
		fmt.Fprint(tw, name)
		for _, p := range phases {
			fmt.Fprint(tw, "\t"+cell(p))
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintln(tw, header)
	row("converged clusters", func(p Phase) string {
		switch p.Name {
		case "":
			return "-"
		case "kill":
			return fmt.Sprintf("%d/%d (live shards)", p.Converged, r.Clusters-r.Shards.Clusters[len(r.Shards.Clusters)-1])
		}
		return fmt.Sprintf("%d/%d", p.Converged, r.Clusters)
	})
	row("convergence time (all published)", func(p Phase) string { return secs(p.Time) })
	row("time until status settled", func(p Phase) string { return secs(p.Settled) })
	row("deployed-packages commits", func(p Phase) string { return fmt.Sprint(p.Git.Commits) })
	row("deployed-packages revisions per cluster", func(p Phase) string {
		return fmt.Sprintf("%.2f", float64(p.Git.Commits)/float64(r.Clusters))
	})
	row("bytes written to cluster repos", func(p Phase) string { return size(p.Git.Bytes) })
	row("git requests per cluster (refs, upload, receive)", func(p Phase) string {
		if r.Transport != TransportHTTP {
			return "- (file://)"
		}
		return requestsPer(p.Requests, r.Clusters)
	})
	row("git server time per request avg", func(p Phase) string {
		if r.Transport != TransportHTTP {
			return "- (file://)"
		}
		all := p.Requests.Add(p.CatalogRequests)
		return fmt.Sprintf("%.0f ms", all.Time.Seconds()*1000/float64(max(all.Total(), 1)))
	})
	row("catalog git requests (refs, upload, receive)", func(p Phase) string {
		if r.Transport != TransportHTTP {
			return "- (file://)"
		}
		return requestsPer(p.CatalogRequests, 1)
	})
	for _, k := range []string{kindCluster, kindDeployment, kindSet} {
		row("status writes per "+k+" avg (max)", func(p Phase) string {
			s := p.Writes[k]
			return fmt.Sprintf("%.2f (%d)", s.StatusPerObject, s.MaxStatus)
		})
		row("  all writes per "+k+" (metadata, spec)", func(p Phase) string {
			s := p.Writes[k]
			return fmt.Sprintf("%.2f (%d, %d)", s.WritesPerObject, s.Meta, s.Spec)
		})
	}
	row("reconciles set/deployment/cluster/repo", func(p Phase) string {
		c := p.Reconciles
		return fmt.Sprintf("%.0f/%.0f/%.0f/%.0f", c["packageset"], c["packagedeployment"], c["workloadcluster"], c["repository"])
	})
	row("publishes published/unchanged/failed", func(p Phase) string {
		return fmt.Sprintf("%.0f/%.0f/%.0f", p.Published, p.Unchanged, p.Failed)
	})
	row("renders per cluster (rendered, reused)", func(p Phase) string {
		return fmt.Sprintf("%.2f (%.0f, %.0f)", p.Rendered/float64(r.Clusters), p.Rendered, p.Reused)
	})
	row("time inside publish (sum)", func(p Phase) string { return secs(p.PublishTime) })
	row("controller CPU s (self + git)", func(p Phase) string {
		return fmt.Sprintf("%.1f (%.1f + %.1f)", p.ControllerCPU.total(), p.ControllerCPU.Self, p.ControllerCPU.Children)
	})
	row("kube-apiserver + etcd CPU s", func(p Phase) string { return fmt.Sprintf("%.1f", p.ServerCPU.total()) })
	row("git server CPU s (http-backend)", func(p Phase) string {
		if r.Transport != TransportHTTP {
			return "- (file://)"
		}
		return fmt.Sprintf("%.1f", p.BenchCPU.Children)
	})
	row("bench process CPU s (watches)", func(p Phase) string { return fmt.Sprintf("%.1f", p.BenchCPU.Self) })
	if r.Cold.LiveHeap > 0 {
		row("controller live heap when converged", func(p Phase) string { return mib(p.LiveHeap) })
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	deployments := r.Clusters * r.Sets
	fmt.Fprintf(tw, "objects created\t%d Repository, %d WorkloadCluster, %d PackageSet by the bench in %s; %d PackageDeployment by the controller\n",
		r.Repositories, r.Clusters, r.Sets*max(len(r.Shards.Names), 1), secs(r.Create), deployments)
	peak := "controller peak RSS"
	if len(r.Shards.Names) > 1 {
		peak += " (shards summed)"
	}
	if r.MemoryLimit != "" {
		peak += " (GOMEMLIMIT " + r.MemoryLimit + ")"
	}
	fmt.Fprintf(tw, "%s\t%s\n", peak, mib(r.PeakRSS))
	fmt.Fprintf(tw, "controller git mirrors on disk\t%s\n", size(r.CacheBytes))
	var cpu float64
	var wall, inside time.Duration
	for _, p := range phases {
		cpu, wall, inside = cpu+p.ControllerCPU.total(), wall+p.Time, inside+p.PublishTime
	}
	fmt.Fprintf(tw, "controller CPU s (total)\t%.1f\n", cpu)
	f := r.FastImport
	fmt.Fprintf(tw, "git fast-import\t%d commits into %d repositories in %s, %s; commits identical to flotilla's: %d/%d\n",
		f.Commits, f.Repos, secs(f.Time), size(f.Bytes), f.Identical, f.Repos)
	fmt.Fprintf(tw, "publish / fast-import\t%s end to end (%s / %s); %s inside publish (%s / %s)\n",
		ratio(wall, f.Time), secs(wall), secs(f.Time), ratio(inside, f.Time), secs(inside), secs(f.Time))
	fl := r.Floor
	floorRequests := "- (file://)"
	if r.Transport == TransportHTTP {
		floorRequests = fmt.Sprintf("%s, %.0f ms each", requestsPer(fl.Requests, fl.Clusters),
			fl.Requests.Time.Seconds()*1000/float64(max(fl.Requests.Total(), 1)))
	}
	fmt.Fprintf(tw, "git floor (git CLI)\tclone main, commit one file, push, per cluster, %d at once: %d clusters in %s; git requests per cluster (refs, upload, receive) %s\n",
		fl.Workers, fl.Clusters, secs(fl.Time), floorRequests)
	fmt.Fprintf(tw, "cold / git floor\t%s (%s / %s); bump / git floor %s\n",
		ratio(r.Cold.Time, fl.Time), secs(r.Cold.Time), secs(fl.Time), ratio(r.Bump.Time, fl.Time))
	l := r.Local
	fmt.Fprintf(tw, "local mode (flotilla render)\tcold %s, bump %s; %d commits, %s; failed clusters %d; trees identical to the controller's: %d/%d\n",
		secs(l.Cold), secs(l.Bump), l.Git.Commits, size(l.Git.Bytes), l.Failed, l.Identical, r.Clusters)
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, ro := range []Rollout{r.Rollout, r.Forward} {
		if len(ro.Steps) > 0 {
			if err := ro.print(w); err != nil {
				return err
			}
		}
	}
	if err := r.printShards(w); err != nil {
		return err
	}
	return r.printIdle(w)
}

// print writes a rollout's steps: the time each took to publish, and the controller's gap before
// the next step, with their median and maximum.
func (ro Rollout) print(w io.Writer) error {
	fmt.Fprintf(w, "\nrollout s-00 %s→%s, health simulated (healthy once published): per step, time until every cluster of the step published, and until the next step started\n", ro.From, ro.To)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tWAVE\tCLUSTERS\tPUBLISHED AFTER\tNEXT STEP AFTER")
	var publish, gap []time.Duration
	for i, s := range ro.Steps {
		next := "-"
		if i+1 < len(ro.Steps) {
			next, gap = secs3(s.Gap), append(gap, s.Gap)
		}
		publish = append(publish, s.Publish)
		if len(ro.Steps) <= 20 || i < 5 || i >= len(ro.Steps)-5 {
			fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\n", i+1, s.Wave, s.Clusters, secs3(s.Publish), next)
		}
	}
	fmt.Fprintf(tw, "median\t\t\t%s\t%s\n", secs3(median(publish)), secs3(median(gap)))
	fmt.Fprintf(tw, "max\t\t\t%s\t%s\n", secs3(slices.Max(publish)), secs3(maxOr0(gap)))
	return tw.Flush()
}

func secs3(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func maxOr0(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return slices.Max(ds)
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
}

func ratio(a, b time.Duration) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f×", a.Seconds()/b.Seconds())
}

func (r *Report) transportName() string {
	if r.Transport == TransportFile {
		return "file://"
	}
	return "smart HTTP (git http-backend)"
}
