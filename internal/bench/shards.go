package bench

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
)

// ShardsReport is what the shard phases showed (Options.Shards).
type ShardsReport struct {
	// Names and Clusters are the shards and how many clusters each has.
	Names    []string
	Clusters []int
	// ColdPublished are the deployed-packages revisions each shard's controller published in the
	// cold phase (flotilla_publish_total{result="published"}): its own clusters, once each.
	ColdPublished []float64
	// Killed is the shard killed in the kill phase; KilledCommits are the commits its clusters'
	// repositories got in that phase and KilledMoved its clusters that published s-00's new pin:
	// both 0 when no other shard touches its clusters.
	Killed                     string
	KilledCommits, KilledMoved int
}

// shardPhases kills the last shard (SIGKILL, its lease left to expire) and moves set s-00 back
// to v1 in every shard, waiting for the live shards' clusters only; then it restarts the shard
// and waits for every cluster.
func (b *run) shardPhases(ctx context.Context) error {
	r := b.report
	dead := b.f.shards - 1
	deadClusters := b.f.shardClusters(dead)
	var live []string
	for k := range dead {
		live = append(live, b.f.shardClusters(k)...)
	}
	r.Shards.Killed = b.f.shardName(dead)
	before, err := statRepos(b.repos, deadClusters)
	if err != nil {
		return err
	}
	b.waitFor = live
	r.KillPhase, err = b.phase(ctx, "kill", phaseKill, func() error {
		b.progressf("kill: SIGKILL to the controller of %s (%d clusters)", r.Shards.Killed, len(deadClusters))
		if err := b.ctrl.procs[len(b.ctrl.procs)-1].kill(ctx); err != nil {
			return err
		}
		return b.move(0, "v2", "v1")
	})
	b.waitFor = nil
	if err != nil {
		return err
	}
	after, err := statRepos(b.repos, deadClusters)
	if err != nil {
		return err
	}
	r.Shards.KilledCommits = after.sub(before).Commits
	r.Shards.KilledMoved = b.t.convergedAmong(deadClusters)
	r.RecoverPhase, err = b.phase(ctx, "recover", phaseRecover, func() error {
		b.progressf("recover: %s's controller restarted (it waits for the killed one's lease to expire)", r.Shards.Killed)
		return b.startShard(dead)
	})
	return err
}

// shardsAfterCold records each shard's clusters and what its controller published in the cold
// phase (the processes' counters start with it).
func (b *run) shardsAfterCold(ctx context.Context) error {
	s := &b.report.Shards
	for k, p := range b.ctrl.procs {
		m, err := p.scrape(ctx)
		if err != nil {
			return err
		}
		s.Names = append(s.Names, b.f.shardName(k))
		s.Clusters = append(s.Clusters, len(b.f.shardClusters(k)))
		s.ColdPublished = append(s.ColdPublished, m.sum("flotilla_publish_total", `result="published"`))
	}
	return nil
}

// printShards writes the shard table: one row per shard, then what the kill showed.
func (r *Report) printShards(w io.Writer) error {
	s := r.Shards
	if len(s.Names) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n%d shards (one controller process each, --watch-label-selector %s=NAME, --leader-elect)\n", len(s.Names), shardLabel)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SHARD\tCLUSTERS\tCOLD: DEPLOYED-PACKAGES PUBLISHED")
	for i, name := range s.Names {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\n", name, s.Clusters[i], s.ColdPublished[i])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "killed %s: while it was down its clusters' repositories got %d commits and %d of its clusters published s-00's new pin (0 and 0: no other shard touched them); the live shards' clusters converged in %s; restarted, it caught up in %s\n",
		s.Killed, s.KilledCommits, s.KilledMoved, secs(r.KillPhase.Time), secs(r.RecoverPhase.Time))
	return nil
}
