// Package workloadcluster reconciles WorkloadCluster: it renders the cluster's deployed-packages
// from the pins of its PackageDeployments and publishes it (Automatic) or proposes it and
// publishes on approval (Manual).
package workloadcluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/bootstrap"
	"github.com/flotilla-dev/flotilla/internal/conditions"
	"github.com/flotilla-dev/flotilla/internal/controller/index"
	"github.com/flotilla-dev/flotilla/internal/facts"
	"github.com/flotilla-dev/flotilla/internal/fleet"
	"github.com/flotilla-dev/flotilla/internal/generate"
	"github.com/flotilla-dev/flotilla/internal/gitremote"
	"github.com/flotilla-dev/flotilla/internal/metrics"
	"github.com/flotilla-dev/flotilla/internal/patch"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
	"github.com/flotilla-dev/flotilla/internal/remotecluster"
	"github.com/flotilla-dev/flotilla/internal/render"
)

// Reconciler reconciles WorkloadCluster objects.
type Reconciler struct {
	Client client.Client
	// APIReader reads Secrets without caching them.
	APIReader client.Reader
	// Git resolves and publishes, and reads what a cluster's branch holds.
	Git interface {
		fleet.Git
		fleet.Branch
	}
	Events events.EventRecorder
	// Clients reach workload clusters that have spec.kubeConfigSecretRef.
	Clients *remotecluster.Clients
	// Workers is how many clusters are reconciled (published) at once (at least 1).
	Workers int
	// FactsInterval is how often a cluster's facts are read again (default DefaultFactsInterval).
	FactsInterval time.Duration
	// RootSyncCheck is how often the root sync objects are checked in the workload cluster, and
	// applied again when they changed there (default DefaultRootSyncCheck).
	RootSyncCheck time.Duration
	// PinCorrected brings back the reconciler of a deployment (not suspended) whose reported pin
	// pins() did not keep (it went back from the published one), so its status reports the pin
	// published instead. Nil: nothing is brought back.
	PinCorrected func(context.Context, client.ObjectKey)

	// published remembers, per cluster, the digest of what was last published and when, so a
	// reconcile that would write the same tree skips the git round trip (at most verifyEvery).
	publishedMu sync.Mutex
	published   map[client.ObjectKey]publishedDigest
	// factsRead remembers when each cluster's facts were last read.
	factsRead map[client.ObjectKey]time.Time
	// applied remembers, per cluster, what bootstrap last applied (the objects, through which
	// kubeconfig, and the resourceVersions the API server answered with) and when, so an
	// unchanged root sync object is checked only every RootSyncCheck, not on every reconcile,
	// and applied again only when it changed there.
	applied map[client.ObjectKey]appliedRoot
}

type appliedRoot struct {
	digest  [sha256.Size]byte
	at      time.Time
	objects []bootstrap.Applied
	// from names the cluster and repository objects (their resourceVersions) and the client
	// (kubeconfig) the digest was last rendered from: while none of them changed, the objects
	// are the same and are not rendered again before the next check.
	from string
}

// DefaultFactsInterval is how often a cluster's facts are read by default.
const DefaultFactsInterval = 5 * time.Minute

type publishedDigest struct {
	digest string
	commit string // the commit the publish left on the branch
	at     time.Time
	// inputs identify the objects of the last render that gave digest (see renderInputs), and
	// held is what that render held back: the same inputs render the same tree.
	inputs [sha256.Size]byte
	held   map[string]string
}

// verifyEvery is how often a cluster whose deployed-packages did not change is checked against
// git anyway, repairing edits made there by hand.
const verifyEvery = 10 * time.Minute

// DefaultRootSyncCheck is how often the root sync objects are checked in the workload cluster by
// default: applied again when they are not as flotilla applied them (restoring drift).
const DefaultRootSyncCheck = 10 * time.Minute

func (r *Reconciler) rootSyncCheck() time.Duration {
	if r.RootSyncCheck > 0 {
		return r.RootSyncCheck
	}
	return DefaultRootSyncCheck
}

// +kubebuilder:rbac:groups=flotilla.dev,resources=workloadclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=flotilla.dev,resources=workloadclusters/status,verbs=patch
// +kubebuilder:rbac:groups=flotilla.dev,resources=packagedeployments;repositories;packagesets,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile publishes the cluster's deployed-packages.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	cluster := &v1alpha1.WorkloadCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			r.Clients.Forget(req.NamespacedName)
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	p := patch.New(r.Client, cluster)
	defer func() {
		conditions.ObserveGeneration(cluster.Status.Conditions, cluster.Generation, &cluster.Status.ObservedGeneration)
		if perr := p.Patch(ctx, cluster); perr != nil {
			// The status may now say less than the branch holds: publish on the next reconcile.
			r.forgetPublish(req.NamespacedName)
			if err == nil {
				err = perr
			}
		}
	}()
	if !cluster.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if cluster.Spec.Suspend {
		setSuspended(cluster)
		return ctrl.Result{}, nil
	}

	// A failure forgets the last publish: the reconcile after it renders and publishes (one
	// request when nothing changed), which proves git and the credentials work again and sets
	// Ready from what it finds, instead of trusting a publish made before the failure.
	fail := func(err error) {
		r.forgetPublish(req.NamespacedName)
		setFailed(cluster, err)
	}
	repos := &repositories{r: r, namespace: cluster.Namespace}
	repo, err := repos.get(ctx, cluster.Spec.Repository.Name)
	if err == nil && repo.Spec.Git == nil {
		err = gitremote.NotGit(repo)
	}
	if err != nil {
		fail(err)
		return ctrl.Result{}, ignoreUserError(err)
	}
	if other, err := r.otherWriter(ctx, cluster, repo); err != nil || other != nil {
		if other != nil {
			// Forget the last publish: when this cluster writes again, it checks git first.
			r.forget(req.NamespacedName)
			setRepositoryInUse(cluster, repo, other)
			if dp := cluster.Status.DeployedPackages; dp != nil && dp.Location != index.ClusterLocation(cluster, repo) {
				// The cluster left where it published: it no longer holds that place (and must
				// not win it back over the one writing there now by a stale status).
				cluster.Status.DeployedPackages, cluster.Status.Proposal = nil, nil
			}
		}
		return ctrl.Result{}, err
	}
	remote, err := repos.remote(ctx, repo)
	if err != nil {
		fail(err)
		return ctrl.Result{}, ignoreUserError(err)
	}
	if sets, err := r.setsPending(ctx, cluster); err != nil || sets > 0 {
		// A PackageSet that may target the cluster is still writing its deployments: wait for
		// them, so a new set (or a fleet starting cold) is one commit per cluster, not one per set.
		// The set's status brings the cluster back when it is done (see forSet).
		return ctrl.Result{RequeueAfter: pendingRecheck}, err
	}
	// The revision published in another place (the cluster moved) is not this place's: it neither
	// keeps deployments published here nor is the base of resolves and approvals.
	loc := index.ClusterLocation(cluster, repo)
	published, proposal := cluster.Status.DeployedPackages, cluster.Status.Proposal
	if published != nil && index.Published(cluster, repo) == nil {
		published, proposal = nil, nil
	}
	if cluster.Status.DeployedPackages == nil {
		// Nothing published by the status: a new cluster, or its status lost (a restore of the
		// management cluster without it). What the branch holds is deployed, and it is the base
		// as when the status says so: latest never goes back from it, and a deployment it carries
		// is not undeployed for want of a pin. One read of the mirror (the fetch a first publish
		// makes anyway). A cluster that moved starts at its new place from nothing, as before:
		// what an earlier writer left there is not its history.
		if published, err = fleet.Current(ctx, r.Git, remote, render.ClusterPackagePath(cluster, repo)); err != nil {
			fail(err)
			return ctrl.Result{}, ignoreUserError(err)
		}
		if published != nil {
			published.Location = loc
			cluster.Status.DeployedPackages = published
		}
	}
	pins, err := r.pins(ctx, cluster, repos, published)
	if err != nil {
		fail(err)
		if errors.Is(err, errPinUnknown) {
			// Its deployment's report (or a person's fix) brings the cluster back; the recheck
			// is for a report this reconcile missed.
			return ctrl.Result{RequeueAfter: pendingRecheck}, nil
		}
		return ctrl.Result{}, ignoreUserError(err)
	}
	inputs := renderInputs(cluster, repo, pins, published)
	if held, ok := r.renderedBefore(cluster, inputs); ok {
		// The same inputs as a render whose tree the last publish wrote: the same tree again
		// (status writes after a publish, and the periodic facts and bootstrap passes, end here).
		metrics.Renders.WithLabelValues("reused").Inc()
		return r.afterPublish(ctx, cluster, repo, fleet.Rendered{Held: held}.Kept(pins))
	}
	metrics.Renders.WithLabelValues("rendered").Inc()
	rendered, err := fleet.Render(cluster, repo, pins, published)
	if err != nil {
		fail(err)
		return ctrl.Result{}, nil
	}
	if r.upToDate(cluster, rendered.Digest, inputs, rendered.Held) {
		return r.afterPublish(ctx, cluster, repo, rendered.Kept(pins))
	}
	start := time.Now()
	out, err := fleet.Publish(ctx, r.Git, remote, cluster, repo, rendered, published, proposal)
	metrics.PublishSeconds.Observe(time.Since(start).Seconds())
	if out.Published != nil && out.Published != published {
		out.Published.Location = loc
	}
	if out.Published != nil || published == nil {
		cluster.Status.DeployedPackages = out.Published
	}
	cluster.Status.Proposal = out.Proposal
	if err != nil {
		reason, _ := reason(err)
		metrics.GitErrors.WithLabelValues(reason).Inc()
		metrics.Publishes.WithLabelValues("failed").Inc()
		fail(err)
		return ctrl.Result{}, ignoreUserError(err)
	}
	metrics.Publishes.WithLabelValues(outcome(out)).Inc()
	r.recordEvent(cluster, out)
	before := meta.FindStatusCondition(cluster.Status.Conditions, v1alpha1.ConditionReady)
	refused := before == nil || before.Message != out.Approval.Message
	setPublished(cluster, out, render.Caveats(cluster, pins)...)
	if refused {
		r.recordRefusedApproval(cluster, out.Approval)
	}
	if out.Proposal == nil {
		// The next reconcile reads the revision on the branch now: with it, these pins give the
		// same render (Hold keeps every pin it carries, and it carries exactly those this render
		// kept), so they are remembered as that render's inputs. Unknown (zero), it renders.
		var inputs [sha256.Size]byte
		var commit string
		if out.Published != nil {
			inputs, commit = renderInputs(cluster, repo, pins, out.Published), out.Published.Commit
		}
		r.remember(cluster, rendered.Digest, commit, inputs, rendered.Held)
	}
	return r.afterPublish(ctx, cluster, repo, rendered.Kept(pins))
}

// afterPublish keeps the root sync object applied and sums up health, for clusters flotilla can
// reach.
func (r *Reconciler) afterPublish(ctx context.Context, cluster *v1alpha1.WorkloadCluster, repo *v1alpha1.Repository, pins []render.Pin) (ctrl.Result, error) {
	if cluster.Spec.KubeConfigSecretRef == nil {
		return ctrl.Result{}, nil
	}
	setBootstrapped(cluster, r.bootstrap(ctx, cluster, repo))
	setHealthy(cluster, pins)
	interval := r.FactsInterval
	if interval <= 0 {
		interval = DefaultFactsInterval
	}
	if r.factsDue(cluster, interval) {
		f, err := r.facts(ctx, cluster)
		setFacts(cluster, f, err)
	}
	return ctrl.Result{RequeueAfter: min(r.rootSyncCheck(), interval)}, nil
}

// facts reads the cluster's facts from the workload cluster.
func (r *Reconciler) facts(ctx context.Context, cluster *v1alpha1.WorkloadCluster) (v1alpha1.ClusterFacts, error) {
	remote, err := r.Clients.For(ctx, r.APIReader, cluster)
	if err != nil {
		return v1alpha1.ClusterFacts{}, err
	}
	version, err := r.Clients.Version(ctx, r.APIReader, cluster)
	if err != nil {
		return v1alpha1.ClusterFacts{}, err
	}
	site := facts.DefaultConfigMap
	if cm := cluster.Spec.FactsConfigMap; cm != nil {
		site = *cm
	}
	f, err := facts.Read(ctx, remote, version, site)
	if err != nil {
		r.Clients.Failed(cluster)
	}
	return f, err
}

// factsDue reports whether the cluster's facts are due to be read (and marks them read now).
func (r *Reconciler) factsDue(cluster *v1alpha1.WorkloadCluster, interval time.Duration) bool {
	r.publishedMu.Lock()
	defer r.publishedMu.Unlock()
	key := client.ObjectKeyFromObject(cluster)
	if at, ok := r.factsRead[key]; ok && time.Since(at) < interval && cluster.Status.Facts != nil {
		return false
	}
	if r.factsRead == nil {
		r.factsRead = map[client.ObjectKey]time.Time{}
	}
	r.factsRead[key] = time.Now()
	return true
}

// upToDate reports whether the cluster's last publish wrote exactly this digest, recently, and
// nothing waits for approval. When it did, inputs (and what their render held) are remembered
// as giving that digest.
func (r *Reconciler) upToDate(cluster *v1alpha1.WorkloadCluster, digest string, inputs [sha256.Size]byte, held map[string]string) bool {
	r.publishedMu.Lock()
	defer r.publishedMu.Unlock()
	p, ok := r.lastPublish(cluster)
	if !ok || p.digest != digest {
		return false
	}
	p.inputs, p.held = inputs, held
	r.published[client.ObjectKeyFromObject(cluster)] = p
	return true
}

// renderedBefore reports whether the cluster's last publish is recent and came from a render of
// exactly these inputs (see upToDate), and what that render held back: rendering them again
// would give the same digest.
func (r *Reconciler) renderedBefore(cluster *v1alpha1.WorkloadCluster, inputs [sha256.Size]byte) (map[string]string, bool) {
	r.publishedMu.Lock()
	defer r.publishedMu.Unlock()
	p, ok := r.lastPublish(cluster)
	if !ok || p.inputs != inputs {
		return nil, false
	}
	return p.held, true
}

// lastPublish returns what remember recorded for the cluster while it may stand in for a
// publish: recent (verifyEvery), and what the cluster's status says: Ready because of a publish,
// and the commit that publish left on the branch. A status behind the publish (its write failed,
// or the cache has not seen it yet) makes the cluster publish again, which finds the branch as
// it is and writes the status. publishedMu must be held.
func (r *Reconciler) lastPublish(cluster *v1alpha1.WorkloadCluster) (publishedDigest, bool) {
	if !skipsPublish(cluster) {
		return publishedDigest{}, false
	}
	if c := meta.FindStatusCondition(cluster.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue || c.Reason != reasonPublished {
		return publishedDigest{}, false
	}
	p, ok := r.published[client.ObjectKeyFromObject(cluster)]
	if !ok || time.Since(p.at) >= verifyEvery || p.commit != cluster.Status.DeployedPackages.Commit {
		return publishedDigest{}, false
	}
	return p, true
}

// skipsPublish reports whether a cluster may skip a publish whose tree it wrote recently: not
// when it waits for approvals, has not published, or has a spec its reconciler has not finished.
func skipsPublish(cluster *v1alpha1.WorkloadCluster) bool {
	return cluster.Spec.Approval != v1alpha1.ApprovalManual && cluster.Status.DeployedPackages != nil && cluster.Status.ObservedGeneration == cluster.Generation
}

// remember records a publish of digest, which left commit on the branch, rendered from inputs
// with held held back.
func (r *Reconciler) remember(cluster *v1alpha1.WorkloadCluster, digest, commit string, inputs [sha256.Size]byte, held map[string]string) {
	r.publishedMu.Lock()
	defer r.publishedMu.Unlock()
	if r.published == nil {
		r.published = map[client.ObjectKey]publishedDigest{}
	}
	r.published[client.ObjectKeyFromObject(cluster)] = publishedDigest{digest: digest, commit: commit, at: time.Now(), inputs: inputs, held: held}
}

// forgetPublish drops what remember recorded for the cluster at key.
func (r *Reconciler) forgetPublish(key client.ObjectKey) {
	r.publishedMu.Lock()
	defer r.publishedMu.Unlock()
	delete(r.published, key)
}

func (r *Reconciler) forget(key client.ObjectKey) {
	r.publishedMu.Lock()
	defer r.publishedMu.Unlock()
	delete(r.published, key)
	delete(r.factsRead, key)
	delete(r.applied, key)
}

// bootstrap applies the cluster's root sync object in the workload cluster.
func (r *Reconciler) bootstrap(ctx context.Context, cluster *v1alpha1.WorkloadCluster, repo *v1alpha1.Repository) error {
	remote, err := r.Clients.For(ctx, r.APIReader, cluster)
	if err != nil {
		return err
	}
	identity := r.Clients.Identity(cluster)
	from := cluster.ResourceVersion + " " + repo.ResourceVersion + " " + hex.EncodeToString(identity[:])
	key := client.ObjectKeyFromObject(cluster)
	r.publishedMu.Lock()
	last, ok := r.applied[key]
	r.publishedMu.Unlock()
	recent := ok && time.Since(last.at) < r.rootSyncCheck()
	if recent && last.from == from {
		return nil // the same objects, applied or checked recently
	}
	objs, err := bootstrap.Objects(cluster, repo, "")
	if err != nil {
		return err
	}
	digest := sha256.Sum256(append(append([]byte{}, identity[:]...), objs...))
	if ok && last.digest == digest {
		if recent || r.untouched(ctx, cluster, remote, last.objects) {
			// Checked now (nothing to restore until the next check), or not due yet.
			at := last.at
			if !recent {
				at = time.Now()
			}
			r.publishedMu.Lock()
			r.applied[key] = appliedRoot{digest: digest, at: at, objects: last.objects, from: from}
			r.publishedMu.Unlock()
			return nil
		}
	}
	applied, err := bootstrap.Apply(ctx, remote, objs)
	if err != nil {
		r.Clients.Failed(cluster)
		r.publishedMu.Lock()
		delete(r.applied, key)
		r.publishedMu.Unlock()
		return err
	}
	r.publishedMu.Lock()
	if r.applied == nil {
		r.applied = map[client.ObjectKey]appliedRoot{}
	}
	r.applied[key] = appliedRoot{digest: digest, at: time.Now(), objects: applied, from: from}
	r.publishedMu.Unlock()
	return nil
}

// untouched reports whether every object bootstrap applied is still at the resourceVersion its
// apply answered with: nobody changed it since (not its spec, labels or status), so applying it
// again would write nothing. An object a health feed holds is read from it without a request;
// another is read with one GET. Any doubt (an error, an object gone) applies again.
func (r *Reconciler) untouched(ctx context.Context, cluster *v1alpha1.WorkloadCluster, remote *remotecluster.Client, applied []bootstrap.Applied) bool {
	if len(applied) == 0 {
		return false
	}
	for _, a := range applied {
		obj, held := r.Clients.Held(cluster, a.GVK, a.Namespace, a.Name)
		if !held {
			u, err := remote.Get(ctx, a.GVK, a.Namespace, a.Name)
			if err != nil {
				return false
			}
			obj = u
		}
		if obj == nil || a.ResourceVersion == "" || obj.GetResourceVersion() != a.ResourceVersion {
			return false
		}
	}
	return true
}

// pendingRecheck is how long a cluster waits for a PackageSet its reconciler has not processed
// yet before it checks again (the set's status write normally brings it back much sooner).
const pendingRecheck = 30 * time.Second

// pins collects the pins of the cluster's deployments that are not being deleted. A deployment
// whose current generation the PackageDeployment reconciler has not reported yet (new, or its
// revision changed) is resolved here, the same way and from the same cached mirror: that reconciler
// writes its status once, after this publish, instead of once before and once after. When that
// fails the deployment keeps its current pin (and its own reconciler reports the error).
func (r *Reconciler) pins(ctx context.Context, cluster *v1alpha1.WorkloadCluster, repos *repositories, published *v1alpha1.DeployedPackagesStatus) ([]render.Pin, error) {
	var list v1alpha1.PackageDeploymentList
	// The cache's objects are only read here, and the pins keep pointers to them for rendering.
	if err := r.Client.List(ctx, &list, client.InNamespace(cluster.Namespace), client.MatchingFields{index.DeploymentCluster: cluster.Name},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list deployments of %s: %w", cluster.Name, err)
	}
	var pins []render.Pin
	var draining []*v1alpha1.PackageDeployment
	var unpinned []string
	for i := range list.Items {
		pd := &list.Items[i]
		if !pd.DeletionTimestamp.IsZero() {
			if fleet.MustDrain(cluster, pd, published) {
				draining = append(draining, pd)
			}
			continue
		}
		resolved := pd.Status.Resolved
		// A reported pin that latest took back from the one published is not kept: it was resolved
		// without the published revision (its report raced a newer publish, or the cluster's
		// status was lost then). It is resolved again here against it, or not published.
		behind := resolved != nil && fleet.Unmoved(fleet.PublishedPin(published, pd.Name, resolved.Repository), *resolved, pd.Spec.Package.Revision) != nil
		if behind {
			resolved = nil
			if r.PinCorrected != nil && !pd.Spec.Suspend {
				// Its status says the pin it reported. (A suspended one resolves nothing: its report
				// stays until it is resumed.)
				r.PinCorrected(ctx, client.ObjectKeyFromObject(pd))
			}
		}
		var ask *v1alpha1.PackageDeployment // what is resolved here, at most once
		switch {
		case pd.Spec.Suspend && resolved == nil:
			// Suspended with no pin it can keep (its status lost, or behind): it keeps the one
			// published, as `flotilla render` does.
			ask = fleet.AtPublished(pd, published)
		case resolving(pd) || behind:
			ask = pd
		}
		if ask != nil {
			// On error a resolving deployment keeps its current pin (its own reconciler reports it).
			if rev, err := r.resolve(ctx, cluster, ask, repos, published); err == nil {
				resolved = &rev
			}
		}
		if resolved == nil {
			// Render leaves out what the engine refuses (the deployment says NotAccepted); any
			// other deployment the published revision carries would be undeployed for want of a pin.
			if tag := fleet.PublishedTag(published, pd.Name); tag != "" && render.Accepts(cluster, pd) == nil {
				unpinned = append(unpinned, fmt.Sprintf("%s (%s)", pd.Name, tag))
			}
			continue
		}
		repo, err := repos.get(ctx, resolved.Repository)
		if err != nil {
			return nil, err
		}
		pins = append(pins, fleet.NewPin(pd, repo, *resolved))
	}
	if len(unpinned) > 0 {
		return nil, fmt.Errorf("%w: the published revision carries %s, with no pin to keep: its PackageDeployment has not reported one, "+
			"or one that goes back from the published tag (see its conditions; a revision that cannot be resolved, or a status lost), "+
			"and leaving it out would undeploy it. "+
			"Set a revision that resolves in spec.package.revision (a suspended deployment keeps the published one: unsuspend it to choose another), "+
			"or delete the PackageDeployment to undeploy it",
			errPinUnknown, strings.Join(unpinned, ", "))
	}
	if len(draining) == 0 {
		return pins, nil
	}
	drains, err := r.drainPins(ctx, cluster, repos, draining)
	return append(pins, drains...), err
}

// drainPins keeps the sync objects of deleted deployments that drain first (EmptyFirst) in
// deployed-packages, pointed at the cluster repository's empty package until their agent has
// pruned (the PackageDeployment reconciler watches that and records it in status.drain).
func (r *Reconciler) drainPins(ctx context.Context, cluster *v1alpha1.WorkloadCluster, repos *repositories, draining []*v1alpha1.PackageDeployment) ([]render.Pin, error) {
	repo, err := repos.get(ctx, cluster.Spec.Repository.Name)
	if err != nil {
		return nil, err
	}
	remote, err := repos.remote(ctx, repo)
	if err != nil {
		return nil, err
	}
	empty, err := fleet.EnsureEmptyPackage(ctx, r.Git, remote, repo)
	if err != nil {
		return nil, err
	}
	pins := make([]render.Pin, 0, len(draining))
	for _, pd := range draining {
		pin := fleet.NewPin(pd, repo, empty)
		pin.Drain = true
		pins = append(pins, pin)
	}
	return pins, nil
}

// resolve pins the revision pd asks for, as the PackageDeployment reconciler does.
func (r *Reconciler) resolve(ctx context.Context, cluster *v1alpha1.WorkloadCluster, pd *v1alpha1.PackageDeployment, repos *repositories, published *v1alpha1.DeployedPackagesStatus) (v1alpha1.ResolvedRevision, error) {
	name := cluster.Spec.Repository.Name
	if ref := pd.Spec.Package.Repository; ref != nil {
		name = ref.Name
	}
	repo, err := repos.get(ctx, name)
	if err != nil {
		return v1alpha1.ResolvedRevision{}, err
	}
	remote, err := repos.remote(ctx, repo)
	if err != nil {
		return v1alpha1.ResolvedRevision{}, err
	}
	return fleet.Resolve(ctx, r.Git, remote, repo, pd, published)
}

// repositories reads each Repository, and its git credentials, at most once per reconcile: a
// cluster's deployments mostly share one catalog, and credentials are read past the cache.
type repositories struct {
	r         *Reconciler
	namespace string
	objects   map[string]*v1alpha1.Repository
	remotes   map[string]pkgrepo.Remote
}

func (c *repositories) get(ctx context.Context, name string) (*v1alpha1.Repository, error) {
	if repo, ok := c.objects[name]; ok {
		return repo, nil
	}
	repo := &v1alpha1.Repository{}
	if err := c.r.Client.Get(ctx, client.ObjectKey{Namespace: c.namespace, Name: name}, repo); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: Repository %s/%s does not exist", errRepositoryNotFound, c.namespace, name)
		}
		return nil, err
	}
	if c.objects == nil {
		c.objects = map[string]*v1alpha1.Repository{}
	}
	c.objects[name] = repo
	return repo, nil
}

func (c *repositories) remote(ctx context.Context, repo *v1alpha1.Repository) (pkgrepo.Remote, error) {
	if remote, ok := c.remotes[repo.Name]; ok {
		return remote, nil
	}
	remote, err := gitremote.Remote(ctx, c.r.APIReader, repo)
	if err != nil {
		return pkgrepo.Remote{}, err
	}
	if c.remotes == nil {
		c.remotes = map[string]pkgrepo.Remote{}
	}
	c.remotes[repo.Name] = remote
	return remote, nil
}

// setsPending counts the PackageSets in the cluster's namespace that may target it and whose
// reconciler has not processed their current generation yet (a set being deleted holds nothing).
func (r *Reconciler) setsPending(ctx context.Context, cluster *v1alpha1.WorkloadCluster) (int, error) {
	var sets v1alpha1.PackageSetList
	if err := r.Client.List(ctx, &sets, client.InNamespace(cluster.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return 0, fmt.Errorf("list PackageSets: %w", err)
	}
	n := 0
	for i := range sets.Items {
		set := &sets.Items[i]
		if set.DeletionTimestamp.IsZero() && !processed(set) && generate.MayTarget(set, cluster.Name, cluster.Labels) {
			n++
		}
	}
	return n, nil
}

// processed reports whether the PackageSet reconciler has processed the set's current generation.
func processed(set *v1alpha1.PackageSet) bool {
	return conditions.Observed(set.Status.Conditions, set.Generation)
}

// resolving reports whether the PackageDeployment reconciler has yet to report pd's current
// generation.
func resolving(pd *v1alpha1.PackageDeployment) bool {
	return !pd.Spec.Suspend && !conditions.Observed(pd.Status.Conditions, pd.Generation)
}

var errRepositoryNotFound = errors.New("repository not found")

// errPinUnknown: a live deployment that the published revision carries has no pin (its reconciler
// reported none for its generation, or has not reported yet and the cluster's own resolve
// failed). The cluster publishes nothing until it has one: a publish would undeploy it.
var errPinUnknown = errors.New("no pin for a deployed deployment")

// ignoreUserError drops errors the user must fix (they are in the conditions; retrying at once
// would not help) and returns the others, so the work queue retries them with backoff.
func ignoreUserError(err error) error {
	if _, stalled := reason(err); stalled {
		return nil
	}
	return err
}

// outcome names what a publish did, for flotilla_publish_total.
func outcome(out fleet.Outcome) string {
	switch {
	case out.Approved:
		return "approved"
	case !out.Wrote:
		return "unchanged"
	case out.Proposal != nil:
		return "proposed"
	}
	return "published"
}

// recordRefusedApproval records an approval that published nothing, once per verdict (a reconcile
// with the same verdict finds it in the Ready condition already).
func (r *Reconciler) recordRefusedApproval(cluster *v1alpha1.WorkloadCluster, a fleet.ApprovalDecision) {
	if r.Events == nil {
		return
	}
	switch a.State {
	case fleet.ApprovalOutdated:
		r.Events.Eventf(cluster, nil, corev1.EventTypeWarning, ReasonApprovalOutdated, "Approve", "%s", a.Message)
	case fleet.ApprovalInvalid:
		r.Events.Eventf(cluster, nil, corev1.EventTypeWarning, ReasonApprovalInvalid, "Approve", "%s", a.Message)
	}
}

func (r *Reconciler) recordEvent(cluster *v1alpha1.WorkloadCluster, out fleet.Outcome) {
	if r.Events == nil || !out.Wrote {
		return
	}
	summary := render.Summary(out.Changes)
	switch {
	case out.Proposal != nil && !out.Approved:
		r.Events.Eventf(cluster, nil, corev1.EventTypeNormal, "Proposed", "Propose", "proposed %s: %s", out.Proposal.Branch, out.Proposal.Summary)
	case out.Published != nil:
		r.Events.Eventf(cluster, nil, corev1.EventTypeNormal, "Published", "Publish", "published %s: %s", out.Published.Tag, summary)
	}
}
