// Package testenv starts a real kube-apiserver and etcd (envtest) with flotilla's CRDs and the
// third-party GitOps CRDs, for tests. The binaries come from `make envtest` (KUBEBUILDER_ASSETS);
// the third-party CRDs are read from ../shared/crds (FLOTILLA_SHARED_CRDS).
package testenv

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/flotilla-dev/flotilla/internal/controller"
	"github.com/flotilla-dev/flotilla/internal/localaddr"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
	"github.com/flotilla-dev/flotilla/internal/scheme"
)

// Env is a running test API server.
type Env struct {
	Config *rest.Config
	Client client.Client
	env    *envtest.Environment
}

// Root is the repository's root directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// SharedCRDs is the directory of the third-party CRDs (Config Sync, Argo CD, Flux).
func SharedCRDs() string {
	if d := os.Getenv("FLOTILLA_SHARED_CRDS"); d != "" {
		return d
	}
	return filepath.Join(Root(), "..", "shared", "crds")
}

// Start starts an API server for the calling test binary, serving flotilla's CRDs and the
// third-party GitOps CRDs. Call it from TestMain; it fails when KUBEBUILDER_ASSETS is unset (run
// the tests with `make test`).
func Start() (*Env, error) {
	return startServing(nil)
}

// StartOnEveryLoopbackAddress starts an API server as Start does, bound to every local address
// instead of 127.0.0.1 alone, so that clients can reach it at distinct loopback addresses
// (127.0.0.0/8), each address a connection of its own, as a fleet's clusters are. Its serving
// certificate names localhost: a client at another address says so (tls-server-name). Its port
// is free when chosen, as envtest's own is; one taken before the server binds it fails the start.
func StartOnEveryLoopbackAddress() (*Env, error) {
	addrs, err := localaddr.Free(1)
	if err != nil {
		return nil, err
	}
	_, port, _ := strings.Cut(addrs[0], ":")
	return startServing(func(api *envtest.APIServer) {
		serving := &api.SecureServing
		serving.Address, serving.Port = "0.0.0.0", port
	})
}

// startServing starts the API server of Start, its serving address set by serve (nil: envtest's
// default, a free port on 127.0.0.1).
func startServing(serve func(*envtest.APIServer)) (*Env, error) {
	e, err := start(serve,
		filepath.Join(Root(), "config", "crd", "bases"),
		filepath.Join(SharedCRDs(), "configsync"),
		filepath.Join(SharedCRDs(), "argocd"),
		filepath.Join(SharedCRDs(), "flux"),
	)
	if err != nil {
		return nil, err
	}
	// Config Sync's RootSyncs live here; create it so generated RootSyncs can be dry-run created.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "config-management-system"}}
	if err := e.Client.Create(context.Background(), ns); err != nil {
		_ = e.Stop()
		return nil, err
	}
	return e, nil
}

// start starts an API server serving the CRDs in crdDirs, its serving address set by serve (nil:
// envtest's default).
func start(serve func(*envtest.APIServer), crdDirs ...string) (*Env, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, errNoAssets
	}
	// Once per test binary: tests that run several API servers start them concurrently.
	setLogger.Do(func() {
		// Every log line, at every level, goes to Logs (tests grep it for leaked secrets);
		// stderr shows them only with FLOTILLA_TEST_LOG.
		out := io.Writer(&logs)
		if os.Getenv("FLOTILLA_TEST_LOG") != "" {
			out = io.MultiWriter(&logs, os.Stderr)
		}
		ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.Level(zapcore.DebugLevel), zap.WriteTo(out)))
	})
	env := &envtest.Environment{
		CRDDirectoryPaths:     crdDirs,
		ErrorIfCRDPathMissing: true,
		// envtest waits 10 s for the CRDs to be served by default: too short on 2 cores while
		// other test binaries start their own API servers (make test runs packages in parallel).
		CRDInstallOptions: envtest.CRDInstallOptions{MaxTime: 2 * time.Minute},
		// The same for the API server's own start (default 20 s): test/fleet starts four at once.
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	if serve != nil {
		serve(env.ControlPlane.GetAPIServer())
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &Env{Config: cfg, Client: c, env: env}, nil
}

// AdminKubeconfig returns a kubeconfig for a new user in system:masters, for processes that
// reach the test API server (Flux controllers, a workload cluster Secret).
func (e *Env) AdminKubeconfig(user string) ([]byte, error) {
	u, err := e.env.AddUser(envtest.User{Name: user, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, err
	}
	return u.KubeConfig()
}

// Stop stops the API server.
func (e *Env) Stop() error { return e.env.Stop() }

// StartManager runs the flotilla controllers against the API server, with their git mirrors in
// cacheDir, until stop is called. Call it once per test binary (from TestMain): two managers would
// reconcile the same objects.
func (e *Env) StartManager(cacheDir string) (stop func() error, err error) {
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{
		Scheme:  scheme.New(),
		Cache:   controller.CacheOptions(nil),
		Metrics: metricsserver.Options{BindAddress: "0"},
		// As `flotilla controller --reconcile-timeout`, shorter: fault tests hang the git server.
		Controller: config.Controller{ReconciliationTimeout: 10 * time.Second},
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	store := pkgrepo.NewStore(cacheDir)
	store.RefreshInterval = time.Nanosecond // tests publish tags and expect them seen at once
	opts := controller.Options{HealthInterval: 2 * time.Second, FactsInterval: 2 * time.Second, RootSyncCheck: 3 * time.Second}
	opts.ExecFunctions = []string{ExecFunction()}
	opts.ObjectsGeneratorKinds = []schema.GroupKind{ObjectsGeneratorKind}
	if err := controller.Setup(ctx, mgr, store, opts); err != nil {
		cancel()
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() error {
		cancel()
		return <-done
	}, nil
}

// ExecFunction is the one exec KRM function StartManager's controller allows
// (--allow-exec-functions): testdata/exec-function.sh, which changes "greeting: hello" values to
// "greeting: hello-from-exec".
func ExecFunction() string {
	return filepath.Join(Root(), "internal", "testenv", "testdata", "exec-function.sh")
}

// ObjectsGeneratorKind is the one kind StartManager's controller lets objects generators read
// (--objects-generator-kinds). Its CRD is not installed: the tests that use it install one.
var ObjectsGeneratorKind = schema.GroupKind{Group: "infra.nephio.org", Kind: "WorkloadCluster"}

// GVK is a shorthand for tests that create unstructured third-party objects.
func GVK(group, version, kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
}

var (
	logs      lockedBuffer
	setLogger sync.Once
)

// Logs returns everything the controllers logged so far in this test binary.
func Logs() string { return logs.String() }

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var errNoAssets = errors.New("KUBEBUILDER_ASSETS is not set: run the tests with `make test`, which builds kube-apiserver and etcd into bin/k8s")
