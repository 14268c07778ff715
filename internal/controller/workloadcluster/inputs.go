package workloadcluster

import (
	"crypto/sha256"
	"fmt"
	"slices"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/render"
)

// renderInputs identifies everything fleet.Render reads for a cluster: the cluster and its
// repository at their resourceVersions (their specs, and the cluster's status, which holds the
// published revision that Hold consults), and each pin: its deployment at its resourceVersion and
// what the pin names (repository URL and branch, the resolved revision, drain). A write to any of
// these objects, a pin more or less, or a revision resolved otherwise gives other inputs; the
// order in which the cache lists the deployments does not.
func renderInputs(cluster *v1alpha1.WorkloadCluster, repo *v1alpha1.Repository, pins []render.Pin) [sha256.Size]byte {
	lines := make([]string, 0, len(pins))
	for _, p := range pins {
		r := p.Resolved
		lines = append(lines, fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%s\x00%s\x00%d\x00%s\x00%s\x00%s\x00%s\x00%t\x00%t\n",
			p.Deployment.Name, p.Deployment.UID, p.Deployment.ResourceVersion, p.RepoURL, p.Branch,
			r.Repository, r.Revision, r.Tag, r.Commit, r.Directory, r.Image, p.Insecure, p.Drain))
	}
	slices.Sort(lines)
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%s\x00%s\n", cluster.Name, cluster.UID, cluster.ResourceVersion, repo.Name, repo.UID, repo.ResourceVersion)
	for _, l := range lines {
		h.Write([]byte(l))
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}
