package controller_test

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/render"
)

// The sync objects of OCI packages, for every engine, pin the artifact's digest (the tag stays in
// the pinned-tag annotation) and pass the engines' real CRDs: Config Sync sourceType oci, Flux
// OCIRepository with the package layer extracted, Argo CD an oci:// source.
func TestEngineObjectsForOCIPackages(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	digest := "sha256:" + strings.Repeat("d", 64)
	pd := func(name, ns string) *v1alpha1.PackageDeployment {
		return &v1alpha1.PackageDeployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "oci-fleet"}, Spec: v1alpha1.PackageDeploymentSpec{Namespace: ns}}
	}
	var pins []render.Pin
	for _, d := range []*v1alpha1.PackageDeployment{pd("upf", ""), pd("smf", "free5gc")} {
		pins = append(pins, render.Pin{Deployment: d, Insecure: true, Resolved: v1alpha1.ResolvedRevision{
			Repository: "oci-catalog", Revision: 3, Tag: "free5gc-upf:v3", Commit: digest, Directory: "/free5gc-upf", Image: "registry.example:5000/catalog/free5gc-upf"}})
	}
	for _, ns := range []string{"flux-system", "argocd", "free5gc"} {
		g.Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
	}
	want := map[v1alpha1.SyncEngine]map[string]map[string]string{
		v1alpha1.EngineConfigSync: {
			"RootSync": {"spec.sourceType": "oci", "spec.oci.image": "registry.example:5000/catalog/free5gc-upf@" + digest, "spec.oci.dir": "/", "spec.oci.auth": "k8sserviceaccount"},
			"RepoSync": {"spec.sourceType": "oci", "spec.oci.image": "registry.example:5000/catalog/free5gc-upf@" + digest},
		},
		v1alpha1.EngineFlux: {
			"OCIRepository": {"spec.url": "oci://registry.example:5000/catalog/free5gc-upf", "spec.ref.digest": digest,
				"spec.layerSelector.mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "spec.layerSelector.operation": "extract", "spec.secretRef.name": "registry-creds"},
			"Kustomization": {"spec.sourceRef.kind": "OCIRepository", "spec.path": "./"},
		},
		v1alpha1.EngineArgoCD: {
			"Application": {"spec.source.repoURL": "oci://registry.example:5000/catalog/free5gc-upf", "spec.source.targetRevision": digest, "spec.source.path": "."},
		},
	}
	for engine, fields := range want {
		t.Run(string(engine), func(t *testing.T) {
			g := NewWithT(t)
			cluster := &v1alpha1.WorkloadCluster{
				ObjectMeta: metav1.ObjectMeta{Name: "edge01", Namespace: "oci-fleet"},
				Spec: v1alpha1.WorkloadClusterSpec{Sync: v1alpha1.ClusterSync{
					Engine: engine,
					OCI:    v1alpha1.ClusterOCIAuth{Auth: "k8sserviceaccount", SecretRef: &v1alpha1.LocalObjectReference{Name: "registry-creds"}},
				}},
			}
			pkg, err := render.DeployedPackages(cluster, pins)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pkg.Pins).To(HaveLen(2))
			seen := map[string]bool{}
			for name, b := range pkg.Files {
				if name == "Kptfile" {
					continue
				}
				for _, o := range decode(g, b) {
					id := o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
					seen[o.GetKind()] = true
					g.Expect(o.GetAnnotations()).To(HaveKeyWithValue(render.AnnotationPinnedTag, "free5gc-upf:v3"), id)
					for path, value := range fields[o.GetKind()] {
						got, _, _ := unstructured.NestedString(o.Object, strings.Split(path, ".")...)
						g.Expect(got).To(Equal(value), "%s %s", id, path)
					}
					if o.GetKind() == "OCIRepository" {
						insecure, _, _ := unstructured.NestedBool(o.Object, "spec", "insecure")
						g.Expect(insecure).To(BeTrue(), id)
					}
					g.Expect(dryRun(ctx, o)).To(Succeed(), "%s:\n%v", id, o.Object)
				}
			}
			for kind := range fields {
				g.Expect(seen).To(HaveKey(kind))
			}
		})
	}
}
