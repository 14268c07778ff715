package packagedeployment

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/conditions"
	"github.com/flotilla-dev/flotilla/internal/fleet"
	"github.com/flotilla-dev/flotilla/internal/gitremote"
	"github.com/flotilla-dev/flotilla/internal/health"
)

func setClusterMissing(pd *v1alpha1.PackageDeployment) {
	conditions.Stalled(&pd.Status.Conditions, pd.Generation, "ClusterNotFound",
		fmt.Sprintf("WorkloadCluster %s/%s does not exist: create it or fix spec.cluster.name", pd.Namespace, pd.Spec.Cluster.Name))
}

// setNotAccepted reports a deployment the cluster's engine cannot take: deployed-packages
// leaves it out, and only a change to the deployment or the cluster helps.
func setNotAccepted(pd *v1alpha1.PackageDeployment, err error) {
	msg := err.Error() + "; it is left out of deployed-packages"
	conditions.Set(&pd.Status.Conditions, pd.Generation, v1alpha1.ConditionPublished, false, "NotAccepted", msg)
	conditions.Stalled(&pd.Status.Conditions, pd.Generation, "NotAccepted", msg)
	pd.Status.ObservedGeneration = pd.Generation
}

// setResolveFailed reports a failed resolve and returns the error to retry with backoff: nil when
// only the user can fix it.
func setResolveFailed(pd *v1alpha1.PackageDeployment, err error) error {
	reason, stalled := gitremote.Reason(err)
	if errors.Is(err, errRepositoryNotFound) {
		reason, stalled = "RepositoryNotFound", true
	}
	msg := err.Error()
	if pd.Status.Resolved != nil {
		msg += fmt.Sprintf("; keeping the current pin %s (commit %s)", pd.Status.Resolved.Tag, pd.Status.Resolved.Commit)
	}
	if stalled {
		conditions.Stalled(&pd.Status.Conditions, pd.Generation, reason, msg)
		return nil
	}
	conditions.Progressing(&pd.Status.Conditions, pd.Generation, reason, msg+"; retrying")
	return err
}

// setPublication reports whether the cluster's published deployed-packages carries the pin;
// before is the status the deployment had when the reconcile began.
func setPublication(pd *v1alpha1.PackageDeployment, before *v1alpha1.PackageDeploymentStatus, cluster *v1alpha1.WorkloadCluster) {
	gen := pd.Generation
	want := pd.Status.Resolved
	got := publishedTag(cluster, pd.Name)
	switch {
	case want == nil:
		conditions.Progressing(&pd.Status.Conditions, gen, "Resolving", "resolving the package revision")
		return
	case got == want.Tag:
		// Keep the first revision that carried the pin: a later revision of the cluster's
		// deployed-packages (another deployment changed) is no change to this deployment, and
		// rewriting every deployment of a cluster on each publish would multiply status writes.
		msg, ok := publishedSince(before, want.Tag, cluster.Status.DeployedPackages.Revision)
		if !ok {
			dp := cluster.Status.DeployedPackages
			pd.Status.DeployedPackagesRevision = dp.Revision
			msg = fmt.Sprintf("%s pinned in %s", want.Tag, dp.Tag)
		}
		conditions.Set(&pd.Status.Conditions, gen, v1alpha1.ConditionPublished, true, "Published", msg)
		conditions.Ready(&pd.Status.Conditions, gen, "Published", msg)
	case cluster.Spec.Approval == v1alpha1.ApprovalManual && cluster.Status.Proposal != nil:
		p := cluster.Status.Proposal
		msg := fmt.Sprintf("%s waits for approval of %s: flotilla approve %s (or annotate it %s=%s)", want.Tag, p.Branch, cluster.Name, v1alpha1.AnnotationApprove, p.Commit)
		conditions.Set(&pd.Status.Conditions, gen, v1alpha1.ConditionPublished, false, "WaitingForApproval", msg)
		conditions.Progressing(&pd.Status.Conditions, gen, "WaitingForApproval", msg)
	default:
		msg := fmt.Sprintf("%s waits to be published in %s of cluster %s", want.Tag, "deployed-packages", cluster.Name)
		conditions.Set(&pd.Status.Conditions, gen, v1alpha1.ConditionPublished, false, "Publishing", msg)
		conditions.Progressing(&pd.Status.Conditions, gen, "Publishing", msg)
	}
	pd.Status.ObservedGeneration = gen
}

// publishedSince returns the Published message of the status the deployment had before this
// reconcile when it already reported tag published, in a revision (status.deployedPackagesRevision)
// no newer than the cluster's current one (its numbering restarts in another repository).
func publishedSince(before *v1alpha1.PackageDeploymentStatus, tag string, current int) (string, bool) {
	c := meta.FindStatusCondition(before.Conditions, v1alpha1.ConditionPublished)
	if c == nil || c.Status != metav1.ConditionTrue || before.Resolved == nil || before.Resolved.Tag != tag ||
		before.DeployedPackagesRevision == 0 || before.DeployedPackagesRevision > current {
		return "", false
	}
	return c.Message, true
}

// setSynced reports what the workload cluster's agent says of the pin.
func setSynced(pd *v1alpha1.PackageDeployment, h health.Result) {
	conditions.Set(&pd.Status.Conditions, pd.Generation, v1alpha1.ConditionSynced, h.Synced, h.Reason, h.Message)
}

func setUndeploying(pd *v1alpha1.PackageDeployment, cluster *v1alpha1.WorkloadCluster) {
	conditions.Progressing(&pd.Status.Conditions, pd.Generation, "Undeploying",
		fmt.Sprintf("waiting for a deployed-packages revision of cluster %s without this deployment", cluster.Name))
}

// Reasons of a drain (EmptyFirst undeploy).
const (
	reasonDraining      = "Draining"
	reasonDrainTimedOut = "DrainTimedOut"
)

// setDraining reports a drain in progress, from what the agent reports (h): Draining, and Stalled
// with DrainTimedOut once it takes longer than the cluster's drainTimeout. It keeps draining
// either way.
func setDraining(pd *v1alpha1.PackageDeployment, cluster *v1alpha1.WorkloadCluster, h health.Result) {
	age, timeout := drainAge(pd), fleet.DrainTimeout(cluster)
	// No age in the message: it would change on every read-back (status.drain.startedAt has it).
	msg := fmt.Sprintf("draining: the sync object points at the empty package until the agent of cluster %s has pruned what it applied (%s): %s",
		cluster.Name, h.Reason, h.Message)
	if age < timeout {
		conditions.Progressing(&pd.Status.Conditions, pd.Generation, reasonDraining, msg)
		return
	}
	conditions.Stalled(&pd.Status.Conditions, pd.Generation, reasonDrainTimedOut, fmt.Sprintf(
		"%s. This is longer than spec.sync.drainTimeout (%s) of the cluster; the sync object stays until the agent has pruned, since removing it now "+
			"would leave the workload running with nothing managing it: fix the agent, or set spec.deletionPolicy Orphan to remove the sync object and leave what is left running",
		msg, timeout))
}

// setDrained reports a drain the agent finished: the revision without the sync object comes next.
func setDrained(pd *v1alpha1.PackageDeployment, cluster *v1alpha1.WorkloadCluster, h health.Result) {
	conditions.Progressing(&pd.Status.Conditions, pd.Generation, "Drained", fmt.Sprintf(
		"%s; waiting for a deployed-packages revision of cluster %s without the sync object", h.Message, cluster.Name))
}

const reasonWaitingForDependency = "WaitingForDependency"

// setWaitingForDependency reports a deployment the cluster holds back (fleet.Hold) until dep, which
// it depends on, has a pin there.
func setWaitingForDependency(pd *v1alpha1.PackageDeployment, dep string, cluster *v1alpha1.WorkloadCluster) {
	msg := fmt.Sprintf("%s waits for %s, which it depends on, to be resolved and published on cluster %s", pd.Status.Resolved.Tag, dep, cluster.Name)
	conditions.Set(&pd.Status.Conditions, pd.Generation, v1alpha1.ConditionPublished, false, reasonWaitingForDependency, msg)
	conditions.Progressing(&pd.Status.Conditions, pd.Generation, reasonWaitingForDependency, msg)
}

// setDependencyInvalid reports a dependsOn that can never be met: the deployment is held back
// (or, published before its dependency went, kept as it is) until a person fixes it.
func setDependencyInvalid(pd *v1alpha1.PackageDeployment, err error) {
	reason := "DependencyNotFound"
	if errors.Is(err, fleet.ErrDependencyOtherCluster) {
		reason = "DependencyOnOtherCluster"
	}
	conditions.Stalled(&pd.Status.Conditions, pd.Generation, reason, err.Error())
}
