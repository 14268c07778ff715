package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
	"github.com/flotilla-dev/flotilla/internal/render"
)

// EmptyPackage is the name of the reserved package, in each cluster repository's directory, that
// an EmptyFirst undeploy points a sync object at (spec.sync.deletion): its only file is a Kptfile
// every engine skips (local config), so an agent syncing it prunes everything it applied. Its
// first revision is published once and never changes.
const EmptyPackage = "flotilla-empty"

// EmptyPackageFiles is the content of the empty package.
func EmptyPackageFiles() map[string][]byte {
	return map[string][]byte{"Kptfile": []byte(`apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: ` + EmptyPackage + `
  annotations:
    config.kubernetes.io/local-config: "true"
info:
  description: An empty package, written by flotilla. A sync object of an undeployed package points here until its agent has pruned what it applied (spec.sync.deletion EmptyFirst). Do not edit or delete it.
`)}
}

// EmptyPackagePath is the path of the empty package in clusterRepo (no leading slash).
func EmptyPackagePath(clusterRepo *v1alpha1.Repository) string {
	return render.PackagePath(clusterRepo.Spec.Git.Directory, EmptyPackage)
}

// EnsureEmptyPackage returns the empty package's first revision in clusterRepo, which remote
// reaches, publishing it when the repository has none. An existing revision is taken as it is:
// flotilla never moves or rewrites it.
func EnsureEmptyPackage(ctx context.Context, git Git, remote pkgrepo.Remote, clusterRepo *v1alpha1.Repository) (v1alpha1.ResolvedRevision, error) {
	path := EmptyPackagePath(clusterRepo)
	rev, err := git.Resolve(ctx, remote, path, "v1")
	if errors.Is(err, pkgrepo.ErrPackageNotFound) || errors.Is(err, pkgrepo.ErrRevisionNotFound) {
		var res pkgrepo.PublishResult
		res, err = git.Publish(ctx, remote, pkgrepo.PublishRequest{Package: path, Files: EmptyPackageFiles(),
			Message: "Publish " + path + ", the empty package that EmptyFirst undeploys drain through"})
		rev = pkgrepo.Revision{Number: res.Revision, Tag: res.Tag, Commit: res.Commit}
	}
	if err != nil {
		return v1alpha1.ResolvedRevision{}, fmt.Errorf("empty package %s: %w", path, err)
	}
	return v1alpha1.ResolvedRevision{Repository: clusterRepo.Name, Revision: rev.Number, Tag: rev.Tag, Commit: rev.Commit, Directory: "/" + path}, nil
}

// DrainTimeout is how long cluster lets an EmptyFirst undeploy drain before reporting it.
func DrainTimeout(cluster *v1alpha1.WorkloadCluster) time.Duration {
	if d := cluster.Spec.Sync.DrainTimeout; d != nil && d.Duration > 0 {
		return d.Duration
	}
	return 10 * time.Minute
}

// MustDrain reports whether the deleted deployment pd is drained before it leaves cluster's
// deployed-packages: the cluster deletes EmptyFirst, pd deletes its workload (not Orphan), the
// revision published carries pd, and the agent has not reported the drain done yet.
func MustDrain(cluster *v1alpha1.WorkloadCluster, pd *v1alpha1.PackageDeployment, published *v1alpha1.DeployedPackagesStatus) bool {
	if cluster.Spec.Sync.Deletion != v1alpha1.DeletionEmptyFirst || pd.Spec.DeletionPolicy == v1alpha1.DeletionPolicyOrphan || pd.DeletionTimestamp.IsZero() {
		return false
	}
	tag := PublishedTag(published, pd.Name)
	if tag == "" {
		return false
	}
	d := pd.Status.Drain
	// Drained counts only for the empty revision being what is published: it was read there.
	return d == nil || !d.Drained || d.Tag != tag
}

// PublishedTag is the tag published carries for deployment, "" when it does not carry it.
func PublishedTag(published *v1alpha1.DeployedPackagesStatus, deployment string) string {
	for _, p := range pinsOf(published) {
		if p.Deployment == deployment {
			return p.Tag
		}
	}
	return ""
}
