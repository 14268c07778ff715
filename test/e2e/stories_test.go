package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/internal/ocipkg"
	"github.com/flotilla-dev/flotilla/internal/ocitest"
)

// story is one user story's world: a namespace (flotilla's objects in the management cluster,
// Flux objects and the deployed workload in the workload cluster), a git server with a catalog
// and the cluster repository, and the workload cluster bootstrapped by the controller.
type story struct {
	t       *testing.T
	g       Gomega
	ctx     context.Context
	ns      string
	catalog string
}

const waitLong = 90 * time.Second

func newStory(t *testing.T, mutate ...func(*v1alpha1.WorkloadCluster)) *story {
	s := &story{t: t, g: NewWithT(t), ctx: context.Background()}
	s.ns = "e2e-" + strings.ToLower(strings.TrimPrefix(t.Name(), "Test"))
	s.g.Expect(namespace(s.ctx, s.ns)).To(Succeed())
	srv := gittest.NewServer(t)
	srv.CreateRepo(t, "catalog")
	srv.CreateRepo(t, "edge01")
	s.catalog = srv.Dir("catalog")
	s.publish(1)
	s.publish(2)

	s.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kubeconfig", Namespace: s.ns}, Data: map[string][]byte{"value": kubeconfig}})
	for _, name := range []string{"catalog", "edge01"} {
		s.create(&v1alpha1.Repository{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
			Spec:       v1alpha1.RepositorySpec{Git: &v1alpha1.GitRepository{URL: srv.URL + "/" + name + ".git"}, Interval: &metav1.Duration{Duration: 5 * time.Second}},
		})
	}
	cluster := &v1alpha1.WorkloadCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "edge01", Namespace: s.ns},
		Spec: v1alpha1.WorkloadClusterSpec{
			Repository:          v1alpha1.LocalObjectReference{Name: "edge01"},
			Sync:                v1alpha1.ClusterSync{Engine: v1alpha1.EngineFlux, Flux: &v1alpha1.FluxSync{Namespace: s.ns, Interval: &metav1.Duration{Duration: 2 * time.Second}}},
			KubeConfigSecretRef: &v1alpha1.SecretKeyReference{Name: "kubeconfig", Key: "value"},
		},
	}
	for _, m := range mutate {
		m(cluster)
	}
	s.create(cluster)
	s.g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(s.ctx, client.ObjectKeyFromObject(cluster), cluster)).To(Succeed())
		c := meta.FindStatusCondition(cluster.Status.Conditions, v1alpha1.ConditionBootstrapped)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
	}, waitLong).Should(Succeed())
	return s
}

// publish publishes revision n of the package "app": one ConfigMap whose data says n.
func (s *story) publish(n int) {
	gittest.Commit(s.t, s.catalog, "app", map[string]string{
		"app/Kptfile":        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n",
		"app/configmap.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  revision: \"%d\"\n", n),
	}, fmt.Sprintf("app/v%d", n))
}

func (s *story) create(obj client.Object) {
	s.t.Helper()
	s.g.Expect(env.Client.Create(s.ctx, obj)).To(Succeed())
}

// deploy creates the deployment "app" of the catalog's package app at revision.
func (s *story) deploy(revision string, policy v1alpha1.DeletionPolicy) *v1alpha1.PackageDeployment {
	pd := &v1alpha1.PackageDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: s.ns},
		Spec: v1alpha1.PackageDeploymentSpec{
			Cluster:        v1alpha1.LocalObjectReference{Name: "edge01"},
			Package:        v1alpha1.PackageReference{Repository: &v1alpha1.LocalObjectReference{Name: "catalog"}, Name: "app", Revision: revision},
			Namespace:      s.ns,
			DeletionPolicy: policy,
		},
	}
	s.create(pd)
	return pd
}

// workload returns the revision the deployed ConfigMap says, "" when it does not exist.
func (s *story) workload() string {
	cm := &corev1.ConfigMap{}
	err := workload.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "app"}, cm)
	if apierrors.IsNotFound(err) {
		return ""
	}
	s.g.Expect(err).NotTo(HaveOccurred())
	return cm.Data["revision"]
}

// fluxObject reports whether a Flux object of kind exists in the story's namespace.
func (s *story) fluxObject(kind, name string) bool {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("kustomize.toolkit.fluxcd.io/v1")
	if kind == "GitRepository" {
		u.SetAPIVersion("source.toolkit.fluxcd.io/v1")
	}
	u.SetKind(kind)
	err := workload.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: name}, u)
	return err == nil
}

// Stories 1, 2, 3 and 5: deploy v1, publishing a new revision alone changes nothing, upgrade to
// v2, undeploy prunes.
func TestDeployUpgradeUndeploy(t *testing.T) {
	s := newStory(t)
	pd := s.deploy("v1", v1alpha1.DeletionPolicyDelete)
	s.g.Eventually(s.workload, waitLong, time.Second).Should(Equal("1"), "deploying v1 makes its objects appear")

	s.publish(3)
	s.g.Consistently(s.workload, 15*time.Second, time.Second).Should(Equal("1"), "publishing app/v3 alone must not deploy it")

	s.g.Eventually(func() error {
		if err := env.Client.Get(s.ctx, client.ObjectKeyFromObject(pd), pd); err != nil {
			return err
		}
		pd.Spec.Package.Revision = "v2"
		return env.Client.Update(s.ctx, pd)
	}).Should(Succeed())
	s.g.Eventually(s.workload, waitLong, time.Second).Should(Equal("2"), "changing the deployment to v2 changes the objects")

	s.g.Expect(env.Client.Delete(s.ctx, pd)).To(Succeed())
	s.g.Eventually(s.workload, waitLong, time.Second).Should(BeEmpty(), "deleting the deployment prunes its objects")
	s.g.Eventually(func() bool { return apierrors.IsNotFound(env.Client.Get(s.ctx, client.ObjectKeyFromObject(pd), pd)) }, waitLong).Should(BeTrue())
}

// Story 4: with Orphan, undeploying leaves the objects running.
func TestOrphanLeavesTheWorkload(t *testing.T) {
	s := newStory(t)
	pd := s.deploy("v2", v1alpha1.DeletionPolicyOrphan)
	s.g.Eventually(s.workload, waitLong, time.Second).Should(Equal("2"))
	s.g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(s.ctx, client.ObjectKeyFromObject(pd), pd)).To(Succeed())
		g.Expect(pd.Status.SyncObject).NotTo(BeNil())
	}, waitLong).Should(Succeed())
	syncName := pd.Status.SyncObject.Name

	s.g.Expect(env.Client.Delete(s.ctx, pd)).To(Succeed())
	s.g.Eventually(func() bool { return s.fluxObject("Kustomization", syncName) }, waitLong, time.Second).Should(BeFalse(),
		"the deployment's Kustomization leaves the cluster")
	s.g.Consistently(s.workload, 10*time.Second, time.Second).Should(Equal("2"), "Orphan keeps the objects")
}

// A catalog tag force-moved after it was deployed: with pinBy Commit the real Flux controllers
// keep applying the commit that was pinned, and the deployment says the tag moved.
func TestMovedTagIsNotFollowed(t *testing.T) {
	s := newStory(t, func(c *v1alpha1.WorkloadCluster) { c.Spec.Sync.PinBy = v1alpha1.PinByCommit })
	pd := s.deploy("v1", v1alpha1.DeletionPolicyDelete)
	s.g.Eventually(s.workload, waitLong, time.Second).Should(Equal("1"))

	moved := gittest.Commit(s.t, s.catalog, "app", map[string]string{
		"app/Kptfile":        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n",
		"app/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  revision: rewritten\n",
	})
	gittest.MoveTag(s.t, s.catalog, "app/v1", moved)
	s.g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(s.ctx, client.ObjectKeyFromObject(pd), pd)).To(Succeed())
		c := meta.FindStatusCondition(pd.Status.Conditions, v1alpha1.ConditionStalled)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal("TagMoved"))
		g.Expect(c.Message).To(ContainSubstring(moved))
	}, waitLong, time.Second).Should(Succeed())
	s.g.Consistently(s.workload, 15*time.Second, time.Second).Should(Equal("1"), "Flux keeps the pinned commit of a moved tag")
}

// Undeploy on an agent that does not propagate deletion: the root object that applies
// deployed-packages does not prune (flotilla's own root is suspended and a root with prune
// disabled applies deployed-packages instead), so removing the deployment's Kustomization would
// leave the workload running. With spec.sync.deletion EmptyFirst the Kustomization is first
// pointed at the empty package, kustomize-controller prunes the workload, and only then does the
// Kustomization leave deployed-packages (and stays in the cluster, orphaned by the root, empty).
func TestEmptyFirstPrunesWithoutPropagation(t *testing.T) {
	s := newStory(t, func(c *v1alpha1.WorkloadCluster) {
		c.Spec.Sync.Deletion = v1alpha1.DeletionEmptyFirst
		c.Spec.Sync.DrainTimeout = &metav1.Duration{Duration: 5 * time.Minute}
	})
	root := &unstructured.Unstructured{}
	root.SetAPIVersion("kustomize.toolkit.fluxcd.io/v1")
	root.SetKind("Kustomization")
	root.SetNamespace(s.ns)
	root.SetName("flotilla-deployed-packages")
	s.g.Expect(workload.Client.Patch(s.ctx, root, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`)), client.FieldOwner("e2e"))).To(Succeed())
	noPrune := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1",
		"kind":       "Kustomization",
		"metadata":   map[string]any{"name": "root-without-prune", "namespace": s.ns},
		"spec": map[string]any{
			"interval":  "2s",
			"path":      "./deployed-packages",
			"prune":     false,
			"sourceRef": map[string]any{"kind": "GitRepository", "name": "flotilla-deployed-packages"},
		},
	}}
	s.g.Expect(workload.Client.Create(s.ctx, noPrune)).To(Succeed())

	pd := s.deploy("v1", v1alpha1.DeletionPolicyDelete)
	s.g.Eventually(s.workload, waitLong, time.Second).Should(Equal("1"))
	s.g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(s.ctx, client.ObjectKeyFromObject(pd), pd)).To(Succeed())
		g.Expect(pd.Status.SyncObject).NotTo(BeNil())
	}, waitLong).Should(Succeed())
	syncName := pd.Status.SyncObject.Name

	s.g.Expect(env.Client.Delete(s.ctx, pd)).To(Succeed())
	s.g.Eventually(s.workload, waitLong, time.Second).Should(BeEmpty(), "the Kustomization pointed at the empty package prunes the workload")
	s.g.Eventually(func() bool { return apierrors.IsNotFound(env.Client.Get(s.ctx, client.ObjectKeyFromObject(pd), pd)) }, waitLong).Should(BeTrue(),
		"the deployment is released once the agent reported the prune")
	cluster := &v1alpha1.WorkloadCluster{}
	s.g.Expect(env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "edge01"}, cluster)).To(Succeed())
	s.g.Expect(cluster.Status.DeployedPackages.Packages).To(BeEmpty())
	s.g.Expect(s.fluxObject("Kustomization", syncName)).To(BeTrue(), "the root does not prune: the Kustomization stays in the cluster, only EmptyFirst removed the workload")
	child := &unstructured.Unstructured{}
	child.SetAPIVersion("kustomize.toolkit.fluxcd.io/v1")
	child.SetKind("Kustomization")
	s.g.Expect(workload.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: syncName}, child)).To(Succeed())
	path, _, _ := unstructured.NestedString(child.Object, "spec", "path")
	s.g.Expect(path).To(Equal("./flotilla-empty"))
}

// An OCI package end to end with the real Flux source-controller: revisions pushed as artifacts
// to a registry (served by the test), a deployment pinned by digest, upgraded by changing its
// revision, and pruned when deleted.
func TestOCIPackageDeployUpgradeUndeploy(t *testing.T) {
	s := newStory(t)
	host := ocitest.NewRegistry(t, nil)
	push := func(n int) {
		files := map[string][]byte{
			"Kptfile":        []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n"),
			"configmap.yaml": fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  revision: \"oci-%d\"\n", n),
		}
		_, err := ocipkg.Push(s.ctx, fmt.Sprintf("%s/catalog/app:v%d", host, n), files, ocipkg.Options{Insecure: true})
		s.g.Expect(err).NotTo(HaveOccurred())
	}
	push(1)
	push(2)
	s.create(&v1alpha1.Repository{
		ObjectMeta: metav1.ObjectMeta{Name: "oci-catalog", Namespace: s.ns},
		Spec:       v1alpha1.RepositorySpec{OCI: &v1alpha1.OCIRepository{URL: host + "/catalog", Insecure: true}, Interval: &metav1.Duration{Duration: 5 * time.Second}},
	})
	pd := &v1alpha1.PackageDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: s.ns},
		Spec: v1alpha1.PackageDeploymentSpec{
			Cluster:   v1alpha1.LocalObjectReference{Name: "edge01"},
			Package:   v1alpha1.PackageReference{Repository: &v1alpha1.LocalObjectReference{Name: "oci-catalog"}, Name: "app", Revision: "v1"},
			Namespace: s.ns,
		},
	}
	s.create(pd)
	s.g.Eventually(s.workload, waitLong, time.Second).Should(Equal("oci-1"), "the OCI artifact app:v1 is applied")
	s.g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(s.ctx, client.ObjectKeyFromObject(pd), pd)).To(Succeed())
		g.Expect(pd.Status.Resolved).NotTo(BeNil())
		g.Expect(pd.Status.Resolved.Tag).To(Equal("app:v1"))
		g.Expect(pd.Status.Resolved.Commit).To(HavePrefix("sha256:"))
		c := meta.FindStatusCondition(pd.Status.Conditions, v1alpha1.ConditionSynced)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
	}, waitLong, time.Second).Should(Succeed())

	s.g.Eventually(func() error {
		if err := env.Client.Get(s.ctx, client.ObjectKeyFromObject(pd), pd); err != nil {
			return err
		}
		pd.Spec.Package.Revision = "v2"
		return env.Client.Update(s.ctx, pd)
	}).Should(Succeed())
	s.g.Eventually(s.workload, waitLong, time.Second).Should(Equal("oci-2"), "changing the deployment to v2 pulls the new digest")

	s.g.Expect(env.Client.Delete(s.ctx, pd)).To(Succeed())
	s.g.Eventually(s.workload, waitLong, time.Second).Should(BeEmpty(), "deleting the deployment prunes what the artifact applied")
	s.g.Eventually(func() bool { return apierrors.IsNotFound(env.Client.Get(s.ctx, client.ObjectKeyFromObject(pd), pd)) }, waitLong).Should(BeTrue())
}
