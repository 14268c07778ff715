package workloadcluster

import (
	"crypto/sha256"
	"fmt"
	"slices"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/render"
)

// renderInputs identifies everything fleet.Render reads for a cluster: the cluster's and its
// repository's specs (at their generations: render reads neither's status, labels nor
// annotations), the deployments the published revision carries (published, which Hold consults),
// and each pin: its deployment's spec (at its generation) and what the pin names (repository URL
// and branch, the resolved revision, drain). A change to any of these, a pin more or less, or a
// revision resolved otherwise gives other inputs; a status write (the cluster's own publish
// report, a deployment's, a repository's poll), the order in which the cache lists the
// deployments, or a new resourceVersion without a new generation does not: they change nothing
// the render reads.
func renderInputs(cluster *v1alpha1.WorkloadCluster, repo *v1alpha1.Repository, pins []render.Pin, published *v1alpha1.DeployedPackagesStatus) [sha256.Size]byte {
	lines := make([]string, 0, len(pins))
	for _, p := range pins {
		r := p.Resolved
		lines = append(lines, fmt.Sprintf("%s\x00%s\x00%d\x00%s\x00%s\x00%s\x00%d\x00%s\x00%s\x00%s\x00%s\x00%t\x00%t\n",
			p.Deployment.Name, p.Deployment.UID, p.Deployment.Generation, p.RepoURL, p.Branch,
			r.Repository, r.Revision, r.Tag, r.Commit, r.Directory, r.Image, p.Insecure, p.Drain))
	}
	slices.Sort(lines)
	var carried []string
	if published != nil {
		for _, p := range published.Packages {
			carried = append(carried, p.Deployment)
		}
	}
	slices.Sort(carried)
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%d\x00%s\x00%s\x00%d\n", cluster.Namespace, cluster.Name, cluster.UID, cluster.Generation, repo.Name, repo.UID, repo.Generation)
	fmt.Fprintf(h, "%d\x00%q\n", len(carried), carried)
	for _, l := range lines {
		h.Write([]byte(l))
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}
