package workloadcluster

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/conditions"
	"github.com/flotilla-dev/flotilla/internal/fleet"
	"github.com/flotilla-dev/flotilla/internal/gitremote"
	"github.com/flotilla-dev/flotilla/internal/giturl"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
	"github.com/flotilla-dev/flotilla/internal/remotecluster"
	"github.com/flotilla-dev/flotilla/internal/render"
)

// reasonPublished is Ready's reason when the cluster's deployed-packages revision is published.
const reasonPublished = "Published"

// Reasons for an approval annotation that publishes nothing (see fleet.DecideApproval).
const (
	ReasonApprovalOutdated = "ApprovalOutdated"
	ReasonApprovalInvalid  = "ApprovalInvalid"
)

// setRepositoryInUse reports that other writes the deployed-packages cluster would write. The
// message names other by namespace/name only (it may be another tenant's) and cluster's own
// repository, never other's.
func setRepositoryInUse(c *v1alpha1.WorkloadCluster, repo *v1alpha1.Repository, other *v1alpha1.WorkloadCluster) {
	msg := fmt.Sprintf("WorkloadCluster %s/%s writes %s on branch %s of %s (of the clusters there, the one that published there writes, else the oldest); "+
		"give this cluster its own spec.sync.package, or a Repository of its own; nothing was published",
		other.Namespace, other.Name, render.ClusterPackagePath(c, repo), gitremote.Branch(repo), giturl.Redact(repo.Spec.Git.URL))
	conditions.Stalled(&c.Status.Conditions, c.Generation, ReasonRepositoryInUse, msg)
	c.Status.ObservedGeneration = c.Generation
}

func setSuspended(c *v1alpha1.WorkloadCluster) {
	conditions.Ready(&c.Status.Conditions, c.Generation, "Suspended", "spec.suspend is true: flotilla publishes nothing for this cluster")
	c.Status.ObservedGeneration = c.Generation
}

func reason(err error) (string, bool) {
	switch {
	case errors.Is(err, errRepositoryNotFound):
		return "RepositoryNotFound", true
	case errors.Is(err, errPinUnknown):
		return "PinUnknown", false
	case errors.Is(err, fleet.ErrRender):
		return "RenderFailed", true
	case errors.Is(err, pkgrepo.ErrProposalChanged), errors.Is(err, pkgrepo.ErrProposalNotFound), errors.Is(err, pkgrepo.ErrTagExists):
		return "ApprovalFailed", true
	}
	return gitremote.Reason(err)
}

// setBootstrapped reports whether the root sync object is applied in the workload cluster. It does
// not change Ready: publishing worked either way.
func setBootstrapped(c *v1alpha1.WorkloadCluster, err error) {
	if err != nil {
		conditions.Set(&c.Status.Conditions, c.Generation, v1alpha1.ConditionBootstrapped, false, remotecluster.Reason(err, "BootstrapFailed"), err.Error())
		return
	}
	conditions.Set(&c.Status.Conditions, c.Generation, v1alpha1.ConditionBootstrapped, true, "Applied",
		fmt.Sprintf("%s is applied in the cluster kubeConfigSecretRef names", render.RootName(c)))
}

// setFacts records the facts read from the cluster; on an error the previous facts stay (a
// cluster that cannot be read does not lose its facts, so nothing re-renders because of it).
func setFacts(c *v1alpha1.WorkloadCluster, f v1alpha1.ClusterFacts, err error) {
	if err != nil {
		conditions.Set(&c.Status.Conditions, c.Generation, v1alpha1.ConditionFactsRead, false, remotecluster.Reason(err, "FactsUnreadable"),
			err.Error()+"; keeping the facts read before")
		return
	}
	c.Status.Facts = &f
	conditions.Set(&c.Status.Conditions, c.Generation, v1alpha1.ConditionFactsRead, true, "Read",
		fmt.Sprintf("Kubernetes %s, %d nodes, %d site facts", f.KubernetesVersion, f.Nodes, len(f.Site)))
}

// setHealthy sums up the deployments' Synced conditions: the cluster is healthy when the agent
// reports every published pin applied.
func setHealthy(c *v1alpha1.WorkloadCluster, pins []render.Pin) {
	var waiting []string
	live := pins[:0:0]
	for _, p := range pins {
		if p.Deployment.DeletionTimestamp != nil {
			continue // undeploying: its health is the deployment's own drain
		}
		live = append(live, p)
		if !meta.IsStatusConditionTrue(p.Deployment.Status.Conditions, v1alpha1.ConditionSynced) {
			waiting = append(waiting, p.Deployment.Name)
		}
	}
	if len(waiting) == 0 {
		conditions.Set(&c.Status.Conditions, c.Generation, v1alpha1.ConditionHealthy, true, "Synced", fmt.Sprintf("all %d deployments synced", len(live)))
		return
	}
	sort.Strings(waiting)
	msg := fmt.Sprintf("%d of %d deployments not synced: %s", len(waiting), len(live), strings.Join(first(waiting, 5), ", "))
	conditions.Set(&c.Status.Conditions, c.Generation, v1alpha1.ConditionHealthy, false, "NotSynced", msg)
}

func first(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("and %d more", len(s)-n))
	}
	return s
}

func setFailed(c *v1alpha1.WorkloadCluster, err error) {
	r, stalled := reason(err)
	msg := err.Error() + "; nothing was published"
	if stalled {
		conditions.Stalled(&c.Status.Conditions, c.Generation, r, msg)
		return
	}
	conditions.Progressing(&c.Status.Conditions, c.Generation, r, msg+", retrying")
}

// setPublished reports what the publish did; caveats (render.Caveats) are added to the Ready
// message of a published revision.
func setPublished(c *v1alpha1.WorkloadCluster, out fleet.Outcome, caveats ...string) {
	gen := c.Generation
	c.Status.ObservedGeneration = gen
	if p := out.Proposal; p != nil {
		switch out.Approval.State {
		case fleet.ApprovalOutdated:
			// Still a proposal waiting for a person, as WaitingForApproval, but the person must know
			// that what they approved is not what is proposed.
			conditions.Progressing(&c.Status.Conditions, gen, ReasonApprovalOutdated, out.Approval.Message)
		case fleet.ApprovalInvalid:
			conditions.Stalled(&c.Status.Conditions, gen, ReasonApprovalInvalid, out.Approval.Message)
		default:
			msg := fmt.Sprintf("%s (%s) waits for approval: flotilla approve %s, or kubectl annotate workloadcluster %s %s=%s",
				p.Branch, p.Summary, c.Name, c.Name, v1alpha1.AnnotationApprove, p.Commit)
			conditions.Progressing(&c.Status.Conditions, gen, "WaitingForApproval", msg)
		}
		return
	}
	if out.Published == nil {
		conditions.Progressing(&c.Status.Conditions, gen, "Publishing", "no deployed-packages revision is published yet")
		return
	}
	msg := fmt.Sprintf("%s is published (%d packages)", out.Published.Tag, len(out.Published.Packages))
	for _, note := range caveats {
		msg += "; note: " + note
	}
	conditions.Ready(&c.Status.Conditions, gen, reasonPublished, msg)
}
