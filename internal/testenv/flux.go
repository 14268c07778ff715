package testenv

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/flotilla-dev/flotilla/internal/localaddr"
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
	env, err := start(nil, filepath.Join(SharedCRDs(), "flux"))
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
		fmt.Fprintf(out, "--- %s: last lines of %s\n%s\n", title, filepath.Base(w.flux.log(p)), strings.Join(LastLines(b, 40), "\n"))
	}
}

// flux is source-controller and kustomize-controller running as local processes.
type flux struct {
	dir   string
	procs []*exec.Cmd
	// exited[i] is closed when procs[i] has exited.
	exited []chan struct{}
}

func (f *flux) log(p *exec.Cmd) string { return filepath.Join(f.dir, filepath.Base(p.Path)+".log") }

// LastLines returns the last n lines of log.
func LastLines(log []byte, n int) []string {
	lines := strings.Split(strings.TrimRight(string(log), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// startFlux runs the controllers against the API server kubeconfig reaches, each on addresses of
// its own, with storage and logs under dir, and returns once both serve their health probes and
// source-controller serves its artifacts. A controller that exits because another process took
// one of its addresses is started again on new ones.
func startFlux(bin, dir string, kubeconfig []byte) (*flux, error) {
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	storagePath := filepath.Join(dir, "flux-storage")
	if err := os.MkdirAll(storagePath, 0o755); err != nil {
		return nil, err
	}
	var err error
	for range localaddr.Attempts {
		var f *flux
		if f, err = startFluxOnce(bin, dir, kc, storagePath); err == nil {
			return f, nil
		}
		if !errors.Is(err, localaddr.ErrTaken) {
			return nil, err
		}
	}
	return nil, err
}

func startFluxOnce(bin, dir, kc, storagePath string) (*flux, error) {
	addrs, err := localaddr.Free(5)
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
		exited := make(chan struct{})
		go func() { _ = p.Wait(); close(exited) }()
		f.exited = append(f.exited, exited)
	}
	// Ready: both health probes answer 200, source-controller's artifact server accepts
	// connections, and both processes still run afterwards (a probe answered by someone else's
	// server on a taken port is caught by the controller's exit).
	ready := func() bool {
		return healthy(addrs[1]) && healthy(addrs[4]) && accepts(addrs[2])
	}
	deadline := time.Now().Add(fluxStartTimeout)
	for time.Now().Before(deadline) {
		for i, p := range f.procs {
			select {
			case <-f.exited[i]:
				f.stop()
				b, _ := os.ReadFile(f.log(p))
				last := strings.Join(LastLines(b, 10), "\n")
				if localaddr.Taken(b) {
					return nil, fmt.Errorf("%s: %w: %s", filepath.Base(p.Path), localaddr.ErrTaken, last)
				}
				return nil, fmt.Errorf("%s exited at start: %s", filepath.Base(p.Path), last)
			default:
			}
		}
		if ready() {
			time.Sleep(200 * time.Millisecond)
			if f.running() {
				return f, nil
			}
			continue // the loop above reports which one exited
		}
		time.Sleep(100 * time.Millisecond)
	}
	f.stop()
	return nil, fmt.Errorf("the Flux controllers did not serve their probes within %s (logs in %s)", fluxStartTimeout, dir)
}

// fluxStartTimeout bounds the wait for the controllers' probes; they answer within a second or
// two on an idle machine.
const fluxStartTimeout = 60 * time.Second

func (f *flux) running() bool {
	for _, e := range f.exited {
		select {
		case <-e:
			return false
		default:
		}
	}
	return true
}

func (f *flux) stop() {
	for i, p := range f.procs {
		_ = p.Process.Kill()
		if i < len(f.exited) {
			<-f.exited[i]
		} else {
			_ = p.Wait()
		}
	}
}

// healthy reports whether a controller-runtime health probe at addr answers 200.
func healthy(addr string) bool {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + addr + "/healthz") //nolint:noctx // a probe, as the kubelet's
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// accepts reports whether something listens at addr.
func accepts(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

var errNoFlux = errors.New("FLOTILLA_FLUX_BIN is not set: run the tests with `make test`, which builds Flux into bin/flux")
