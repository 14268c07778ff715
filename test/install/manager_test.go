package install

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/internal/localaddr"
	"github.com/flotilla-dev/flotilla/internal/scheme"
)

// TestDeploymentWiring checks that the Deployment's probes and the metrics Service point at the
// ports its args bind.
func TestDeploymentWiring(t *testing.T) {
	objs := kustomize(t, "config/default")
	dep, svc := find(t, objs, "Deployment", "flotilla-controller"), find(t, objs, "Service", "flotilla-controller-metrics")
	c := containers(t, dep)[0]
	ports := map[string]string{}
	for _, p := range c["ports"].([]any) {
		p := p.(map[string]any)
		ports[p["name"].(string)] = strconv.Itoa(int(p["containerPort"].(float64)))
	}
	args := flags(c)
	probe := func(kind string) string {
		g, _, _ := unstructured.NestedMap(c, kind, "httpGet")
		return fmt.Sprintf("%v :%s", g["path"], ports[fmt.Sprint(g["port"])])
	}
	svcPorts, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	target := ports[fmt.Sprint(svcPorts[0].(map[string]any)["targetPort"])]
	got := []string{probe("livenessProbe"), probe("readinessProbe"), ":" + target}
	want := []string{"/healthz " + args["--health-probe-bind-address"], "/readyz " + args["--health-probe-bind-address"], args["--metrics-bind-address"]}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("probes and metrics Service point at %v, the args bind %v", got, want)
	}
	mounts := map[string]bool{}
	for _, m := range c["volumeMounts"].([]any) {
		mounts[m.(map[string]any)["mountPath"].(string)] = true
	}
	if !mounts[args["--cache-dir"]] || !mounts["/tmp"] {
		t.Errorf("the root filesystem is read-only: --cache-dir %s and /tmp need volumes, mounted: %v", args["--cache-dir"], mounts)
	}
}

// TestManagerRunsWithManifestRBAC runs bin/flotilla with the Deployment's args (ports and cache
// directory made local) as the ServiceAccount of config/default, bound only to its ClusterRole,
// and checks it becomes ready, wins the leader election, and does its job: a PackageSet
// (through a Repository with credentials) deploys a package to a cluster.
func TestManagerRunsWithManifestRBAC(t *testing.T) {
	g := NewWithT(t)
	objs := installDefault(t)
	dep := find(t, objs, "Deployment", "flotilla-controller")
	ns, sa := dep.GetNamespace(), dep.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["serviceAccountName"].(string)

	kubeconfig := serviceAccountKubeconfig(t, ns, sa)
	saClient, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := client.New(saClient, client.Options{Scheme: scheme.New()})
	g.Expect(err).NotTo(HaveOccurred())
	// The identity is really restricted: Secrets may be read one by one, never listed.
	g.Expect(apierrors.IsForbidden(c.List(ctx, &corev1.SecretList{}))).To(BeTrue(), "the ServiceAccount must not list Secrets")

	cache := t.TempDir()
	logs, probePort, metricsPort := startReady(t, buildFlotilla(t), func(probePort, metricsPort string) []string {
		args := localArgs(containers(t, dep)[0], map[string]string{
			"--health-probe-bind-address": "127.0.0.1:" + probePort,
			"--metrics-bind-address":      "127.0.0.1:" + metricsPort,
			"--cache-dir":                 cache,
		})
		// Out of a cluster there is no pod namespace to hold the lease; in the Deployment it is the pod's.
		return append(args, "--kubeconfig="+kubeconfig, "--leader-election-namespace="+ns)
	})

	g.Expect(get(t, "http://127.0.0.1:"+probePort+"/healthz")).To(Equal(200), "/healthz")
	g.Expect(get(t, "http://127.0.0.1:"+metricsPort+"/metrics")).To(Equal(200), "/metrics")
	g.Eventually(func() string {
		var lease coordinationv1.Lease
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "flotilla.flotilla.dev"}, &lease); err != nil {
			return err.Error()
		}
		return ptr.Deref(lease.Spec.HolderIdentity, "")
	}, time.Minute, 200*time.Millisecond).ShouldNot(Or(BeEmpty(), ContainSubstring("not found")), "leader election lease")

	const fleet = "fleet"
	edgeRepo := newFleet(t, fleet, gittest.NewServer(t, gittest.WithBasicAuth("flotilla", "s3cret")))
	expectFleetDeploys(t, logs, fleet, edgeRepo)
	if l := logs.String(); strings.Contains(l, "forbidden") {
		t.Errorf("the controller was refused something its RBAC should grant:\n%s", grep(l, "forbidden"))
	}
}

// expectFleetDeploys waits for newFleet's objects in ns to become Ready and for the cluster's
// first deployed-packages revision in edgeRepo, failing at once when the controller's log shows
// a refused request.
func expectFleetDeploys(t *testing.T, logs *syncBuffer, ns, edgeRepo string) {
	t.Helper()
	g := NewWithT(t)
	// A refused request shows in the log long before a condition times out: stop at once.
	readyOf := func(obj client.Object, name string) func() string {
		return func() string {
			if l := logs.String(); strings.Contains(l, "forbidden") {
				StopTrying("the controller was refused something its RBAC should grant:\n" + grep(l, "forbidden")).Now()
			}
			return ready(t, obj, ns, name)
		}
	}
	g.Eventually(readyOf(&v1alpha1.Repository{}, "catalog"), time.Minute, 200*time.Millisecond).Should(Equal("True Fetched"))
	g.Eventually(readyOf(&v1alpha1.PackageDeployment{}, "hello-edge01"), 2*time.Minute, 200*time.Millisecond).Should(Equal("True Published"))
	g.Eventually(readyOf(&v1alpha1.WorkloadCluster{}, "edge01"), time.Minute, 200*time.Millisecond).Should(Equal("True Published"))
	g.Eventually(readyOf(&v1alpha1.PackageSet{}, "hello"), time.Minute, 200*time.Millisecond).Should(Equal("True Ready"))
	g.Expect(gittest.Tags(t, edgeRepo)).To(HaveKey("deployed-packages/v1"))
}

// newFleet creates, in a new namespace ns, a catalog with nginx-hello v1 and a cluster
// repository on git, a Secret "git" with the credentials gittest.WithBasicAuth("flotilla",
// "s3cret") wants, and a PackageSet deploying the package to the cluster. It returns the cluster
// repository's directory.
func newFleet(t *testing.T, ns string, git *gittest.Server) string {
	t.Helper()
	git.CreateRepo(t, "catalog")
	git.CreateRepo(t, "edge01")
	gittest.Commit(t, git.Dir("catalog"), "nginx-hello", map[string]string{
		"nginx-hello/Kptfile":        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: nginx-hello\n",
		"nginx-hello/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hello\ndata:\n  greeting: hello\n",
	}, "nginx-hello/v1")
	repo := func(name string) client.Object {
		return &v1alpha1.Repository{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: v1alpha1.RepositorySpec{
				Git:      &v1alpha1.GitRepository{URL: git.URL + "/" + name + ".git", SecretRef: &v1alpha1.LocalObjectReference{Name: "git"}},
				Interval: &metav1.Duration{Duration: 5 * time.Second},
			},
		}
	}
	// The namespace may exist already: an install may need it first.
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	for _, o := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "git", Namespace: ns}, StringData: map[string]string{"username": "flotilla", "password": "s3cret"}},
		repo("catalog"),
		repo("edge01"),
		&v1alpha1.WorkloadCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "edge01", Namespace: ns, Labels: map[string]string{"site-type": "edge"}},
			Spec:       v1alpha1.WorkloadClusterSpec{Repository: v1alpha1.LocalObjectReference{Name: "edge01"}},
		},
		&v1alpha1.PackageSet{
			ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: ns},
			Spec: v1alpha1.PackageSetSpec{
				Package: v1alpha1.PackageReference{Repository: &v1alpha1.LocalObjectReference{Name: "catalog"}, Name: "nginx-hello", Revision: "v1"},
				Targets: v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{Clusters: &v1alpha1.ClusterGenerator{
					Selector: v1alpha1.LabelSelector{MatchLabels: map[string]string{"site-type": "edge"}},
				}}},
			},
		},
	} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	return git.Dir("edge01")
}

// ready is "<status> <reason>" of obj's Ready condition.
func ready(t *testing.T, obj client.Object, ns, name string) string {
	t.Helper()
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		return err.Error()
	}
	var conds []metav1.Condition
	switch o := obj.(type) {
	case *v1alpha1.Repository:
		conds = o.Status.Conditions
	case *v1alpha1.PackageDeployment:
		conds = o.Status.Conditions
	case *v1alpha1.WorkloadCluster:
		conds = o.Status.Conditions
	case *v1alpha1.PackageSet:
		conds = o.Status.Conditions
	}
	c := meta.FindStatusCondition(conds, v1alpha1.ConditionReady)
	if c == nil {
		return "no Ready condition"
	}
	return string(c.Status) + " " + c.Reason
}

// serviceAccountKubeconfig writes a kubeconfig holding a token of the ServiceAccount, which the
// API server authenticates as system:serviceaccount:NS:NAME.
func serviceAccountKubeconfig(t *testing.T, ns, name string) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if err := k8s.SubResource("token").Create(ctx, sa, tr); err != nil {
		t.Fatalf("token for ServiceAccount %s/%s: %v", ns, name, err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["sa"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: name}
	kc.CurrentContext = "sa"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// localArgs is the container's args with the values of the flags in override replaced; every
// overridden flag must be among the args.
func localArgs(c map[string]any, override map[string]string) []string {
	var out []string
	seen := map[string]bool{}
	for _, a := range c["args"].([]any) {
		a := a.(string)
		name, _, _ := strings.Cut(a, "=")
		if v, ok := override[name]; ok {
			a, seen[name] = name+"="+v, true
		}
		out = append(out, a)
	}
	for name := range override {
		if !seen[name] {
			panic("the Deployment's args do not set " + name)
		}
	}
	return out
}

// flags maps the container's --name=value args.
func flags(c map[string]any) map[string]string {
	out := map[string]string{}
	for _, a := range c["args"].([]any) {
		if name, v, ok := strings.Cut(a.(string), "="); ok {
			out[name] = v
		}
	}
	return out
}

func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s", kind, name)
	return nil
}

// buildFlotilla builds cmd/flotilla from the main module, as `make build` does.
func buildFlotilla(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "flotilla")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/flotilla")
	cmd.Dir = root()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/flotilla: %v\n%s", err, out)
	}
	return bin
}

// process is a flotilla run by startProcess.
type process struct {
	logs   *syncBuffer
	cmd    *exec.Cmd
	done   chan error // yields Wait's result once
	killed bool
}

// kill ends the process at once (SIGKILL: no lease released, nothing flushed), as a node that dies.
func (p *process) kill() {
	p.killed = true
	_ = p.cmd.Process.Kill()
	<-p.done
}

// startProcess runs bin with args until the test ends (SIGTERM, as the kubelet does) or kill;
// its output is printed when the test fails.
func startProcess(t *testing.T, bin string, args []string) *process {
	t.Helper()
	p := &process{logs: &syncBuffer{}, done: make(chan error, 1)}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if !p.killed {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-p.done:
				if err != nil {
					t.Errorf("flotilla controller did not stop cleanly on SIGTERM: %v", err)
				}
			case <-time.After(30 * time.Second):
				_ = p.cmd.Process.Kill()
				t.Errorf("flotilla controller did not stop within 30s of SIGTERM")
			}
		}
		if t.Failed() || os.Getenv("FLOTILLA_TEST_LOG") != "" {
			t.Logf("flotilla %s\n%s", strings.Join(args, " "), p.logs.String())
		}
	})
	return p
}

func get(t *testing.T, url string) int {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url) //nolint:noctx // a probe, as the kubelet's
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// startReady starts bin with the args args gives for a probe and a metrics port, both free, and
// waits until /readyz answers 200. Ports are free when chosen and bound a moment later; a
// controller that exits because another process took one in between is started again on new
// ones.
func startReady(t *testing.T, bin string, args func(probePort, metricsPort string) []string) (logs *syncBuffer, probePort, metricsPort string) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		addrs, err := localaddr.Free(2)
		if err != nil {
			t.Fatal(err)
		}
		probePort, metricsPort = port(addrs[0]), port(addrs[1])
		p := startProcess(t, bin, args(probePort, metricsPort))
		err = waitReady(t, p, probePort, metricsPort)
		if err == nil {
			return p.logs, probePort, metricsPort
		}
		if !p.killed || !localaddr.Taken([]byte(p.logs.String())) || attempt == localaddr.Attempts {
			t.Fatalf("flotilla controller: %v:\n%s", err, p.logs.String())
		}
	}
}

// waitReady waits up to a minute until p's /readyz and /metrics answer 200 (the metrics port is
// bound after the probe's), or p exits.
func waitReady(t *testing.T, p *process, probePort, metricsPort string) error {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		select {
		case err := <-p.done:
			p.killed = true // gone: nothing for the cleanup to stop
			return fmt.Errorf("exited at start (%v)", err)
		default:
		}
		if get(t, "http://127.0.0.1:"+probePort+"/readyz") == http.StatusOK && get(t, "http://127.0.0.1:"+metricsPort+"/metrics") == http.StatusOK {
			return nil
		}
	}
	return fmt.Errorf("/readyz did not answer 200 within a minute")
}

// port is the port of a "host:port" address.
func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

func grep(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// syncBuffer is a bytes.Buffer safe for the process's two output streams and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
