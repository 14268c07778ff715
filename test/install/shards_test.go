package install

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/gittest"
)

// TestShards runs two replicas, one per shard, with the args of the Deployments the Helm chart
// makes for shards [a, b] (--watch-label-selector shard=a and shard=b), over one
// fleet: a catalog polled by shard a, and one cluster and one PackageSet per shard, both sets
// deploying from that catalog. Each shard holds its own lease; each cluster gets its package
// (shard b resolves a catalog it does not poll). Then shard b dies (SIGKILL) and both sets move
// to v2: shard a's cluster moves, shard b's does not (no replica touches another shard's
// objects), until shard b is back.
func TestShards(t *testing.T) {
	g := NewWithT(t)
	objs := installDefault(t)
	dep := find(t, objs, "Deployment", "flotilla-controller")
	ns := dep.GetNamespace()
	sa := dep.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["serviceAccountName"].(string)
	kubeconfig := serviceAccountKubeconfig(t, ns, sa)
	bin := buildFlotilla(t)
	sharded := helmTemplateIn(t, ns, map[string]any{"shards": []any{"a", "b"}})
	for _, name := range []string{"a", "b"} {
		// The API server takes the shard's Deployment as it is (a dry run: nothing runs its pods).
		g.Expect(k8s.Create(ctx, find(t, sharded, "Deployment", "flotilla-controller-"+name).DeepCopy(), client.DryRunAll)).To(Succeed())
	}
	shard := func(name string) *process {
		sdep := find(t, sharded, "Deployment", "flotilla-controller-"+name)
		if got, _, _ := unstructured.NestedString(sdep.Object, "spec", "template", "spec", "serviceAccountName"); got != sa {
			t.Fatalf("%s runs as %q; want the install's ServiceAccount %q", sdep.GetName(), got, sa)
		}
		args := localArgs(containers(t, sdep)[0], map[string]string{
			"--health-probe-bind-address": "0",
			"--metrics-bind-address":      "0",
			"--cache-dir":                 t.TempDir(),
		})
		args = append(args, "--kubeconfig="+kubeconfig, "--leader-election-namespace="+ns)
		return startProcess(t, bin, args)
	}

	const fleet = "sharded"
	git := gittest.NewServer(t, gittest.WithBasicAuth("flotilla", "s3cret"))
	for _, r := range []string{"catalog", "edge-a", "edge-b"} {
		git.CreateRepo(t, r)
	}
	for n := 1; n <= 2; n++ {
		gittest.Commit(t, git.Dir("catalog"), "nginx-hello", map[string]string{
			"nginx-hello/Kptfile":        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: nginx-hello\n",
			"nginx-hello/configmap.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hello\ndata:\n  revision: \"%d\"\n", n),
		}, fmt.Sprintf("nginx-hello/v%d", n))
	}
	inShard := func(s string, more map[string]string) map[string]string {
		l := map[string]string{"shard": s}
		for k, v := range more {
			l[k] = v
		}
		return l
	}
	repo := func(name, s string) client.Object {
		return &v1alpha1.Repository{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fleet, Labels: inShard(s, nil)},
			Spec: v1alpha1.RepositorySpec{
				Git:      &v1alpha1.GitRepository{URL: git.URL + "/" + name + ".git", SecretRef: &v1alpha1.LocalObjectReference{Name: "git"}},
				Interval: &metav1.Duration{Duration: 5 * time.Second},
			},
		}
	}
	set := func(s string) *v1alpha1.PackageSet {
		return &v1alpha1.PackageSet{
			ObjectMeta: metav1.ObjectMeta{Name: "hello-" + s, Namespace: fleet, Labels: inShard(s, nil)},
			Spec: v1alpha1.PackageSetSpec{
				Package: v1alpha1.PackageReference{Repository: &v1alpha1.LocalObjectReference{Name: "catalog"}, Name: "nginx-hello", Revision: "v1"},
				// The same selector in both shards: each shard's cache holds only its own clusters.
				Targets: v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{Clusters: &v1alpha1.ClusterGenerator{
					Selector: v1alpha1.LabelSelector{MatchLabels: map[string]string{"site-type": "edge"}},
				}}},
				Template: v1alpha1.DeploymentTemplate{Labels: map[string]string{"shard": "'" + s + "'"}},
			},
		}
	}
	create := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleet}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "git", Namespace: fleet}, StringData: map[string]string{"username": "flotilla", "password": "s3cret"}},
		repo("catalog", "a"), repo("edge-a", "a"), repo("edge-b", "b"),
		set("a"), set("b"),
	}
	for _, s := range []string{"a", "b"} {
		create = append(create, &v1alpha1.WorkloadCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "edge-" + s, Namespace: fleet, Labels: inShard(s, map[string]string{"site-type": "edge"})},
			Spec:       v1alpha1.WorkloadClusterSpec{Repository: v1alpha1.LocalObjectReference{Name: "edge-" + s}},
		})
	}
	for _, o := range create {
		g.Expect(k8s.Create(ctx, o)).To(Succeed())
	}

	// Other tests' replicas may have left their lease in ns: count only the leases new here.
	leases := func() map[string]string {
		var list coordinationv1.LeaseList
		g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		holders := map[string]string{}
		for _, l := range list.Items {
			holders[l.Name] = ptr.Deref(l.Spec.HolderIdentity, "")
		}
		return holders
	}
	before := leases()
	shard("a")
	b := shard("b")
	// Each shard elects its own leader: two new leases, each held.
	g.Eventually(func() []string {
		var held []string
		for name, holder := range leases() {
			if _, old := before[name]; !old && holder != "" {
				held = append(held, name)
			}
		}
		return held
	}, time.Minute, 200*time.Millisecond).Should(HaveLen(2), "one lease per shard, each held")

	pins := func(cluster string) func() []v1alpha1.PublishedPin {
		return func() []v1alpha1.PublishedPin {
			c := &v1alpha1.WorkloadCluster{}
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: fleet, Name: cluster}, c); err != nil || c.Status.DeployedPackages == nil {
				return nil
			}
			return c.Status.DeployedPackages.Packages
		}
	}
	pin := func(s, rev string) []v1alpha1.PublishedPin {
		return []v1alpha1.PublishedPin{{Deployment: "hello-" + s + "-edge-" + s, Tag: "nginx-hello/" + rev}}
	}
	for _, s := range []string{"a", "b"} {
		g.Eventually(pins("edge-"+s), 2*time.Minute, 200*time.Millisecond).Should(Equal(pin(s, "v1")), "edge-%s deploys its shard's set only", s)
		g.Eventually(func() string { return ready(t, &v1alpha1.PackageSet{}, fleet, "hello-"+s) }, time.Minute, 200*time.Millisecond).Should(Equal("True Ready"))
	}
	g.Eventually(func() string { return ready(t, &v1alpha1.Repository{}, fleet, "catalog") }, time.Minute, 200*time.Millisecond).Should(Equal("True Fetched"))

	// Shard b dies; both sets move to v2.
	b.kill()
	for _, s := range []string{"a", "b"} {
		ps := &v1alpha1.PackageSet{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: fleet, Name: "hello-" + s}, ps)).To(Succeed())
		before := ps.DeepCopy()
		ps.Spec.Package.Revision = "v2"
		g.Expect(k8s.Patch(ctx, ps, client.MergeFrom(before))).To(Succeed())
	}
	g.Eventually(pins("edge-a"), time.Minute, 200*time.Millisecond).Should(Equal(pin("a", "v2")), "shard a's cluster moves on")
	g.Consistently(pins("edge-b"), 5*time.Second, 200*time.Millisecond).Should(Equal(pin("b", "v1")), "shard a touched shard b's cluster")
	g.Expect(gittest.Tags(t, git.Dir("edge-b"))).NotTo(HaveKey("deployed-packages/v2"), "shard b's repository was written while shard b was down")

	// Back up, shard b catches up.
	shard("b")
	g.Eventually(pins("edge-b"), 2*time.Minute, 200*time.Millisecond).Should(Equal(pin("b", "v2")), "shard b, restarted")
	g.Expect(pins("edge-a")()).To(Equal(pin("a", "v2")))
}
