package bench

import (
	"encoding/json"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// phase is a part of the run whose writes are counted apart.
type phase int

const (
	phaseSetup          phase = iota // the bench creates the objects
	phaseCold                        // the controller converges the fleet from nothing published
	phaseBump                        // one set's blueprint moves v1→v2
	phaseRollout                     // the same set rolls out v2→v1 step by step (--rollout-steps)
	phaseRolloutForward              // and v1→v2 again
	phaseIdle                        // nothing changes (--idle)
	phaseKill                        // a shard is killed, s-00 moves back to v1 (--shards)
	phaseRecover                     // the shard restarts
	numPhases
)

// Kinds whose writes are counted.
const (
	kindCluster    = "WorkloadCluster"
	kindDeployment = "PackageDeployment"
	kindSet        = "PackageSet"
)

// writes counts the MODIFIED events of one object in one phase by what changed: the spec
// (generation moved), metadata (finalizers, labels, annotations, owners) or else the status.
type writes struct{ status, meta, spec int }

type record struct {
	generation int64
	meta       string
	writes     [numPhases]writes
}

// tracker follows the watch events of the fleet's objects: it counts writes per object and
// phase, and knows which clusters publish the wanted pin of every set.
type tracker struct {
	f fleet

	mu        sync.Mutex
	phase     phase
	objects   map[string]map[string]*record // kind → name → record
	wanted    map[string]string             // set → the tag its deployments must pin
	pins      map[string][]v1alpha1.PublishedPin
	converged map[string]bool
	last      time.Time // last event
	lastGain  time.Time // last event that made a cluster converge
	// convergedAt is when each cluster last became converged.
	convergedAt map[string]time.Time
}

func newTracker(f fleet) *tracker {
	t := &tracker{
		f:         f,
		objects:   map[string]map[string]*record{kindCluster: {}, kindDeployment: {}, kindSet: {}},
		wanted:    map[string]string{},
		pins:      map[string][]v1alpha1.PublishedPin{},
		converged: map[string]bool{},
		last:      time.Now(),

		convergedAt: map[string]time.Time{},
	}
	for s := range f.sets {
		t.wanted[f.set(s)] = f.pkg(s) + "/v1"
	}
	return t
}

func (t *tracker) setPhase(p phase) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.phase = p
}

// want changes the tag set's deployments must pin, and re-evaluates every cluster.
func (t *tracker) want(set, tag string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.wanted[set] = tag
	for c := range t.pins {
		t.evaluate(c)
	}
}

// observe records one watch event of kind.
func (t *tracker) observe(kind string, typ watch.EventType, obj metav1.Object) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.last = time.Now()
	recs := t.objects[kind]
	name := obj.GetName()
	meta := metaKey(obj)
	switch typ {
	case watch.Added:
		if recs[name] == nil { // else a re-list after a lost watch: not a write
			recs[name] = &record{}
		}
	case watch.Modified:
		r := recs[name]
		if r == nil {
			r = &record{generation: obj.GetGeneration(), meta: meta}
			recs[name] = r
		}
		w := &r.writes[t.phase]
		switch {
		case obj.GetGeneration() != r.generation:
			w.spec++
		case meta != r.meta:
			w.meta++
		default:
			w.status++
		}
	case watch.Deleted:
		delete(recs, name)
		if kind == kindCluster {
			delete(t.pins, name)
			delete(t.converged, name)
			delete(t.convergedAt, name)
		}
		return
	default:
		return
	}
	r := recs[name]
	r.generation, r.meta = obj.GetGeneration(), meta
	if c, ok := obj.(*v1alpha1.WorkloadCluster); ok {
		t.pins[name] = nil
		if dp := c.Status.DeployedPackages; dp != nil {
			t.pins[name] = dp.Packages
		}
		t.evaluate(name)
	}
}

// metaKey is what a metadata write can change: finalizers, labels, annotations, owners, deletion.
func metaKey(obj metav1.Object) string {
	b, _ := json.Marshal([]any{obj.GetFinalizers(), obj.GetLabels(), obj.GetAnnotations(), obj.GetOwnerReferences(), obj.GetDeletionTimestamp()})
	return string(b)
}

// evaluate decides whether cluster publishes exactly one pin per set, each at the wanted tag.
func (t *tracker) evaluate(cluster string) {
	pins := t.pins[cluster]
	ok := len(pins) == len(t.wanted)
	for _, p := range pins {
		set := strings.TrimSuffix(p.Deployment, "-"+cluster)
		ok = ok && t.wanted[set] == p.Tag
	}
	if ok && !t.converged[cluster] {
		t.lastGain = time.Now()
		t.convergedAt[cluster] = t.lastGain
	}
	t.converged[cluster] = ok
}

// progress is a snapshot for the progress line.
type progress struct {
	converged, clusters, deployments int
	quiet                            time.Duration
	lastGain                         time.Time
}

func (t *tracker) progress() progress {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := progress{clusters: len(t.objects[kindCluster]), deployments: len(t.objects[kindDeployment]), quiet: time.Since(t.last), lastGain: t.lastGain}
	for _, ok := range t.converged {
		if ok {
			p.converged++
		}
	}
	return p
}

// writeStats summarizes the writes to the objects of one kind in one phase.
type writeStats struct {
	Objects                          int
	Status, Meta, Spec               int // totals
	MaxStatus, MaxMeta, MaxSpec      int // the most any one object got
	StatusPerObject, WritesPerObject float64
}

func (t *tracker) writeStats(kind string, p phase) writeStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := writeStats{Objects: len(t.objects[kind])}
	for _, r := range t.objects[kind] {
		w := r.writes[p]
		s.Status, s.Meta, s.Spec = s.Status+w.status, s.Meta+w.meta, s.Spec+w.spec
		s.MaxStatus, s.MaxMeta, s.MaxSpec = max(s.MaxStatus, w.status), max(s.MaxMeta, w.meta), max(s.MaxSpec, w.spec)
	}
	if s.Objects > 0 {
		s.StatusPerObject = float64(s.Status) / float64(s.Objects)
		s.WritesPerObject = float64(s.Status+s.Meta+s.Spec) / float64(s.Objects)
	}
	return s
}

// convergedAmong counts the clusters of names that publish the wanted pins.
func (t *tracker) convergedAmong(names []string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, c := range names {
		if t.converged[c] {
			n++
		}
	}
	return n
}

// lastConverged is when the last of clusters became converged (zero if one has not).
func (t *tracker) lastConverged(clusters []string) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	var last time.Time
	for _, c := range clusters {
		at, ok := t.convergedAt[c]
		if !ok || !t.converged[c] {
			return time.Time{}
		}
		if at.After(last) {
			last = at
		}
	}
	return last
}
