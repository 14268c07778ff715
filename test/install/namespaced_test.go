package install

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/internal/scheme"
)

// TestNamespacedHelmMatchesKustomize: the chart with watchNamespaces yields config/namespaced's
// objects, field for field.
func TestNamespacedHelmMatchesKustomize(t *testing.T) {
	sameObjects(t, "config/namespaced", map[string]any{"watchNamespaces": []any{"fleet"}})
}

// TestNamespacedInstallIsClusterWideOnlyForCRDs: the namespaced install (both ways) creates no
// ClusterRole or ClusterRoleBinding, grants the manager's rules with a Role and RoleBinding in
// each watched namespace, and passes the same namespaces to the controller.
func TestNamespacedInstallIsClusterWideOnlyForCRDs(t *testing.T) {
	for name, objs := range map[string][]*unstructured.Unstructured{
		"kustomize config/namespaced":     kustomize(t, "config/namespaced"),
		"helm watchNamespaces=[fleet]":    helmTemplate(t, map[string]any{"watchNamespaces": []any{"fleet"}}),
		"helm watchNamespaces=[b, a]":     helmTemplate(t, map[string]any{"watchNamespaces": []any{"b", "a"}}),
		"kustomize config/default (base)": kustomize(t, "config/default"),
	} {
		t.Run(name, func(t *testing.T) {
			var clusterScoped, rbac []string
			for _, o := range objs {
				switch {
				case o.GetKind() == "CustomResourceDefinition", o.GetKind() == "Namespace":
				case o.GetNamespace() == "":
					clusterScoped = append(clusterScoped, id(o))
				case strings.HasPrefix(o.GetKind(), "Role"):
					rbac = append(rbac, id(o))
				}
			}
			slices.Sort(rbac)
			args := flags(containers(t, find(t, objs, "Deployment", "flotilla-controller"))[0])
			var want struct {
				clusterScoped, rbac []string
				flag                string
			}
			want.rbac = []string{"Role flotilla-system/flotilla-leader-election", "RoleBinding flotilla-system/flotilla-leader-election"}
			switch name {
			case "kustomize config/default (base)":
				want.clusterScoped = []string{"ClusterRole flotilla-manager", "ClusterRoleBinding flotilla-manager"}
			case "helm watchNamespaces=[b, a]":
				want.rbac = append(want.rbac, "Role a/flotilla-manager", "Role b/flotilla-manager", "RoleBinding a/flotilla-manager", "RoleBinding b/flotilla-manager")
				want.flag = "b,a"
			default:
				want.rbac = append(want.rbac, "Role fleet/flotilla-manager", "RoleBinding fleet/flotilla-manager")
				want.flag = "fleet"
			}
			slices.Sort(want.rbac)
			if diff := cmp.Diff(want.clusterScoped, clusterScoped); diff != "" {
				t.Errorf("cluster-scoped objects besides CRDs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want.rbac, rbac); diff != "" {
				t.Errorf("Roles and RoleBindings (-want +got):\n%s", diff)
			}
			if got := args["--watch-namespaces"]; got != want.flag {
				t.Errorf("--watch-namespaces=%q, want %q", got, want.flag)
			}
			// Each namespace's Role has exactly the ClusterRole's rules, bound to the controller.
			clusterRole := find(t, kustomize(t, "config/default"), "ClusterRole", "flotilla-manager")
			for _, o := range objs {
				switch {
				case o.GetKind() == "Role" && o.GetName() == "flotilla-manager":
					if diff := cmp.Diff(clusterRole.Object["rules"], o.Object["rules"]); diff != "" {
						t.Errorf("%s rules differ from the ClusterRole's (-ClusterRole +Role):\n%s", id(o), diff)
					}
				case o.GetKind() == "RoleBinding" && o.GetName() == "flotilla-manager":
					ref, _, _ := unstructured.NestedString(o.Object, "roleRef", "kind")
					subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
					if got := fmt.Sprintf("%s %v", ref, subjects); got != "Role [map[kind:ServiceAccount name:flotilla-controller namespace:flotilla-system]]" {
						t.Errorf("%s binds %s", id(o), got)
					}
				}
			}
		})
	}
}

// TestNamespacedManager installs the chart with watchNamespaces into its own release namespace,
// so its ServiceAccount has nothing but the chart's Roles, and runs bin/flotilla with the
// Deployment's args as that ServiceAccount. The ServiceAccount cannot read Secrets or list
// flotilla's kinds outside the watched namespaces (access reviews and a forbidden Get); in a
// watched namespace a PackageSet deploys through a Repository with credentials; a tenant in an
// unwatched namespace is neither read nor touched: no status, no finalizer, no git request, and
// not one refused request in the controller's log.
func TestNamespacedManager(t *testing.T) {
	g := NewWithT(t)
	const release, watched, alsoWatched, unwatched = "flotilla-tenants", "team-a", "team-b", "team-c"
	for _, ns := range []string{release, watched, alsoWatched, unwatched} {
		g.Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	objs := helmTemplateIn(t, release, map[string]any{"watchNamespaces": []any{watched, alsoWatched}})
	apply(t, objs)
	if t.Failed() {
		t.FailNow()
	}
	dep := find(t, objs, "Deployment", "flotilla-controller")
	sa, _, _ := unstructured.NestedString(dep.Object, "spec", "template", "spec", "serviceAccountName")
	kubeconfig := serviceAccountKubeconfig(t, release, sa)
	saConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := client.New(saConfig, client.Options{Scheme: scheme.New()})
	g.Expect(err).NotTo(HaveOccurred())

	// The tenant nobody watches: a Secret, and a fleet on a git server that counts every request.
	var unwatchedRequests atomic.Int32
	countRequests := gittest.WithMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			unwatchedRequests.Add(1)
			next.ServeHTTP(w, r)
		})
	})
	unwatchedEdge := newFleet(t, unwatched, gittest.NewServer(t, countRequests))

	// What the ServiceAccount may do, as the API server's authorizer answers.
	allowed := func(ns, verb, group, resource string) bool {
		r := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: group, Resource: resource},
		}}
		g.Expect(c.Create(ctx, r)).To(Succeed())
		return r.Status.Allowed
	}
	for _, tc := range []struct {
		ns, verb, group, resource string
		want                      bool
	}{
		{watched, "get", "", "secrets", true},
		{alsoWatched, "get", "", "secrets", true},
		{watched, "list", "", "secrets", false},
		{unwatched, "get", "", "secrets", false},
		{"", "get", "", "secrets", false},
		{release, "get", "", "secrets", false},
		{unwatched, "get", "", "configmaps", false},
		{unwatched, "list", "flotilla.dev", "repositories", false},
		{"", "list", "flotilla.dev", "repositories", false},
		{watched, "list", "flotilla.dev", "repositories", true},
		{watched, "patch", "flotilla.dev", "repositories/status", true},
		{unwatched, "patch", "flotilla.dev", "repositories/status", false},
		{release, "update", "coordination.k8s.io", "leases", true},
		{watched, "update", "coordination.k8s.io", "leases", false},
	} {
		if got := allowed(tc.ns, tc.verb, tc.group, tc.resource); got != tc.want {
			t.Errorf("ServiceAccount may %s %s.%s in namespace %q: %v, want %v", tc.verb, tc.resource, tc.group, tc.ns, got, tc.want)
		}
	}
	err = c.Get(ctx, client.ObjectKey{Namespace: unwatched, Name: "git"}, &corev1.Secret{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "Get of the unwatched tenant's Secret as the ServiceAccount: %v", err)

	cache := t.TempDir()
	logs, _, _ := startReady(t, buildFlotilla(t), func(probePort, metricsPort string) []string {
		args := localArgs(containers(t, dep)[0], map[string]string{
			"--health-probe-bind-address": "127.0.0.1:" + probePort,
			"--metrics-bind-address":      "127.0.0.1:" + metricsPort,
			"--cache-dir":                 cache,
		})
		g.Expect(args).To(ContainElement("--watch-namespaces=" + watched + "," + alsoWatched))
		return append(args, "--kubeconfig="+kubeconfig, "--leader-election-namespace="+release)
	})
	g.Eventually(func() string {
		var leases coordinationv1.LeaseList
		if err := k8s.List(ctx, &leases, client.InNamespace(release)); err != nil {
			return err.Error()
		}
		if len(leases.Items) == 0 {
			return ""
		}
		return ptr.Deref(leases.Items[0].Spec.HolderIdentity, "")
	}, time.Minute, 200*time.Millisecond).ShouldNot(BeEmpty(), "leader election lease in %s", release)

	watchedEdge := newFleet(t, watched, gittest.NewServer(t, gittest.WithBasicAuth("flotilla", "s3cret")))
	expectFleetDeploys(t, logs, watched, watchedEdge)

	// The unwatched tenant's objects were there all along: had the controller seen them, they
	// would have been reconciled before the watched ones.
	for _, o := range []struct {
		obj  client.Object
		name string
	}{
		{&v1alpha1.Repository{}, "catalog"},
		{&v1alpha1.Repository{}, "edge01"},
		{&v1alpha1.WorkloadCluster{}, "edge01"},
		{&v1alpha1.PackageSet{}, "hello"},
	} {
		if got := ready(t, o.obj, unwatched, o.name); got != "no Ready condition" || len(o.obj.GetFinalizers()) > 0 {
			t.Errorf("%T %s/%s was touched: Ready %q, finalizers %v", o.obj, unwatched, o.name, got, o.obj.GetFinalizers())
		}
	}
	var deployments v1alpha1.PackageDeploymentList
	g.Expect(k8s.List(ctx, &deployments, client.InNamespace(unwatched))).To(Succeed())
	g.Expect(deployments.Items).To(BeEmpty(), "deployments generated in %s", unwatched)
	g.Expect(unwatchedRequests.Load()).To(BeZero(), "git requests for the unwatched tenant")
	g.Expect(gittest.Tags(t, unwatchedEdge)).NotTo(HaveKey("deployed-packages/v1"))
	if l := logs.String(); strings.Contains(l, "forbidden") || strings.Contains(l, unwatched) {
		t.Errorf("the controller reached for what it must not see:\n%s\n%s", grep(l, "forbidden"), grep(l, unwatched))
	}
}
