package remotecluster

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/kubetest"
)

// startAPIServer starts a kube-apiserver and etcd for the test (skipped without the binaries), and
// returns an admin client of it.
func startAPIServer(t *testing.T) (*envtest.Environment, *rest.Config, client.Client) {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("KUBEBUILDER_ASSETS is unset: run with make test")
	}
	env := &envtest.Environment{ControlPlaneStartTimeout: 2 * time.Minute}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	admin, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return env, cfg, admin
}

// TestKubeconfigSecretIsReadOncePerMaxAge: health reads (one list per interval) do not read the
// kubeconfig Secret each time; a working client is kept for KubeconfigMaxAge, a failed request
// makes the next use read the Secret at once (a fixed kubeconfig is used without waiting), and a
// deleted Secret revokes the client.
func TestKubeconfigSecretIsReadOncePerMaxAge(t *testing.T) {
	env, _, admin := startAPIServer(t)
	user, err := env.AddUser(envtest.User{Name: "workload", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	good, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := clientcmd.Load(good)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range parsed.Clusters {
		c.Server = "https://127.0.0.1:1" // nothing listens there
	}
	broken, err := clientcmd.Write(*parsed)
	if err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kc", Namespace: "default"}, Data: map[string][]byte{"value": good}}
	if err := admin.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	setKubeconfig := func(data []byte) {
		t.Helper()
		secret.Data["value"] = data
		if err := admin.Update(ctx, secret); err != nil {
			t.Fatal(err)
		}
	}
	cluster := &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Name: "edge01", Namespace: "default"}}
	cluster.Spec.KubeConfigSecretRef = &v1alpha1.SecretKeyReference{Name: "kc"}

	now := time.Now()
	clients := &Clients{Now: func() time.Time { return now }}
	reader := &kubetest.SecretReads{Reader: admin}
	configMaps := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	get := func() error {
		_, err := clients.Get(ctx, reader, cluster, configMaps, "kube-system", "none", 10*time.Second)
		return err
	}
	expectReads := func(want int32, when string) {
		t.Helper()
		if got := reader.N.Load(); got != want {
			t.Fatalf("%s: %d Secret reads, want %d", when, got, want)
		}
	}

	if err := get(); err != nil {
		t.Fatal(err)
	}
	expectReads(1, "first health read")
	for range 20 { // 20 health intervals, under KubeconfigMaxAge
		now = now.Add(11 * time.Second)
		if err := get(); err != nil {
			t.Fatal(err)
		}
	}
	expectReads(1, "20 health intervals later")

	// A rotated kubeconfig is read once the old client is KubeconfigMaxAge old; until then the
	// working client stays.
	setKubeconfig(broken)
	now = now.Add(KubeconfigMaxAge)
	if err := get(); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("health read with the broken kubeconfig = %v; want the connection error", err)
	}
	expectReads(2, "after KubeconfigMaxAge")

	// The request failed: the fixed Secret is read at the next use, not KubeconfigMaxAge later.
	setKubeconfig(good)
	now = now.Add(11 * time.Second)
	if err := get(); err != nil {
		t.Fatalf("health read after the kubeconfig was fixed: %v", err)
	}
	expectReads(3, "after a failed request")

	// A deleted Secret revokes the client: no request goes out with it.
	if err := admin.Delete(ctx, secret); err != nil {
		t.Fatal(err)
	}
	now = now.Add(KubeconfigMaxAge)
	if err := get(); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("health read after the Secret was deleted = %v; want not found", err)
	}
	now = now.Add(11 * time.Second)
	if err := get(); err == nil {
		t.Fatal("a health read after the Secret was deleted succeeded")
	}
	expectReads(5, "after the Secret was deleted")
}

// TestDeletedClusterGetsNoClientAgain: once the WorkloadCluster reconciler forgot a deleted
// cluster, a read that started before (a poll, a deployment's health read) builds no client for
// it again, while a cluster created again under the same name (another UID) gets one.
func TestDeletedClusterGetsNoClientAgain(t *testing.T) {
	env, _, admin := startAPIServer(t)
	user, err := env.AddUser(envtest.User{Name: "workload", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := admin.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kc", Namespace: "default"}, Data: map[string][]byte{"value": kubeconfig}}); err != nil {
		t.Fatal(err)
	}
	cluster := func(uid types.UID) *v1alpha1.WorkloadCluster {
		c := &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Name: "edge01", Namespace: "default", UID: uid}}
		c.Spec.KubeConfigSecretRef = &v1alpha1.SecretKeyReference{Name: "kc"}
		return c
	}
	clients := &Clients{}
	reader := &kubetest.SecretReads{Reader: admin}
	if _, err := clients.For(ctx, reader, cluster("first")); err != nil {
		t.Fatal(err)
	}
	clients.Forget(client.ObjectKeyFromObject(cluster("first")))
	if _, err := clients.For(ctx, reader, cluster("first")); err == nil || !strings.Contains(err.Error(), "deleted") {
		t.Fatalf("client for the deleted cluster = %v; want an error saying it was deleted", err)
	}
	if got := reader.N.Load(); got != 1 {
		t.Fatalf("%d Secret reads; the deleted cluster's must not read its Secret again", got)
	}
	if clients.Identity(cluster("first")) != [32]byte{} {
		t.Fatal("the deleted cluster has a client again")
	}
	if _, err := clients.For(ctx, reader, cluster("second")); err != nil {
		t.Fatalf("client for the cluster created again under the same name: %v", err)
	}
}
