package controller_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/gittest"
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
	argo := f.objects(c.Status.DeployedPackages.Tag)
	f.g.Expect(kinds(argo)).To(ConsistOf("Application", "Application"))
	for _, o := range argo {
		f.g.Expect(env.Client.Create(f.ctx, o, client.DryRunAll)).To(Succeed(), "Application %s", o.GetName())
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
		f.g.Expect(env.Client.Create(f.ctx, o, client.DryRunAll)).To(Succeed(), "%s %s", o.GetKind(), o.GetName())
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
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader([]byte(gittest.ReadFile(f.t, f.edge, rev, "deployed-packages/"+name)))))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			f.g.Expect(err).NotTo(HaveOccurred())
			u := &unstructured.Unstructured{}
			f.g.Expect(yaml.Unmarshal(doc, &u.Object)).To(Succeed())
			out = append(out, u)
		}
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
