package bench

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// Print writes the report as two tables: per phase, then the run as a whole.
func (r *Report) Print(w io.Writer) error {
	fmt.Fprintf(w, "flotilla bench: %d clusters × %d packages, %d PackageSets → %d PackageDeployments, %d CPUs\n\n",
		r.Clusters, r.Packages, r.Sets, r.Clusters*r.Sets, r.CPUs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(name string, cell func(p Phase) string) {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", name, cell(r.Cold), cell(r.Bump))
	}
	fmt.Fprintf(tw, "\tCOLD (all sets v1)\tBUMP (s-00 v1→v2)\n")
	row("converged clusters", func(p Phase) string {
		if p.Name == "" {
			return "-"
		}
		return fmt.Sprintf("%d/%d", p.Converged, r.Clusters)
	})
	row("convergence time (all published)", func(p Phase) string { return secs(p.Time) })
	row("time until status settled", func(p Phase) string { return secs(p.Settled) })
	row("deployed-packages commits", func(p Phase) string { return fmt.Sprint(p.Git.Commits) })
	row("bytes written to cluster repos", func(p Phase) string { return size(p.Git.Bytes) })
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
	row("time inside publish (sum)", func(p Phase) string { return secs(p.PublishTime) })
	row("controller CPU s (self + git)", func(p Phase) string {
		return fmt.Sprintf("%.1f (%.1f + %.1f)", p.ControllerCPU.total(), p.ControllerCPU.Self, p.ControllerCPU.Children)
	})
	row("kube-apiserver + etcd CPU s", func(p Phase) string { return fmt.Sprintf("%.1f", p.ServerCPU.total()) })
	row("bench process CPU s (watches)", func(p Phase) string { return fmt.Sprintf("%.1f", p.BenchCPU.total()) })
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	deployments := r.Clusters * r.Sets
	fmt.Fprintf(tw, "objects created\t%d Repository, %d WorkloadCluster, %d PackageSet by the bench in %s; %d PackageDeployment by the controller\n",
		r.Repositories, r.Clusters, r.Sets, secs(r.Create), deployments)
	fmt.Fprintf(tw, "controller peak RSS\t%s\n", mib(r.PeakRSS))
	fmt.Fprintf(tw, "controller git mirrors on disk\t%s\n", size(r.CacheBytes))
	fmt.Fprintf(tw, "controller CPU s (total)\t%.1f\n", r.Cold.ControllerCPU.total()+r.Bump.ControllerCPU.total())
	f := r.FastImport
	fmt.Fprintf(tw, "git fast-import\t%d commits into %d repositories in %s, %s; commits identical to flotilla's: %d/%d\n",
		f.Commits, f.Repos, secs(f.Time), size(f.Bytes), f.Identical, f.Repos)
	wall := r.Cold.Time + r.Bump.Time
	fmt.Fprintf(tw, "publish / fast-import\t%s end to end (%s / %s); %s inside publish (%s / %s)\n",
		ratio(wall, f.Time), secs(wall), secs(f.Time), ratio(r.Cold.PublishTime+r.Bump.PublishTime, f.Time), secs(r.Cold.PublishTime+r.Bump.PublishTime), secs(f.Time))
	l := r.Local
	fmt.Fprintf(tw, "local mode (flotilla render)\tcold %s, bump %s; %d commits, %s; failed clusters %d; trees identical to the controller's: %d/%d\n",
		secs(l.Cold), secs(l.Bump), l.Git.Commits, size(l.Git.Bytes), l.Failed, l.Identical, r.Clusters)
	return tw.Flush()
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
