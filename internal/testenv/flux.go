package testenv

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Workload is a workload cluster for end-to-end tests: its own API server, with Flux's
// source-controller and kustomize-controller applying what flotilla publishes to it.
type Workload struct {
	*Env
	// Kubeconfig is an admin kubeconfig of the API server: what Flux uses, and what a
	// WorkloadCluster's kubeConfigSecretRef Secret holds so flotilla can bootstrap the cluster
	// and read health back.
	Kubeconfig []byte
	flux       *flux
}

// StartWorkload starts an API server and the Flux controllers (from FLOTILLA_FLUX_BIN) against
// it. The server serves Flux's CRDs only, as a cluster with Flux installed does (the others
// would only slow its start). dir holds Flux's storage, kubeconfig and logs; it must exist and be
// the workload's own.
func StartWorkload(dir string) (*Workload, error) {
	bin := os.Getenv("FLOTILLA_FLUX_BIN")
	if bin == "" {
		return nil, errNoFlux
	}
	env, err := start(filepath.Join(SharedCRDs(), "flux"))
	if err != nil {
		return nil, err
	}
	kubeconfig, err := env.AdminKubeconfig("flux-admin")
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	f, err := startFlux(bin, dir, kubeconfig)
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &Workload{Env: env, Kubeconfig: kubeconfig, flux: f}, nil
}

// Stop stops Flux, then the API server.
func (w *Workload) Stop() error {
	w.flux.stop()
	return w.Env.Stop()
}

// DumpLogs writes the last lines of the Flux controllers' logs to out, to see why a story failed.
func (w *Workload) DumpLogs(out io.Writer, title string) {
	for _, p := range w.flux.procs {
		b, err := os.ReadFile(w.flux.log(p))
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		fmt.Fprintf(out, "--- %s: last lines of %s\n%s\n", title, filepath.Base(w.flux.log(p)), strings.Join(lines, "\n"))
	}
}

// flux is source-controller and kustomize-controller running as local processes.
type flux struct {
	dir   string
	procs []*exec.Cmd
}

func (f *flux) log(p *exec.Cmd) string { return filepath.Join(f.dir, filepath.Base(p.Path)+".log") }

// startFlux runs the controllers against the API server kubeconfig reaches, each on addresses of
// its own, with storage and logs under dir.
func startFlux(bin, dir string, kubeconfig []byte) (*flux, error) {
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	storagePath := filepath.Join(dir, "flux-storage")
	if err := os.MkdirAll(storagePath, 0o755); err != nil {
		return nil, err
	}
	addrs, err := freeAddrs(5)
	if err != nil {
		return nil, err
	}
	common := func(metrics, health string) []string {
		return []string{"--enable-leader-election=false", "--metrics-addr=" + metrics, "--health-addr=" + health, "--log-level=info", "--requeue-dependency=2s"}
	}
	f := &flux{dir: dir, procs: []*exec.Cmd{
		exec.Command(filepath.Join(bin, "source-controller"), append(common(addrs[0], addrs[1]),
			"--storage-path="+storagePath, "--storage-addr="+addrs[2], "--storage-adv-addr="+addrs[2])...),
		exec.Command(filepath.Join(bin, "kustomize-controller"), common(addrs[3], addrs[4])...),
	}}
	for i, p := range f.procs {
		log, err := os.Create(f.log(p))
		if err != nil {
			f.procs = f.procs[:i]
			f.stop()
			return nil, err
		}
		p.Env = append(os.Environ(), "KUBECONFIG="+kc)
		p.Stdout, p.Stderr = log, log
		err = p.Start()
		log.Close() // the child holds its own descriptor
		if err != nil {
			f.procs = f.procs[:i]
			f.stop()
			return nil, fmt.Errorf("start %s: %w", p.Path, err)
		}
	}
	return f, nil
}

func (f *flux) stop() {
	for _, p := range f.procs {
		_ = p.Process.Kill()
		_ = p.Wait()
	}
}

// freeAddrs returns n distinct local addresses free now. The listeners are held until all n are
// chosen, so the kernel cannot hand out one port twice.
func freeAddrs(n int) ([]string, error) {
	var addrs []string
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		addrs = append(addrs, l.Addr().String())
	}
	return addrs, nil
}

var errNoFlux = errors.New("FLOTILLA_FLUX_BIN is not set: run the tests with `make test`, which builds Flux into bin/flux")
