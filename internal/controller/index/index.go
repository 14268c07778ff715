// Package index defines the field indexes the reconcilers look objects up by, so an event
// re-reconciles only the objects it affects.
package index

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/gitremote"
	"github.com/flotilla-dev/flotilla/internal/giturl"
	"github.com/flotilla-dev/flotilla/internal/render"
)

const (
	// DeploymentCluster indexes PackageDeployments by spec.cluster.name.
	DeploymentCluster = "spec.cluster.name"
	// DeploymentRepository indexes PackageDeployments by the Repository they read the package
	// from, when it is named explicitly or already resolved.
	DeploymentRepository = "packageRepository"
	// ClusterRepository indexes WorkloadClusters by spec.repository.name.
	ClusterRepository = "spec.repository.name"
	// DeploymentSet indexes PackageDeployments by their flotilla.dev/packageset label: a set
	// reads its own deployments without scanning every deployment of the namespace.
	DeploymentSet = "packageSet"
	// SetRepository indexes PackageSets by their blueprint's repository.
	SetRepository = "spec.package.repository.name"
	// DeploymentDependsOn indexes PackageDeployments by the names their spec.dependsOn lists: a
	// deployment that appears, moves or goes brings back the ones that depend on it.
	DeploymentDependsOn = "spec.dependsOn"
	// RepositoryLocation indexes Repositories by Location: the clusters that may write to one
	// place in git are found across namespaces without reading every Repository.
	RepositoryLocation = "repositoryLocation"
)

// Location is where a Repository writes: its normalized URL and branch. Two Repositories with one
// Location are one git branch, whatever their names, namespaces or spelling of the URL.
func Location(repo *v1alpha1.Repository) string {
	if repo.Spec.Git == nil {
		return "oci " + repo.Spec.OCI.URL // nothing writes there
	}
	return giturl.Normalize(repo.Spec.Git.URL) + " " + gitremote.Branch(repo)
}

// ClusterLocation is where cluster's deployed-packages is in repo, its git Repository: the
// branch's Location and the package's directory (DeployedPackagesStatus.Location).
func ClusterLocation(cluster *v1alpha1.WorkloadCluster, repo *v1alpha1.Repository) string {
	return Location(repo) + " " + render.ClusterPackagePath(cluster, repo)
}

// Published is the deployed-packages revision cluster's status says it published where repo, its
// Repository, now puts it: nil when none, when it was published elsewhere (the cluster moved),
// or when repo is not git. It is the base every resolve of the cluster's deployments is checked
// against.
func Published(cluster *v1alpha1.WorkloadCluster, repo *v1alpha1.Repository) *v1alpha1.DeployedPackagesStatus {
	dp := cluster.Status.DeployedPackages
	if dp == nil || repo.Spec.Git == nil || (dp.Location != "" && dp.Location != ClusterLocation(cluster, repo)) {
		return nil
	}
	return dp
}

// Setup registers the indexes with the manager's cache.
func Setup(ctx context.Context, mgr manager.Manager) error {
	fi := mgr.GetFieldIndexer()
	if err := fi.IndexField(ctx, &v1alpha1.PackageDeployment{}, DeploymentCluster, func(o client.Object) []string {
		return []string{o.(*v1alpha1.PackageDeployment).Spec.Cluster.Name}
	}); err != nil {
		return err
	}
	if err := fi.IndexField(ctx, &v1alpha1.PackageDeployment{}, DeploymentRepository, deploymentRepositories); err != nil {
		return err
	}
	if err := fi.IndexField(ctx, &v1alpha1.PackageDeployment{}, DeploymentSet, func(o client.Object) []string {
		if s := o.GetLabels()[v1alpha1.LabelPackageSet]; s != "" {
			return []string{s}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := fi.IndexField(ctx, &v1alpha1.PackageDeployment{}, DeploymentDependsOn, func(o client.Object) []string {
		var names []string
		for _, d := range o.(*v1alpha1.PackageDeployment).Spec.DependsOn {
			names = append(names, d.Name)
		}
		return names
	}); err != nil {
		return err
	}
	if err := fi.IndexField(ctx, &v1alpha1.PackageSet{}, SetRepository, func(o client.Object) []string {
		if r := o.(*v1alpha1.PackageSet).Spec.Package.Repository; r != nil {
			return []string{r.Name}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := fi.IndexField(ctx, &v1alpha1.Repository{}, RepositoryLocation, func(o client.Object) []string {
		return []string{Location(o.(*v1alpha1.Repository))}
	}); err != nil {
		return err
	}
	return fi.IndexField(ctx, &v1alpha1.WorkloadCluster{}, ClusterRepository, func(o client.Object) []string {
		return []string{o.(*v1alpha1.WorkloadCluster).Spec.Repository.Name}
	})
}

func deploymentRepositories(o client.Object) []string {
	pd := o.(*v1alpha1.PackageDeployment)
	var out []string
	if r := pd.Spec.Package.Repository; r != nil {
		out = append(out, r.Name)
	}
	if r := pd.Status.Resolved; r != nil && (len(out) == 0 || out[0] != r.Repository) {
		out = append(out, r.Repository)
	}
	return out
}
