package v1alpha1_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/crdvalidate"
	"github.com/flotilla-dev/flotilla/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

const ns = "validation"

func repo(mutate func(*v1alpha1.Repository)) client.Object {
	r := &v1alpha1.Repository{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "repo-", Namespace: ns},
		Spec:       v1alpha1.RepositorySpec{Git: &v1alpha1.GitRepository{URL: "https://git.example/catalog.git"}},
	}
	mutate(r)
	return r
}

func cluster(mutate func(*v1alpha1.WorkloadCluster)) client.Object {
	c := &v1alpha1.WorkloadCluster{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "cluster-", Namespace: ns},
		Spec:       v1alpha1.WorkloadClusterSpec{Repository: v1alpha1.LocalObjectReference{Name: "edge01"}},
	}
	mutate(c)
	return c
}

func packageSet(mutate func(*v1alpha1.PackageSet)) client.Object {
	s := &v1alpha1.PackageSet{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "set-", Namespace: ns},
		Spec: v1alpha1.PackageSetSpec{
			Package: v1alpha1.PackageReference{Repository: &v1alpha1.LocalObjectReference{Name: "catalog"}, Name: "free5gc-upf", Revision: "v6"},
			Targets: v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{Clusters: &v1alpha1.ClusterGenerator{}}},
		},
	}
	mutate(s)
	return s
}

func deployment(mutate func(*v1alpha1.PackageDeployment)) client.Object {
	pd := &v1alpha1.PackageDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "pd", Namespace: ns},
		Spec: v1alpha1.PackageDeploymentSpec{
			Cluster: v1alpha1.LocalObjectReference{Name: "edge01"},
			Package: v1alpha1.PackageReference{Name: "free5gc-upf", Revision: "v6"},
		},
	}
	mutate(pd)
	return pd
}

// validationCase is an object the schema refuses: the message says want, and names field (the
// path, when set).
type validationCase struct {
	name  string
	obj   client.Object
	want  string
	field string
}

// Every invalid object is refused by the schema with a message that says what to fix.
func TestInvalidObjectsAreRefused(t *testing.T) {
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	cases := []validationCase{
		{"repository without url", repo(func(r *v1alpha1.Repository) { r.Spec.Git.URL = "" }), "spec.git.url", ""},
		{"repository scp-style url with password", repo(func(r *v1alpha1.Repository) { r.Spec.Git.URL = "git:hunter2@github.com:org/repo.git" }), "url must start with http://, https://, ssh:// or file://, or be scp-style", ""},
		{"repository bare path", repo(func(r *v1alpha1.Repository) { r.Spec.Git.URL = "/srv/git/catalog.git" }), "url must start with http://, https://, ssh:// or file://, or be scp-style", ""},
		{"repository ssh url with password", repo(func(r *v1alpha1.Repository) { r.Spec.Git.URL = "ssh://git:hunter2@git.example/x.git" }), "url must not carry credentials", ""},
		{"repository url with password", repo(func(r *v1alpha1.Repository) { r.Spec.Git.URL = "https://bob:hunter2@git.example/x.git" }), "url must not carry credentials", ""},
		{"repository syncURL with password", repo(func(r *v1alpha1.Repository) { r.Spec.Git.SyncURL = "https://bob:hunter2@git.example/x.git" }), "syncURL must not carry credentials", ""},
		{"repository syncURL with token", repo(func(r *v1alpha1.Repository) { r.Spec.Git.SyncURL = "https://ghp_token@git.example/x.git" }), "syncURL must not carry credentials", ""},
		{"repository scp-style syncURL with password", repo(func(r *v1alpha1.Repository) { r.Spec.Git.SyncURL = "git:hunter2@git.example:org/x.git" }), "syncURL must be an http(s)://", ""},
		{"repository syncURL with a token query", repo(func(r *v1alpha1.Repository) { r.Spec.Git.SyncURL = "https://git.example/x.git?private_token=hunter2" }), "syncURL must not carry credentials", ""},
		{"repository url with a token query", repo(func(r *v1alpha1.Repository) { r.Spec.Git.URL = "https://git.example/x.git?private_token=hunter2" }), "url must not carry credentials", ""},
		{"repository ssh syncURL with password", repo(func(r *v1alpha1.Repository) { r.Spec.Git.SyncURL = "ssh://git:hunter2@git.example/x.git" }), "syncURL must not carry credentials", ""},
		{"repository ftp syncURL", repo(func(r *v1alpha1.Repository) { r.Spec.Git.SyncURL = "ftp://git.example/x" }), "syncURL must be an http(s)://", ""},
		{"repository directory escapes", repo(func(r *v1alpha1.Repository) { r.Spec.Git.Directory = "clusters/../../etc" }), "directory must not contain '..' segments", ""},
		{"repository directory with spaces", repo(func(r *v1alpha1.Repository) { r.Spec.Git.Directory = "my dir" }), "directory may only contain", ""},
		{"repository branch as ref", repo(func(r *v1alpha1.Repository) { r.Spec.Git.Branch = "refs/heads/main" }), "branch must be a plain branch name", ""},
		{"repository interval too short", repo(func(r *v1alpha1.Repository) { r.Spec.Interval = &metav1.Duration{Duration: 1e9} }), "interval must be at least 5s", ""},
		{"repository secretRef without name", repo(func(r *v1alpha1.Repository) { r.Spec.Git.SecretRef = &v1alpha1.LocalObjectReference{} }), "spec.git.secretRef.name", ""},

		{"repository with git and oci", repo(func(r *v1alpha1.Repository) { r.Spec.OCI = &v1alpha1.OCIRepository{URL: "registry.example/catalog"} }), "set exactly one of spec.git", ""},
		{"repository with neither", repo(func(r *v1alpha1.Repository) { r.Spec.Git = nil }), "set exactly one of spec.git", ""},
		{"oci repository url with a tag", repo(func(r *v1alpha1.Repository) {
			r.Spec.Git, r.Spec.OCI = nil, &v1alpha1.OCIRepository{URL: "registry.example/catalog/upf:v1"}
		}), "url must be a registry host and repository path", ""},
		{"oci repository url with credentials", repo(func(r *v1alpha1.Repository) {
			r.Spec.Git, r.Spec.OCI = nil, &v1alpha1.OCIRepository{URL: "https://bob:hunter2@registry.example/catalog"}
		}), "url must be a registry host and repository path", ""},
		{"cluster EmptyFirst without kubeconfig", cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.Sync.Deletion = v1alpha1.DeletionEmptyFirst }), "spec.sync.deletion EmptyFirst needs spec.kubeConfigSecretRef", ""},
		{"cluster unknown deletion mode", cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.Sync.Deletion = "Later" }), `supported values: "Propagation", "EmptyFirst"`, ""},
		{"cluster negative drain timeout", cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.Sync.DrainTimeout = &metav1.Duration{Duration: -1e9} }), "spec.sync.drainTimeout must be a positive duration", ""},
		{"cluster unknown oci auth", cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.Sync.OCI.Auth = "token" }), `supported values: "none", "gcenode"`, ""},
		{"cluster without repository", cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.Repository.Name = "" }), "spec.repository.name", ""},
		{"cluster unknown engine", cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.Sync.Engine = "Helm" }), `supported values: "ConfigSync", "ArgoCD", "Flux"`, ""},
		{"cluster unknown approval", cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.Approval = "Sometimes" }), `supported values: "Automatic", "Manual"`, ""},
		{"cluster absolute package", cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.Sync.Package = "/deployed" }), "package must be a relative path", ""},
		{"cluster package escapes", cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.Sync.Package = "a/../b" }), "package must not contain '.' or '..' segments", ""},
		{"cluster token auth without secret", cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.Sync.Git.Auth = "token" }), "need secretRef", ""},
		{"cluster unknown auth", cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.Sync.Git.Auth = "password" }), "supported values", ""},

		{"deployment absolute package", deployment(func(pd *v1alpha1.PackageDeployment) { pd.Spec.Package.Name = "/etc/passwd" }), "name must be a relative package path", ""},
		{"deployment package escapes", deployment(func(pd *v1alpha1.PackageDeployment) { pd.Spec.Package.Name = "../other-repo" }), "cannot leave the repository directory", ""},
		{"deployment package dot segment", deployment(func(pd *v1alpha1.PackageDeployment) { pd.Spec.Package.Name = "a/./b" }), "must not contain '.' or '..' segments", ""},
		{"deployment package empty segment", deployment(func(pd *v1alpha1.PackageDeployment) { pd.Spec.Package.Name = "a//b" }), "no empty segments", ""},
		{"deployment empty package", deployment(func(pd *v1alpha1.PackageDeployment) { pd.Spec.Package.Name = "" }), "spec.package.name", ""},
		{"deployment bare number revision", deployment(func(pd *v1alpha1.PackageDeployment) { pd.Spec.Package.Revision = "6" }), "revision must be vN (v1, v2, ...) or latest", ""},
		{"deployment revision v0", deployment(func(pd *v1alpha1.PackageDeployment) { pd.Spec.Package.Revision = "v0" }), "revision must be vN", ""},
		{"deployment branch as revision", deployment(func(pd *v1alpha1.PackageDeployment) { pd.Spec.Package.Revision = "main" }), "revision must be vN", ""},
		{"deployment unknown deletion policy", deployment(func(pd *v1alpha1.PackageDeployment) { pd.Spec.DeletionPolicy = "Keep" }), `supported values: "Delete", "Orphan"`, ""},
		{"deployment bad namespace", deployment(func(pd *v1alpha1.PackageDeployment) { pd.Spec.Namespace = "Free5GC_core" }), "namespace must be a DNS label", ""},
		{"deployment depends on itself", deployment(func(pd *v1alpha1.PackageDeployment) {
			pd.Spec.DependsOn = []v1alpha1.LocalObjectReference{{Name: "pd"}}
		}), "cannot depend on itself", ""},
		{"set without generator", packageSet(func(s *v1alpha1.PackageSet) { s.Spec.Targets = v1alpha1.Generator{} }), "set exactly one generator", ""},
		{"set with two generators", packageSet(func(s *v1alpha1.PackageSet) {
			s.Spec.Targets.List = []v1alpha1.ListElement{{Cluster: "edge01"}}
		}), "set exactly one generator", ""},
		{"set with a one-element matrix", packageSet(func(s *v1alpha1.PackageSet) {
			s.Spec.Targets = v1alpha1.Generator{Matrix: []v1alpha1.LeafGenerator{{Clusters: &v1alpha1.ClusterGenerator{}}}}
		}), "spec.targets.matrix", ""},
		{"set with an empty matrix element", packageSet(func(s *v1alpha1.PackageSet) {
			s.Spec.Targets = v1alpha1.Generator{Matrix: []v1alpha1.LeafGenerator{{Clusters: &v1alpha1.ClusterGenerator{}}, {}}}
		}), "each matrix element sets exactly one of clusters, list or objects", ""},
		{"set without blueprint repository", packageSet(func(s *v1alpha1.PackageSet) { s.Spec.Package.Repository = nil }), "package.repository is required", ""},
		{"set with escaping blueprint", packageSet(func(s *v1alpha1.PackageSet) { s.Spec.Package.Name = "../x" }), "cannot leave the repository directory", ""},
		{"set rolling update without steps", packageSet(func(s *v1alpha1.PackageSet) {
			s.Spec.Strategy = v1alpha1.RolloutStrategy{Type: v1alpha1.StrategyRollingUpdate}
		}), "type RollingUpdate needs rollingUpdate.steps", ""},
		{"set partitionBy with two steps", packageSet(func(s *v1alpha1.PackageSet) {
			s.Spec.Strategy = v1alpha1.RolloutStrategy{Type: v1alpha1.StrategyRollingUpdate, RollingUpdate: &v1alpha1.RollingUpdate{
				PartitionBy: "topology.kubernetes.io/region", Steps: []v1alpha1.RolloutStep{{}, {}}}}
		}), "rollingUpdate.partitionBy makes one step per value", ""},
		{"set partitionBy not a label key", packageSet(func(s *v1alpha1.PackageSet) {
			s.Spec.Strategy = v1alpha1.RolloutStrategy{Type: v1alpha1.StrategyRollingUpdate, RollingUpdate: &v1alpha1.RollingUpdate{
				PartitionBy: "region key", Steps: []v1alpha1.RolloutStep{{}}}}
		}), "rollingUpdate.partitionBy must be a label key", ""},
		{"set unknown onFailure", packageSet(func(s *v1alpha1.PackageSet) {
			s.Spec.Strategy = v1alpha1.RolloutStrategy{Type: v1alpha1.StrategyRollingUpdate, RollingUpdate: &v1alpha1.RollingUpdate{
				OnFailure: "Retry", Steps: []v1alpha1.RolloutStep{{}}}}
		}), `supported values: "Halt", "Rollback"`, ""},
		{"set unknown strategy", packageSet(func(s *v1alpha1.PackageSet) { s.Spec.Strategy.Type = "BlueGreen" }), `supported values: "AllAtOnce", "RollingUpdate"`, ""},
		{"repository url too long", repo(func(r *v1alpha1.Repository) { r.Spec.Git.URL = "https://git.example/" + strings.Repeat("a", 2100) }), "spec.git.url", ""},
		{"repository http url with token", repo(func(r *v1alpha1.Repository) { r.Spec.Git.URL = "http://token@git.example/x.git" }), "url must not carry credentials", ""},
		{"repository branch with dots", repo(func(r *v1alpha1.Repository) { r.Spec.Git.Branch = "release..1" }), "branch must be a plain branch name", ""},
		{"repository branch trailing slash", repo(func(r *v1alpha1.Repository) { r.Spec.Git.Branch = "main/" }), "branch must be a plain branch name", ""},
		{"repository directory only dots", repo(func(r *v1alpha1.Repository) { r.Spec.Git.Directory = ".." }), "directory must not contain '..' segments", ""},
		{"repository secretRef bad name", repo(func(r *v1alpha1.Repository) { r.Spec.Git.SecretRef = &v1alpha1.LocalObjectReference{Name: "Git_Creds"} }), "spec.git.secretRef.name", ""},
		{"cluster package with space", cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.Sync.Package = "deployed packages" }), "package must be a relative path", ""},
		{"cluster package trailing slash", cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.Sync.Package = "deployed-packages/" }), "package must be a relative path", ""},
		{"cluster ssh auth without secret", cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.Sync.Git.Auth = "ssh" }), "need secretRef", ""},
		{"cluster githubapp auth without secret", cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.Sync.Git.Auth = "githubapp" }), "need secretRef", ""},
		{"cluster kubeconfig secret without name", cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.KubeConfigSecretRef = &v1alpha1.SecretKeyReference{} }), "spec.kubeConfigSecretRef.name", ""},
		{"cluster repository bad name", cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.Repository.Name = "Edge 01" }), "spec.repository.name", ""},
		{"deployment package trailing slash", deployment(func(pd *v1alpha1.PackageDeployment) { pd.Spec.Package.Name = "free5gc-upf/" }), "name must be a relative package path", ""},
		{"deployment package backslash", deployment(func(pd *v1alpha1.PackageDeployment) { pd.Spec.Package.Name = `a\b` }), "name must be a relative package path", ""},
		{"deployment revision with tag prefix", deployment(func(pd *v1alpha1.PackageDeployment) { pd.Spec.Package.Revision = "free5gc-upf/v6" }), "revision must be vN", ""},
		{"deployment revision LATEST", deployment(func(pd *v1alpha1.PackageDeployment) { pd.Spec.Package.Revision = "LATEST" }), "revision must be vN", ""},
		{"deployment empty revision", deployment(func(pd *v1alpha1.PackageDeployment) { pd.Spec.Package.Revision = "" }), "revision must be vN", ""},
		{"deployment namespace too long", deployment(func(pd *v1alpha1.PackageDeployment) { pd.Spec.Namespace = strings.Repeat("a", 64) }), "spec.namespace", ""},
		{"deployment repository bad name", deployment(func(pd *v1alpha1.PackageDeployment) {
			pd.Spec.Package.Repository = &v1alpha1.LocalObjectReference{Name: "../catalog"}
		}), "spec.package.repository.name", ""},
		{"deployment duplicate dependsOn", deployment(func(pd *v1alpha1.PackageDeployment) {
			pd.Spec.DependsOn = []v1alpha1.LocalObjectReference{{Name: "crds"}, {Name: "crds"}}
		}), "Duplicate value", ""},
		{"set unknown deletion policy", packageSet(func(s *v1alpha1.PackageSet) { s.Spec.DeletionPolicy = "Keep" }), `supported values: "Delete", "Orphan"`, ""},
		{"set objects generator without kind", packageSet(func(s *v1alpha1.PackageSet) {
			s.Spec.Targets = v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{Objects: &v1alpha1.ObjectGenerator{APIVersion: "infra.nephio.org/v1alpha1"}}}
		}), "spec.targets.objects.kind", ""},
		{"set three-element matrix", packageSet(func(s *v1alpha1.PackageSet) {
			c := v1alpha1.LeafGenerator{Clusters: &v1alpha1.ClusterGenerator{}}
			s.Spec.Targets = v1alpha1.Generator{Matrix: []v1alpha1.LeafGenerator{c, c, c}}
		}), "spec.targets.matrix", ""},
		{"set rolling update with empty steps", packageSet(func(s *v1alpha1.PackageSet) {
			s.Spec.Strategy = v1alpha1.RolloutStrategy{Type: v1alpha1.StrategyRollingUpdate, RollingUpdate: &v1alpha1.RollingUpdate{}}
		}), "steps", ""},
		{"deployment without cluster", deployment(func(pd *v1alpha1.PackageDeployment) { pd.Spec.Cluster.Name = "" }), "spec.cluster.name", ""},
	}
	cases = append(cases, fieldCases()...)
	validator, err := crdvalidate.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The offline path (flotilla render) refuses the same object with the same words.
			offline := validator.Validate(ctx, unstructuredOf(t, tc.obj))
			if len(offline) == 0 {
				t.Errorf("offline validation accepts it")
			} else if !strings.Contains(offline.ToAggregate().Error(), tc.want) {
				t.Errorf("offline error %q does not say %q", offline.ToAggregate(), tc.want)
			}

			err := env.Client.Create(ctx, tc.obj)
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want the object refused as invalid, got %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			if tc.field != "" && !strings.Contains(err.Error(), tc.field) {
				t.Errorf("error %q does not name the field %s", err, tc.field)
			}
			if tc.field != "" && len(offline) > 0 && !strings.Contains(offline.ToAggregate().Error(), tc.field) {
				t.Errorf("offline error %q does not name the field %s", offline.ToAggregate(), tc.field)
			}
		})
	}
}

// unstructuredOf is obj as a file would hold it: apiVersion and kind set, a name for generateName.
func unstructuredOf(t *testing.T, obj client.Object) *unstructured.Unstructured {
	t.Helper()
	gvk, err := apiutil.GVKForObject(obj, env.Client.Scheme())
	if err != nil {
		t.Fatal(err)
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj.DeepCopyObject())
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(gvk)
	if u.GetName() == "" {
		u.SetName(u.GetGenerateName() + "offline")
		u.SetGenerateName("")
	}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	return u
}

// A deployment cannot move to another cluster: it would leave its sync object behind.
func TestDeploymentClusterIsImmutable(t *testing.T) {
	ctx := context.Background()
	_ = env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	pd := deployment(func(pd *v1alpha1.PackageDeployment) { pd.Name = "immutable" }).(*v1alpha1.PackageDeployment)
	if err := env.Client.Create(ctx, pd); err != nil {
		t.Fatal(err)
	}
	pd.Spec.Cluster.Name = "edge02"
	err := env.Client.Update(ctx, pd)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "cluster is immutable") {
		t.Fatalf("want cluster is immutable, got %v", err)
	}
}

// Defaults are filled in by the schema.
func TestDefaults(t *testing.T) {
	ctx := context.Background()
	_ = env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	c := cluster(func(*v1alpha1.WorkloadCluster) {}).(*v1alpha1.WorkloadCluster)
	r := repo(func(*v1alpha1.Repository) {}).(*v1alpha1.Repository)
	for _, o := range []client.Object{c, r} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	got := fmt.Sprintf("%s %s %s %s %s %s %s", c.Spec.Sync.Engine, c.Spec.Sync.Package, c.Spec.Approval, c.Spec.Sync.Git.Auth,
		r.Spec.Git.Branch, r.Spec.Git.Directory, r.Spec.Interval.Duration)
	if want := "ConfigSync deployed-packages Automatic none main / 1m0s"; got != want {
		t.Errorf("defaults = %q, want %q", got, want)
	}

	// Offline defaulting gives the same spec as the API server, for every kind.
	validator, err := crdvalidate.New()
	if err != nil {
		t.Fatal(err)
	}
	set := packageSet(func(*v1alpha1.PackageSet) {}).(*v1alpha1.PackageSet)
	pd := deployment(func(pd *v1alpha1.PackageDeployment) { pd.Name = "defaults" }).(*v1alpha1.PackageDeployment)
	for _, o := range []client.Object{set, pd} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	for _, served := range []client.Object{c, r, set, pd} {
		bare := map[client.Object]client.Object{
			c: cluster(func(*v1alpha1.WorkloadCluster) {}), r: repo(func(*v1alpha1.Repository) {}),
			set: packageSet(func(*v1alpha1.PackageSet) {}), pd: deployment(func(pd *v1alpha1.PackageDeployment) { pd.Name = "defaults" }),
		}[served]
		u := unstructuredOf(t, bare)
		if errs := validator.Validate(ctx, u); len(errs) > 0 {
			t.Fatalf("offline refuses a valid %T: %v", bare, errs)
		}
		// Compared as the controller reads them: decoded into the Go types.
		typed := bare.DeepCopyObject()
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
			t.Fatal(err)
		}
		want, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(served)
		got, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
		if diff := cmp.Diff(want["spec"], got["spec"]); diff != "" {
			t.Errorf("%T: offline defaults differ from the API server's (-server +offline):\n%s", served, diff)
		}
	}
}

// syncURLs without credentials are accepted, ssh ones naming a user included.
func TestSyncURLsWithoutCredentialsAreAccepted(t *testing.T) {
	ctx := context.Background()
	_ = env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	for _, u := range []string{"https://git.example/x.git", "ssh://git@git.example/x.git", "git@git.example:fleet/x.git", "git://git.example/x.git", "https://git.example/a@b.git"} {
		if err := env.Client.Create(ctx, repo(func(r *v1alpha1.Repository) { r.Spec.Git.SyncURL = u })); err != nil {
			t.Errorf("syncURL %s: %v", u, err)
		}
	}
}

// Every URL form flotilla reads is accepted, scp-style included.
func TestURLsAreAccepted(t *testing.T) {
	ctx := context.Background()
	_ = env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	for _, u := range []string{"https://git.example/x.git", "ssh://git@git.example:2222/x.git", "git@github.com:org/repo.git", "file:///srv/git/x.git"} {
		if err := env.Client.Create(ctx, repo(func(r *v1alpha1.Repository) { r.Spec.Git.URL = u })); err != nil {
			t.Errorf("url %s: %v", u, err)
		}
	}
}

// OCI repository URLs as registries spell them are accepted.
func TestOCIURLsAreAccepted(t *testing.T) {
	ctx := context.Background()
	_ = env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	for _, u := range []string{"registry.example/catalog", "oci://registry.example:5000/org/catalog", "127.0.0.1:5000/c", "ghcr.io/my-org/kpt_packages/free5gc"} {
		if err := env.Client.Create(ctx, repo(func(r *v1alpha1.Repository) { r.Spec.Git, r.Spec.OCI = nil, &v1alpha1.OCIRepository{URL: u} })); err != nil {
			t.Errorf("oci url %s: %v", u, err)
		}
	}
}
