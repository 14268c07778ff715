// Package e2e runs flotilla end to end: a real API server (envtest), a real smart-HTTP git
// server, the flotilla controller, and Flux's source-controller and kustomize-controller as
// local processes applying what flotilla publishes. Each test is a user story checked on what a
// user would see in the cluster.
package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/internal/testenv"
)

var (
	// env is the management cluster: flotilla's objects and controller.
	env *testenv.Env
	// workload is the workload cluster: Flux runs against it and applies what flotilla publishes.
	workload *testenv.Env
	// kubeconfig lets Flux and flotilla (through kubeConfigSecretRef) reach the workload cluster.
	kubeconfig []byte
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	fluxBin := os.Getenv("FLOTILLA_FLUX_BIN")
	if fluxBin == "" {
		fmt.Fprintln(os.Stderr, "FLOTILLA_FLUX_BIN is not set: run the tests with `make test`, which builds Flux into bin/flux")
		return 1
	}
	var err error
	if env, err = testenv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	if workload, err = testenv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = workload.Stop() }()
	work, err := os.MkdirTemp("", "flotilla-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(work)

	if kubeconfig, err = workload.AdminKubeconfig("e2e-admin"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	stopFlux, err := startFlux(fluxBin, work)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stopFlux()

	stop, err := env.StartManager(filepath.Join(work, "git-cache"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if code != 0 {
		dumpLogs(work)
	}
	if err := stop(); err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		return 1
	}
	return code
}

// startFlux runs source-controller and kustomize-controller against the test API server; their
// logs go to files under work, printed if they exit early.
func startFlux(bin, work string) (stop func(), err error) {
	kc := filepath.Join(work, "kubeconfig")
	if err := os.WriteFile(kc, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(work, "flux-storage"), 0o755); err != nil {
		return nil, err
	}
	storage, err := freeAddr()
	if err != nil {
		return nil, err
	}
	common := func() []string {
		return []string{"--enable-leader-election=false", "--metrics-addr=" + must(freeAddr()), "--health-addr=" + must(freeAddr()), "--log-level=info", "--requeue-dependency=2s"}
	}
	procs := []*exec.Cmd{
		exec.Command(filepath.Join(bin, "source-controller"), append(common(),
			"--storage-path="+filepath.Join(work, "flux-storage"), "--storage-addr="+storage, "--storage-adv-addr="+storage)...),
		exec.Command(filepath.Join(bin, "kustomize-controller"), common()...),
	}
	for _, p := range procs {
		log, err := os.Create(filepath.Join(work, filepath.Base(p.Path)+".log"))
		if err != nil {
			return nil, err
		}
		p.Env = append(os.Environ(), "KUBECONFIG="+kc)
		p.Stdout, p.Stderr = log, log
		if err := p.Start(); err != nil {
			return nil, fmt.Errorf("start %s: %w", p.Path, err)
		}
	}
	return func() {
		for _, p := range procs {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
	}, nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func must(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}

// namespace creates a namespace in the management and the workload cluster.
func namespace(ctx context.Context, name string) error {
	for _, e := range []*testenv.Env{env, workload} {
		if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			return err
		}
	}
	return nil
}

// dumpLogs prints the end of the Flux controllers' logs, to see why a story failed.
func dumpLogs(work string) {
	logs, _ := filepath.Glob(filepath.Join(work, "*.log"))
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		fmt.Fprintf(os.Stderr, "--- last lines of %s\n%s\n", filepath.Base(l), strings.Join(lines, "\n"))
	}
}
