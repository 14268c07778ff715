package index_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/controller/index"
)

func TestPublished(t *testing.T) {
	repo := func(url, branch, dir string) *v1alpha1.Repository {
		return &v1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "edge01", Namespace: "ns"},
			Spec: v1alpha1.RepositorySpec{Git: &v1alpha1.GitRepository{URL: url, Branch: branch, Directory: dir}}}
	}
	cluster := &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Name: "edge01", Namespace: "ns"}}
	here := repo("https://git.example.com/edge01.git", "main", "")
	loc := index.ClusterLocation(cluster, here)
	published := func(location string) *v1alpha1.WorkloadCluster {
		c := cluster.DeepCopy()
		c.Status.DeployedPackages = &v1alpha1.DeployedPackagesStatus{Revision: 3, Tag: "deployed-packages/v3", Location: location}
		return c
	}
	for _, tc := range []struct {
		name    string
		cluster *v1alpha1.WorkloadCluster
		repo    *v1alpha1.Repository
		want    bool
	}{
		{"published here", published(loc), here, true},
		{"the same place, the URL spelled otherwise", published(loc), repo("https://git.example.com/edge01", "", ""), true},
		{"no location recorded (an older status)", published(""), here, true},
		{"nothing published", cluster, here, false},
		{"another branch", published(loc), repo("https://git.example.com/edge01.git", "edge", ""), false},
		{"another directory", published(loc), repo("https://git.example.com/edge01.git", "main", "clusters"), false},
		{"another repository", published(loc), repo("https://git.example.com/edge02.git", "main", ""), false},
		{"an OCI repository", published(loc), &v1alpha1.Repository{Spec: v1alpha1.RepositorySpec{OCI: &v1alpha1.OCIRepository{URL: "oci://r.example.com/p"}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := index.Published(tc.cluster, tc.repo)
			if (got != nil) != tc.want {
				t.Fatalf("Published = %v, want published %v (location %q, here %q)", got, tc.want, loc, index.Location(tc.repo))
			}
			if got != nil && got != tc.cluster.Status.DeployedPackages {
				t.Fatalf("Published = %v, want the cluster's status %v", got, tc.cluster.Status.DeployedPackages)
			}
		})
	}
}
