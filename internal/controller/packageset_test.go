package controller_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/gittest"
)

// clusters creates WorkloadClusters with labels, all using the repository edge01.
func (f *fixture) clusters(labels map[string]map[string]string) {
	for name, l := range labels {
		f.create(&v1alpha1.WorkloadCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Labels: l},
			Spec:       v1alpha1.WorkloadClusterSpec{Repository: v1alpha1.LocalObjectReference{Name: "edge01"}, Suspend: true},
		})
	}
}

func (f *fixture) packageSet(name string, targets v1alpha1.Generator, mutate ...func(*v1alpha1.PackageSet)) *v1alpha1.PackageSet {
	set := &v1alpha1.PackageSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
		Spec: v1alpha1.PackageSetSpec{
			Package: v1alpha1.PackageReference{Repository: &v1alpha1.LocalObjectReference{Name: "catalog"}, Name: "nginx-hello", Revision: "v2"},
			Targets: targets,
		},
	}
	for _, m := range mutate {
		m(set)
	}
	f.create(set)
	return set
}

// deploymentsOf lists, sorted, "name→cluster" for the deployments a set owns.
func (f *fixture) deploymentsOf(set string) []string {
	var list v1alpha1.PackageDeploymentList
	f.g.Expect(env.Client.List(f.ctx, &list, client.InNamespace(f.ns), client.MatchingLabels{v1alpha1.LabelPackageSet: set})).To(Succeed())
	var out []string
	for _, pd := range list.Items {
		if pd.DeletionTimestamp.IsZero() {
			out = append(out, pd.Name+"→"+pd.Spec.Cluster.Name)
		}
	}
	sort.Strings(out)
	return out
}

func edge(selector map[string]string) v1alpha1.Generator {
	return v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{Clusters: &v1alpha1.ClusterGenerator{Selector: v1alpha1.LabelSelector{MatchLabels: selector}}}}
}

// A selector picks 3 of 5 clusters; relabelling adds or removes exactly one deployment; a
// selector that suddenly matches nothing deletes nothing; deleting the set (Delete) undeploys.
func TestPackageSetSelectsClusters(t *testing.T) {
	f := newFixture(t)
	f.repository("catalog")
	f.repository("edge01")
	f.clusters(map[string]map[string]string{
		"a": {"site-type": "edge"}, "b": {"site-type": "edge"}, "c": {"site-type": "edge"},
		"d": {"site-type": "core"}, "e": nil,
	})
	set := f.packageSet("upf", edge(map[string]string{"site-type": "edge"}))
	g := f.g
	g.Eventually(func() []string { return f.deploymentsOf("upf") }, "20s").Should(Equal([]string{"upf-a→a", "upf-b→b", "upf-c→c"}))

	// Owned by the set, pinned to the blueprint.
	pd := &v1alpha1.PackageDeployment{}
	g.Expect(env.Client.Get(f.ctx, f.key("upf-a"), pd)).To(Succeed())
	g.Expect(metav1.IsControlledBy(pd, set)).To(BeTrue())
	g.Expect(pd.Spec.Package.Name).To(Equal("nginx-hello"))
	g.Eventually(func() int {
		_ = env.Client.Get(f.ctx, client.ObjectKeyFromObject(set), set)
		return set.Status.Targets
	}, "20s").Should(Equal(3))

	relabel := func(name string, l map[string]string) {
		c := &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}}
		f.update(c, func() { c.Labels = l })
	}
	relabel("d", map[string]string{"site-type": "edge"})
	g.Eventually(func() []string { return f.deploymentsOf("upf") }, "20s").Should(Equal([]string{"upf-a→a", "upf-b→b", "upf-c→c", "upf-d→d"}))
	relabel("a", map[string]string{"site-type": "core"})
	g.Eventually(func() []string { return f.deploymentsOf("upf") }, "20s").Should(Equal([]string{"upf-b→b", "upf-c→c", "upf-d→d"}))

	// The selector suddenly matches nothing: nothing is deleted, the set says why.
	f.update(set, func() { set.Spec.Targets = edge(map[string]string{"site-type": "nowhere"}) })
	cond := f.condition(set, func() []metav1.Condition { return set.Status.Conditions }, v1alpha1.ConditionStalled, metav1.ConditionTrue, "NoTargets")
	g.Expect(cond.Message).To(ContainSubstring("spec.allowEmpty"))
	g.Consistently(func() []string { return f.deploymentsOf("upf") }, "2s").Should(HaveLen(3))

	// Deleting the set with Delete deletes its deployments, then the set.
	g.Expect(env.Client.Delete(f.ctx, set)).To(Succeed())
	g.Eventually(func() []string { return f.deploymentsOf("upf") }, "30s").Should(BeEmpty())
	g.Eventually(func() bool { return apierrors.IsNotFound(env.Client.Get(f.ctx, client.ObjectKeyFromObject(set), set)) }, "30s").Should(BeTrue())
}

// A matrix of clusters × list makes the product, named from the values.
func TestPackageSetMatrix(t *testing.T) {
	f := newFixture(t)
	f.repository("catalog")
	f.repository("edge01")
	f.clusters(map[string]map[string]string{"a": {"site-type": "edge"}, "b": {"site-type": "edge"}, "c": nil})
	set := f.packageSet("slices", v1alpha1.Generator{Matrix: []v1alpha1.LeafGenerator{
		{Clusters: &v1alpha1.ClusterGenerator{Selector: v1alpha1.LabelSelector{MatchLabels: map[string]string{"site-type": "edge"}}}},
		{List: []v1alpha1.ListElement{{Values: map[string]string{"slice": "embb"}}, {Values: map[string]string{"slice": "urllc"}}}},
	}}, func(s *v1alpha1.PackageSet) {
		s.Spec.Template = v1alpha1.DeploymentTemplate{
			NameExpr:      "target.name + '-' + values.slice",
			NamespaceExpr: "'slice-' + values.slice",
			Labels:        map[string]string{"slice": "values.slice"},
		}
		s.Spec.DeletionPolicy = v1alpha1.DeletionPolicyOrphan
	})
	f.g.Eventually(func() []string { return f.deploymentsOf("slices") }, "20s").Should(Equal([]string{"a-embb→a", "a-urllc→a", "b-embb→b", "b-urllc→b"}))
	pd := &v1alpha1.PackageDeployment{}
	f.g.Expect(env.Client.Get(f.ctx, f.key("b-urllc"), pd)).To(Succeed())
	f.g.Expect(pd.Spec.Namespace).To(Equal("slice-urllc"))
	f.g.Expect(pd.Labels).To(HaveKeyWithValue("slice", "urllc"))

	// Orphan: deleting the set leaves the deployments, no longer owned.
	f.g.Expect(env.Client.Delete(f.ctx, set)).To(Succeed())
	f.g.Eventually(func() bool { return apierrors.IsNotFound(env.Client.Get(f.ctx, client.ObjectKeyFromObject(set), set)) }, "30s").Should(BeTrue())
	var list v1alpha1.PackageDeploymentList
	f.g.Expect(env.Client.List(f.ctx, &list, client.InNamespace(f.ns))).To(Succeed())
	f.g.Expect(list.Items).To(HaveLen(4))
	for _, pd := range list.Items {
		f.g.Expect(pd.OwnerReferences).To(BeEmpty())
		f.g.Expect(pd.DeletionTimestamp.IsZero()).To(BeTrue())
	}
}

// An invalid CEL expression is reported with its text, and changes nothing.
func TestPackageSetInvalidExpression(t *testing.T) {
	f := newFixture(t)
	f.repository("catalog")
	f.repository("edge01")
	f.clusters(map[string]map[string]string{"a": {"site-type": "edge"}})
	set := f.packageSet("bad", edge(map[string]string{"site-type": "edge"}), func(s *v1alpha1.PackageSet) {
		s.Spec.Template.NameExpr = "'upf-' + target.name +"
	})
	cond := f.condition(set, func() []metav1.Condition { return set.Status.Conditions }, v1alpha1.ConditionStalled, metav1.ConditionTrue, "GeneratorFailed")
	f.g.Expect(cond.Message).To(ContainSubstring("'upf-' + target.name +"))
	f.g.Consistently(func() []string { return f.deploymentsOf("bad") }, "2s").Should(BeEmpty())

	// A runtime error names the target and keeps going for the others.
	f.clusters(map[string]map[string]string{"b": {"site-type": "edge", "pool": "x"}})
	f.update(set, func() { set.Spec.Template.NameExpr = "'upf-' + target.labels.pool" })
	f.g.Eventually(func() []string { return f.deploymentsOf("bad") }, "20s").Should(Equal([]string{"upf-x→b"}))
	f.g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(set), set)).To(Succeed())
		g.Expect(set.Status.Problems).To(HaveLen(1))
		g.Expect(set.Status.Problems[0].Target).To(ContainSubstring("a"))
		g.Expect(set.Status.Problems[0].Message).To(ContainSubstring("target.labels.pool"))
		g.Expect(meta.IsStatusConditionFalse(set.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue())
	}, 20*time.Second).Should(Succeed())
}

// Two new sets that target one cluster publish one deployed-packages revision carrying both, not
// one per set (the cluster's first, empty revision aside); bumping one set publishes one more revision, and the other set's deployment keeps
// the revision that first carried its pin.
func TestPackageSetsPublishOnceForTheirCluster(t *testing.T) {
	f := newFixture(t)
	f.repository("catalog")
	f.repository("edge01")
	f.cluster()
	// The cluster publishes its first, empty revision before the sets exist (created in the same
	// instant, the sets would be waited for and v1 would carry them).
	f.clusterAt(1)
	list := v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{List: []v1alpha1.ListElement{{Cluster: "edge01"}}}}
	web := f.packageSet("web", list)
	f.packageSet("crds", list, func(s *v1alpha1.PackageSet) { s.Spec.Package.Name, s.Spec.Package.Revision = "crds", "v1" })

	f.clusterWith(ConsistOf(
		v1alpha1.PublishedPin{Deployment: "web-edge01", Tag: "nginx-hello/v2"},
		v1alpha1.PublishedPin{Deployment: "crds-edge01", Tag: "crds/v1"},
	))
	g := f.g
	published := func() []string {
		var out []string
		for tag := range gittest.Tags(t, f.edge) {
			if strings.Contains(tag, "deployed-packages/") {
				out = append(out, tag)
			}
		}
		sort.Strings(out)
		return out
	}
	// v1 is the empty deployed-packages of the new cluster; v2 carries both sets.
	g.Consistently(published, "3s").Should(Equal([]string{"deployed-packages/v1", "deployed-packages/v2"}))

	f.update(web, func() { web.Spec.Package.Revision = "v3" })
	f.clusterWith(ContainElement(v1alpha1.PublishedPin{Deployment: "web-edge01", Tag: "nginx-hello/v3"}))
	g.Consistently(published, "3s").Should(Equal([]string{"deployed-packages/v1", "deployed-packages/v2", "deployed-packages/v3"}))

	revisionOf := func(name string) func() int {
		return func() int {
			pd := &v1alpha1.PackageDeployment{}
			g.Expect(env.Client.Get(f.ctx, f.key(name), pd)).To(Succeed())
			return pd.Status.DeployedPackagesRevision
		}
	}
	g.Eventually(revisionOf("web-edge01"), "10s").Should(Equal(3))
	g.Expect(revisionOf("crds-edge01")()).To(Equal(2))
}

// A set deleted right after the controller saw it still applies its deletion policy: its finalizer
// is written before any deployment exists, so no deployment is left owned by a set that is gone
// (the garbage collector would delete it, whatever Orphan says).
func TestPackageSetDeletedAtOnce(t *testing.T) {
	f := newFixture(t)
	f.repository("catalog")
	f.repository("edge01")
	f.clusters(map[string]map[string]string{"a": nil, "b": nil, "c": nil})
	for i := range 5 {
		set := f.packageSet(fmt.Sprintf("quick%d", i), v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{Clusters: &v1alpha1.ClusterGenerator{}}},
			func(s *v1alpha1.PackageSet) { s.Spec.DeletionPolicy = v1alpha1.DeletionPolicyOrphan })
		// Deleted as soon as the controller has seen it (its finalizer is on), while it may still
		// be creating its deployments. (Deleted before that, the API server may delete it while the
		// finalizer is being added: see the closing note of session 4.)
		f.g.Eventually(func(g Gomega) []string {
			g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(set), set)).To(Succeed())
			return set.Finalizers
		}, "10s", "5ms").Should(ContainElement(v1alpha1.FinalizerPackageSet))
		time.Sleep(time.Duration(i) * 20 * time.Millisecond)
		f.g.Expect(env.Client.Delete(f.ctx, set)).To(Succeed())
		f.g.Eventually(func() bool { return apierrors.IsNotFound(env.Client.Get(f.ctx, client.ObjectKeyFromObject(set), set)) }, "30s").Should(BeTrue())
	}
	var list v1alpha1.PackageDeploymentList
	f.g.Expect(env.Client.List(f.ctx, &list, client.InNamespace(f.ns))).To(Succeed())
	for _, pd := range list.Items {
		f.g.Expect(pd.OwnerReferences).To(BeEmpty(), "deployment %s is still owned by a deleted set", pd.Name)
	}
}
