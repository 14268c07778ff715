package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/rollout"
)

// waveLabel puts each cluster of a fleet with rollout steps into one wave: the rollout phases
// partition by it (partitionBy), one step per wave.
const waveLabel = "bench.flotilla.dev/wave"

// wave is cluster i's wave label value: the fleet split in contiguous, equal waves.
func (f fleet) wave(i int) string { return fmt.Sprintf("w%02d", i*f.waves/f.clusters) }

// Rollout is what a rollout phase measured, step by step. Health is simulated: no agent runs, so
// a deployment counts healthy once its cluster published it, and every second of a step is the
// controller's (deciding, pinning, publishing, reporting back).
type Rollout struct {
	From, To string
	Steps    []RolloutStep
}

// RolloutStep is one step: from the moment the set's status names it until every cluster of its
// wave published the new pin (Publish), and from then until the set started the next step (Gap:
// the deployments report Ready, the set sees them and decides).
type RolloutStep struct {
	Wave     string
	Clusters int
	Publish  time.Duration
	Gap      time.Duration
}

// rollout rolls set s-00 from its revision to `to` with partitionBy over the waves, one step per
// wave (each wave at once: maxUnavailable 100%), and records when each step starts.
func (b *run) rollout(to string, out *Rollout, watch *stepWatch) func() error {
	return func() error {
		ctx := context.Background()
		set := &v1alpha1.PackageSet{}
		if err := b.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: b.f.set(0)}, set); err != nil {
			return err
		}
		out.From, out.To = set.Spec.Package.Revision, to
		before := set.DeepCopy()
		all := intstr.FromString("100%")
		set.Spec.Strategy = v1alpha1.RolloutStrategy{Type: v1alpha1.StrategyRollingUpdate, RollingUpdate: &v1alpha1.RollingUpdate{
			PartitionBy: waveLabel, Steps: []v1alpha1.RolloutStep{{MaxUnavailable: &all}},
		}}
		set.Spec.Package.Revision = to
		b.t.want(set.Name, b.f.pkg(0)+"/"+to)
		b.progressf("rollout: PackageSet %s %s %s→%s in %d steps (partitionBy %s)", set.Name, set.Spec.Package.Name, out.From, to, b.f.waves, waveLabel)
		if err := b.c.Patch(ctx, set, client.MergeFrom(before)); err != nil {
			return err
		}
		watch.start(b.c, client.ObjectKeyFromObject(set), b.f.pkg(0)+"/"+to)
		return nil
	}
}

// stepWatch polls the set's rollout status and records when each partition's step starts.
type stepWatch struct {
	mu      sync.Mutex
	started map[string]time.Time // wave → first seen as the current step
	stop    chan struct{}
	done    chan struct{}
}

func newStepWatch() *stepWatch {
	return &stepWatch{started: map[string]time.Time{}, stop: make(chan struct{}), done: make(chan struct{})}
}

func (w *stepWatch) start(c client.Client, key client.ObjectKey, revision string) {
	go func() {
		defer close(w.done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			set := &v1alpha1.PackageSet{}
			if err := c.Get(context.Background(), key, set); err == nil {
				if r := set.Status.Rollout; r != nil && r.Revision == revision && !rollout.Done(r) {
					w.mu.Lock()
					if _, seen := w.started[r.Partition]; !seen {
						w.started[r.Partition] = time.Now()
					}
					w.mu.Unlock()
				}
			}
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}()
}

// finish stops polling and computes the steps: the waves in order, each with its clusters.
func (w *stepWatch) finish(b *run, t0 time.Time, out *Rollout) {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	byWave := map[string][]string{}
	for i := range b.f.clusters {
		byWave[b.f.wave(i)] = append(byWave[b.f.wave(i)], b.f.cluster(i))
	}
	waves := make([]string, 0, len(byWave))
	for v := range byWave {
		waves = append(waves, v)
	}
	slices.Sort(waves)
	start := t0
	for i, v := range waves {
		if at, ok := w.started[v]; ok && i > 0 {
			start = at
		}
		published := b.t.lastConverged(byWave[v])
		s := RolloutStep{Wave: v, Clusters: len(byWave[v])}
		if !published.IsZero() {
			s.Publish = max(published.Sub(start), 0)
			if i+1 < len(waves) {
				if next, ok := w.started[waves[i+1]]; ok {
					s.Gap = max(next.Sub(published), 0)
				}
			}
		}
		out.Steps = append(out.Steps, s)
	}
}

// rolloutPhases runs the two rollout phases: s-00 back to v1 and forward to v2 again, so the
// fleet ends where the bump left it (the local mode compares the trees).
func (b *run) rolloutPhases(ctx context.Context) error {
	r := b.report
	for _, leg := range []struct {
		name string
		p    phase
		to   string
		out  *Rollout
		ph   *Phase
	}{
		{"rollout", phaseRollout, "v1", &r.Rollout, &r.RolloutPhase},
		{"forward", phaseRolloutForward, "v2", &r.Forward, &r.ForwardPhase},
	} {
		w := newStepWatch()
		t0 := time.Now()
		var err error
		*leg.ph, err = b.phase(ctx, leg.name, leg.p, b.rollout(leg.to, leg.out, w))
		w.finish(b, t0, leg.out)
		if err != nil {
			return err
		}
	}
	return nil
}

// labelWaves gives a cluster object its wave label (fleets with rollout steps).
func (f fleet) labelWaves(i int, labels map[string]string) map[string]string {
	if f.waves == 0 {
		return labels
	}
	out := maps.Clone(labels)
	out[waveLabel] = f.wave(i)
	return out
}
