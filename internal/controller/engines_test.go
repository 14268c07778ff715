package controller_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/internal/render"
)

// Switching a cluster's engine is a normal change: the next deployed-packages revision holds the
// new engine's objects, and every generated object is valid for the engine's real CRD.
func TestEngineSwitchAndRealCRDs(t *testing.T) {
	f := newFixture(t)
	f.repository("catalog")
	f.repository("edge01")
	f.cluster(func(c *v1alpha1.WorkloadCluster) {
		c.Spec.Sync.Engine = v1alpha1.EngineArgoCD
		c.Spec.Sync.ArgoCD = &v1alpha1.ArgoCDSync{Namespace: f.ns}
		c.Spec.Sync.Flux = &v1alpha1.FluxSync{Namespace: f.ns}
	})
	f.deployment("edge01-crds", "crds", "v1")
	f.deployment("edge01-app", "nginx-hello", "v2", func(pd *v1alpha1.PackageDeployment) {
		pd.Spec.Namespace = "apps"
		pd.Spec.DeletionPolicy = v1alpha1.DeletionPolicyOrphan
		pd.Spec.DependsOn = []v1alpha1.LocalObjectReference{{Name: "edge01-crds"}}
	})
	both := ConsistOf(
		v1alpha1.PublishedPin{Deployment: "edge01-app", Tag: "nginx-hello/v2"},
		v1alpha1.PublishedPin{Deployment: "edge01-crds", Tag: "crds/v1"},
	)
	c := f.clusterWith(both)
	// dependsOn with Argo CD: the cluster's status says what ordering needs.
	ready := f.condition(c, func() []metav1.Condition { return c.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "Published")
	f.g.Expect(ready.Message).To(SatisfyAll(ContainSubstring("dependsOn of edge01-app"), ContainSubstring("Application health check")))
	argo := f.objects(c.Status.DeployedPackages.Tag)
	f.g.Expect(kinds(argo)).To(ConsistOf("Application", "Application"))
	for _, o := range argo {
		f.g.Expect(dryRun(f.ctx, o)).To(Succeed(), "Application %s", o.GetName())
		if o.GetLabels()[v1alpha1.LabelDeployment] == "edge01-app" {
			f.g.Expect(o.GetFinalizers()).To(BeEmpty(), "Orphan has no resources finalizer")
			f.g.Expect(o.GetAnnotations()).To(HaveKeyWithValue("argocd.argoproj.io/sync-wave", "1"))
		} else {
			f.g.Expect(o.GetFinalizers()).To(ConsistOf("resources-finalizer.argocd.argoproj.io"))
		}
	}

	before := c.Status.DeployedPackages.Revision
	f.update(c, func() { c.Spec.Sync.Engine = v1alpha1.EngineFlux })
	c = f.clusterAt(before + 1)
	flux := f.objects(c.Status.DeployedPackages.Tag)
	f.g.Expect(kinds(flux)).To(ConsistOf("GitRepository", "Kustomization", "GitRepository", "Kustomization"))
	for _, o := range flux {
		f.g.Expect(dryRun(f.ctx, o)).To(Succeed(), "%s %s", o.GetKind(), o.GetName())
		if o.GetKind() == "Kustomization" && o.GetLabels()[v1alpha1.LabelDeployment] == "edge01-app" {
			spec := o.Object["spec"].(map[string]any)
			f.g.Expect(spec).To(HaveKeyWithValue("prune", false))
			f.g.Expect(spec).To(HaveKeyWithValue("targetNamespace", "apps"))
			f.g.Expect(spec).To(HaveKey("dependsOn"))
		}
	}
	// The pins did not change, only the objects that carry them.
	f.g.Expect(c.Status.DeployedPackages.Packages).To(both)
}

// objects reads every object of deployed-packages at rev, except the Kptfile.
func (f *fixture) objects(rev string) []*unstructured.Unstructured {
	f.t.Helper()
	var out []*unstructured.Unstructured
	for _, name := range f.files(rev) {
		if name == "Kptfile" {
			continue
		}
		out = append(out, decode(f.g, []byte(gittest.ReadFile(f.t, f.edge, rev, "deployed-packages/"+name)))...)
	}
	return out
}

func kinds(objs []*unstructured.Unstructured) []string {
	var k []string
	for _, o := range objs {
		k = append(k, o.GetKind())
	}
	return k
}

// What each engine accepts: every engine's objects, rendered for awkward inputs, keep the engine's
// own rules (Config Sync's name limits and namespaces) and pass its real CRDs' validation.
func TestEngineObjectsForAwkwardInputs(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	long := strings.Repeat("very.long-deployment-name.", 10)[:240]
	ns37, ns20 := "n"+strings.Repeat("s", 35)+"7", "namespace-of-20-char"
	pd := func(name, ns string, policy v1alpha1.DeletionPolicy, deps ...string) *v1alpha1.PackageDeployment {
		d := &v1alpha1.PackageDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "fleet-with-a-rather-long-namespace-name"},
			Spec:       v1alpha1.PackageDeploymentSpec{Namespace: ns, DeletionPolicy: policy},
		}
		for _, dep := range deps {
			d.Spec.DependsOn = append(d.Spec.DependsOn, v1alpha1.LocalObjectReference{Name: dep})
		}
		return d
	}
	deployments := []*v1alpha1.PackageDeployment{
		pd("crds", "", v1alpha1.DeletionPolicyDelete),
		pd(long, "", v1alpha1.DeletionPolicyOrphan, "crds"),
		pd(long+"x", ns37, v1alpha1.DeletionPolicyDelete, long),
		pd(strings.Repeat("b", 29), ns20, v1alpha1.DeletionPolicyOrphan, long+"x"),
		pd("a.b.c", ns37, v1alpha1.DeletionPolicyDelete, strings.Repeat("b", 29), "not-pinned"),
		pd("---", "apps", v1alpha1.DeletionPolicyOrphan),
		// Refused on Config Sync (the deployment says why), fine elsewhere.
		pd("in-cms", "config-management-system", v1alpha1.DeletionPolicyDelete),
		pd("too-long-namespace", ns37+"x", v1alpha1.DeletionPolicyDelete),
	}
	urls := []string{"https://git.example/catalog.git", "ssh://git@git.example:2222/org/catalog.git", "git@git.example:org/catalog.git"}
	var pins []render.Pin
	for i, d := range deployments {
		pins = append(pins, render.Pin{
			Deployment: d, RepoURL: urls[i%len(urls)], Branch: "main",
			Resolved: v1alpha1.ResolvedRevision{Repository: "catalog", Revision: 12, Tag: "network/free5gc/upf/v12", Commit: strings.Repeat("c", 40), Directory: "/network/free5gc/upf"},
		})
	}
	namespaces := map[string]bool{"flux-system": true, "argocd": true}
	for _, d := range deployments {
		if d.Spec.Namespace != "" {
			namespaces[d.Spec.Namespace] = true
		}
	}
	for ns := range namespaces {
		err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		g.Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
	}

	for _, tc := range []struct {
		engine v1alpha1.SyncEngine
		pinBy  v1alpha1.PinBy
	}{
		{v1alpha1.EngineConfigSync, v1alpha1.PinByTag}, {v1alpha1.EngineArgoCD, v1alpha1.PinByTag}, {v1alpha1.EngineFlux, v1alpha1.PinByTag},
		{v1alpha1.EngineConfigSync, v1alpha1.PinByCommit}, {v1alpha1.EngineArgoCD, v1alpha1.PinByCommit}, {v1alpha1.EngineFlux, v1alpha1.PinByCommit},
	} {
		engine := tc.engine
		t.Run(string(engine)+"/"+string(tc.pinBy), func(t *testing.T) {
			g := NewWithT(t)
			cluster := &v1alpha1.WorkloadCluster{
				ObjectMeta: metav1.ObjectMeta{Name: "edge01", Namespace: "fleet-with-a-rather-long-namespace-name"},
				Spec: v1alpha1.WorkloadClusterSpec{Sync: v1alpha1.ClusterSync{
					Engine: engine,
					PinBy:  tc.pinBy,
					Git:    v1alpha1.ClusterGitAuth{Auth: "ssh", SecretRef: &v1alpha1.LocalObjectReference{Name: "git-creds"}},
					Flux:   &v1alpha1.FluxSync{Namespace: "flux-system", Interval: &metav1.Duration{Duration: 90*time.Second + 1500*time.Microsecond}},
					// A central Argo CD: the children deploy to the workload cluster, the root does not.
					ArgoCD: &v1alpha1.ArgoCDSync{Destination: v1alpha1.ArgoCDDestination{Server: "https://edge01.example:6443"}},
				}},
			}
			pkg, err := render.DeployedPackages(cluster, pins)
			g.Expect(err).NotTo(HaveOccurred())
			boot, err := render.Bootstrap(cluster, render.Source{RepoURL: "git@git.example:fleet/edge01.git", Branch: "main", Directory: "/clusters/edge01"}, "")
			g.Expect(err).NotTo(HaveOccurred())

			var published []string
			for _, p := range pkg.Pins {
				published = append(published, p.Deployment)
			}
			var want []string
			for _, d := range deployments {
				if render.Accepts(cluster, d) == nil {
					want = append(want, d.Name)
				}
			}
			g.Expect(published).To(ConsistOf(want))
			if engine == v1alpha1.EngineConfigSync {
				g.Expect(published).To(HaveLen(len(deployments)-2), "the RepoSyncs Config Sync refuses are left out")
			} else {
				g.Expect(published).To(HaveLen(len(deployments)))
			}

			objs := decode(g, boot)
			for _, b := range pkg.Files {
				objs = append(objs, decode(g, b)...)
			}
			names := map[string]string{}
			for _, o := range objs {
				if o.GetKind() == "Kptfile" {
					continue
				}
				id := o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
				g.Expect(validation.IsDNS1123Label(o.GetName())).To(BeEmpty(), id)
				g.Expect(names).NotTo(HaveKey(id), "two objects named alike: %s", id)
				names[id] = o.GetLabels()[v1alpha1.LabelDeployment] + o.GetAnnotations()[render.AnnotationDeployment]
				switch o.GetKind() {
				case "RootSync":
					g.Expect(len(o.GetName())).To(BeNumerically("<=", 38), id)
					g.Expect(o.GetNamespace()).To(Equal("config-management-system"), id)
				case "RepoSync":
					g.Expect(len(o.GetName())+len(o.GetNamespace())).To(BeNumerically("<=", 45), id)
					reconciler := fmt.Sprintf("ns-reconciler-%s-%s-%d", o.GetNamespace(), o.GetName(), len(o.GetName()))
					g.Expect(validation.IsDNS1123Label(reconciler)).To(BeEmpty(), "reconciler %s of %s", reconciler, id)
					g.Expect(o.GetNamespace()).NotTo(Equal("config-management-system"), id)
				case "GitRepository":
					url, _, _ := unstructured.NestedString(o.Object, "spec", "url")
					g.Expect(url).To(MatchRegexp(`^(http|https|ssh)://`), id)
				}
				// What the object pins (the deployed-packages root source follows its branch).
				if tag := o.GetAnnotations()[render.AnnotationPinnedTag]; tag != "" {
					g.Expect(tag).To(Equal(pins[0].Resolved.Tag), id)
					want, field := tag, map[string][]string{
						"RootSync": {"spec", "git", "revision"}, "RepoSync": {"spec", "git", "revision"},
						"Application": {"spec", "source", "targetRevision"}, "GitRepository": {"spec", "ref", "tag"},
					}[o.GetKind()]
					if tc.pinBy == v1alpha1.PinByCommit {
						want = pins[0].Resolved.Commit
						if o.GetKind() == "GitRepository" {
							field = []string{"spec", "ref", "commit"}
							g.Expect(o.Object["spec"]).To(HaveKeyWithValue("ref", HaveLen(1)), "a commit alone: %s", id)
						}
					}
					if field != nil {
						got, _, _ := unstructured.NestedString(o.Object, field...)
						g.Expect(got).To(Equal(want), "%s %v", id, field)
					}
				}
				g.Expect(dryRun(ctx, o)).To(Succeed(), "%s:\n%v", id, o.Object)
			}
			// Every deployment's status names the object it got.
			for _, d := range deployments {
				if render.Accepts(cluster, d) != nil {
					continue
				}
				ref := render.SyncObjectRef(cluster, d)
				g.Expect(names).To(HaveKeyWithValue(ref.Kind+" "+ref.Namespace+"/"+ref.Name, d.Name))
			}
		})
	}
}

// A deployment its cluster's engine cannot take says so, and the others are published all the same.
func TestEngineRefusesRepoSyncInConfigManagementSystem(t *testing.T) {
	f := newFixture(t)
	f.repository("catalog")
	f.repository("edge01")
	f.cluster()
	f.deployment("edge01-crds", "crds", "v1")
	refused := f.deployment("edge01-app", "nginx-hello", "v2", func(pd *v1alpha1.PackageDeployment) {
		pd.Spec.Namespace = "config-management-system"
	})
	f.clusterWith(ConsistOf(v1alpha1.PublishedPin{Deployment: "edge01-crds", Tag: "crds/v1"}))
	c := f.condition(refused, func() []metav1.Condition { return refused.Status.Conditions }, v1alpha1.ConditionStalled, metav1.ConditionTrue, "NotAccepted")
	f.g.Expect(c.Message).To(ContainSubstring("remove spec.namespace"))
	f.g.Expect(refused.Status.ObservedGeneration).To(Equal(refused.Generation))

	// Fixing the namespace publishes it.
	f.update(refused, func() { refused.Spec.Namespace = "apps" })
	f.clusterWith(ConsistOf(
		v1alpha1.PublishedPin{Deployment: "edge01-app", Tag: "nginx-hello/v2"},
		v1alpha1.PublishedPin{Deployment: "edge01-crds", Tag: "crds/v1"},
	))
}

func decode(g Gomega, b []byte) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		g.Expect(err).NotTo(HaveOccurred())
		u := &unstructured.Unstructured{}
		g.Expect(yaml.Unmarshal(doc, &u.Object)).To(Succeed())
		out = append(out, u)
	}
}
