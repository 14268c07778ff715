package controller_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/crane"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/ocipkg"
	"github.com/flotilla-dev/flotilla/internal/ocitest"
)

// ociPush pushes a package revision to the registry at host as `flotilla publish --oci` does.
func ociPush(t *testing.T, host, pkg string, n int) string {
	t.Helper()
	files := map[string][]byte{
		"Kptfile":        []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: " + pkg + "\n"),
		"configmap.yaml": fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  revision: \"%d\"\n", pkg, n),
	}
	a, err := ocipkg.Push(t.Context(), fmt.Sprintf("%s/catalog/%s:v%d", host, pkg, n), files, ocipkg.Options{Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	return a.Digest
}

// A deployment of an OCI package follows latest as new artifacts are pushed, pins each by digest
// in deployed-packages, and never follows a tag re-pushed to other content.
func TestOCIPackages(t *testing.T) {
	f := newFixture(t)
	host := ocitest.NewRegistry(t, nil)
	v1 := ociPush(t, host, "upf", 1)
	f.repository("edge01")
	f.create(&v1alpha1.Repository{
		ObjectMeta: metav1.ObjectMeta{Name: "oci", Namespace: f.ns},
		Spec:       v1alpha1.RepositorySpec{OCI: &v1alpha1.OCIRepository{URL: "oci://" + host + "/catalog", Insecure: true}, Interval: &metav1.Duration{Duration: 5 * time.Second}},
	})
	f.cluster()
	pd := f.deployment("upf", "upf", "latest", func(pd *v1alpha1.PackageDeployment) { pd.Spec.Package.Repository.Name = "oci" })

	c := f.clusterWith(ConsistOf(v1alpha1.PublishedPin{Deployment: "upf", Tag: "upf:v1"}))
	f.condition(pd, func() []metav1.Condition { return pd.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "Published")
	f.g.Expect(*pd.Status.Resolved).To(Equal(v1alpha1.ResolvedRevision{Repository: "oci", Revision: 1, Tag: "upf:v1", Commit: v1, Directory: "/upf", Image: host + "/catalog/upf"}))
	rs := f.syncObject(c.Status.DeployedPackages.Tag, pd)
	image, _, _ := unstructured.NestedString(rs.Object, "spec", "oci", "image")
	f.g.Expect(image).To(Equal(host + "/catalog/upf@" + v1))
	repo := &v1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "oci", Namespace: f.ns}}
	// The repository's next poll resolves the latest revision of each package in use.
	f.g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(repo), repo)).To(Succeed())
		ready := meta.FindStatusCondition(repo.Status.Conditions, v1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal("Resolved"))
		g.Expect(ready.Message).To(ContainSubstring("upf:v1"))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())

	// A new artifact: the repository's poll sees it, latest moves on.
	v2 := ociPush(t, host, "upf", 2)
	f.clusterWith(ConsistOf(v1alpha1.PublishedPin{Deployment: "upf", Tag: "upf:v2"}))

	// v2 re-pushed with v1's content: a moved tag is reported, the pinned digest stays.
	if err := crane.Copy(host+"/catalog/upf:v1", host+"/catalog/upf:v2", crane.Insecure); err != nil {
		t.Fatal(err)
	}
	stalled := f.condition(pd, func() []metav1.Condition { return pd.Status.Conditions }, v1alpha1.ConditionStalled, metav1.ConditionTrue, "TagMoved")
	f.g.Expect(stalled.Message).To(SatisfyAll(ContainSubstring(v2), ContainSubstring(v1)))
	f.g.Expect(pd.Status.Resolved.Commit).To(Equal(v2))
}

// An OCI Repository cannot hold a cluster's deployed-packages: the cluster says so and publishes
// nothing.
func TestOCIRepositoryIsNotAClusterRepository(t *testing.T) {
	f := newFixture(t)
	f.create(&v1alpha1.Repository{
		ObjectMeta: metav1.ObjectMeta{Name: "edge01", Namespace: f.ns},
		Spec:       v1alpha1.RepositorySpec{OCI: &v1alpha1.OCIRepository{URL: "registry.example/edge01"}},
	})
	c := f.cluster()
	stalled := f.condition(c, func() []metav1.Condition { return c.Status.Conditions }, v1alpha1.ConditionStalled, metav1.ConditionTrue, "RepositoryNotGit")
	f.g.Expect(stalled.Message).To(ContainSubstring("writes deployed-packages and variants to git only"))
	f.g.Expect(c.Status.DeployedPackages).To(BeNil())
}
