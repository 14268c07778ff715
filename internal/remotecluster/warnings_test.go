package remotecluster

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// oneSecret is a reader holding one kubeconfig Secret.
type oneSecret struct {
	client.Reader
	secret *corev1.Secret
}

func (r oneSecret) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	s, ok := obj.(*corev1.Secret)
	if !ok || key != client.ObjectKeyFromObject(r.secret) {
		return fmt.Errorf("unexpected read of %T %s", obj, key)
	}
	r.secret.DeepCopyInto(s)
	return nil
}

// clusterAt is a WorkloadCluster tenant-a/edge01 whose kubeconfig Secret names the API server at
// url, with a token.
func clusterAt(t *testing.T, url string) (*v1alpha1.WorkloadCluster, *corev1.Secret) {
	t.Helper()
	kubeconfig, err := clientcmd.Write(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"c": {Server: url}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"u": {Token: "t"}},
		Contexts:       map[string]*clientcmdapi.Context{"x": {Cluster: "c", AuthInfo: "u"}},
		CurrentContext: "x",
	})
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kc", Namespace: "tenant-a"}, Data: map[string][]byte{"value": kubeconfig}}
	cluster := &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Name: "edge01", Namespace: "tenant-a"}}
	cluster.Spec.KubeConfigSecretRef = &v1alpha1.SecretKeyReference{Name: "kc"}
	return cluster, secret
}

// A workload cluster's API server that sends many long warnings with every answer gets each
// distinct one logged once, cut short and with the cluster named, and no more than MaxWarnings of
// them, however many requests it answers. (A hostile server is what is tested: a real API server
// bounds its warnings.)
func TestWorkloadClusterWarningsAreBounded(t *testing.T) {
	long := strings.Repeat("é", 4000) // a cut must not split a character
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := range 100 {
			w.Header().Add("Warning", fmt.Sprintf(`299 - "warning %d %s"`, i, long))
		}
		w.Header().Add("Warning", `299 - "deprecated: use v2"`)
		w.Header().Add("Warning", `299 - "deprecated: use v2"`)
		w.Header().Add("Warning", `199 - "not a 299"`)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"apiVersion":"v1","kind":"ConfigMapList","metadata":{"resourceVersion":"1"},"items":[]}`)
	}))
	t.Cleanup(srv.Close)
	cluster, secret := clusterAt(t, srv.URL)

	var mu sync.Mutex
	var lines []string
	logger := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{})
	ctx := log.IntoContext(context.Background(), logger)
	clients := &Clients{Known: KnownKinds()}
	configMaps := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	for range 3 {
		if _, err := clients.Get(ctx, oneSecret{secret: secret}, cluster, configMaps, "kube-system", "site", 0); err != nil {
			t.Fatal(err)
		}
	}

	mu.Lock()
	defer mu.Unlock()
	if len(lines) != MaxWarnings+1 {
		t.Fatalf("%d lines logged for 3 answers of 103 warnings, want %d (the first %d distinct, then one saying no more are logged):\n%s", len(lines), MaxWarnings+1, MaxWarnings, strings.Join(lines, "\n"))
	}
	for i, l := range lines {
		if !strings.Contains(l, `"workloadCluster"="tenant-a/edge01"`) {
			t.Errorf("line %d does not name the cluster: %.200s", i, l)
		}
		if len(l) > MaxWarningLen+200 {
			t.Errorf("line %d is %d bytes long, want the warning cut to %d", i, len(l), MaxWarningLen)
		}
		if strings.Contains(l, "\uFFFD") {
			t.Errorf("line %d holds a broken character: %.200s", i, l)
		}
	}
	if !strings.Contains(lines[MaxWarnings], "no more are logged") {
		t.Errorf("last line %q, want it to say no more warnings are logged", lines[MaxWarnings])
	}
	if strings.Contains(strings.Join(lines, "\n"), "not a 299") {
		t.Error("a warning that is not code 299 was logged")
	}
}

// The same warning, however often it comes, is logged once; distinct ones each once.
func TestWarningsLoggedOnce(t *testing.T) {
	var lines []string
	ctx := log.IntoContext(context.Background(), funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{}))
	w := &warnings{cluster: client.ObjectKey{Namespace: "ns", Name: "c"}}
	for range 5 {
		w.HandleWarningHeaderWithContext(ctx, 299, "-", "v1beta1 Foo is deprecated")
		w.HandleWarningHeaderWithContext(ctx, 299, "-", "v1beta1 Bar is deprecated")
	}
	if len(lines) != 2 || !strings.Contains(lines[0], "Foo") || !strings.Contains(lines[1], "Bar") {
		t.Fatalf("logged %q, want each warning once", lines)
	}
}
