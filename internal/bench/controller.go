package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/flotilla-dev/flotilla/internal/localaddr"
	"github.com/flotilla-dev/flotilla/internal/testenv"
)

// controllerProc is the flotilla controller, run as a child process so its memory and CPU are its
// own.
type controllerProc struct {
	cmd     *exec.Cmd
	logPath string
	metrics string // URL of its Prometheus endpoint
	done    chan struct{}
	err     error // set when done is closed

	stopOnce sync.Once
	stopErr  error

	// killed holds what the process last reported before kill ended it; its readings answer
	// from then on.
	killed *reading
}

// controllerArgs are the flags the bench gives the controller of shard k, started as the docs
// tell users to: --kubeconfig, and the controller's defaults for everything else (the client-side
// rate limit included), --workers written out because the git floor runs as many at once. With
// shards, each has its selector and its own cache directory, and elects its leader as the
// Deployment does (--leader-elect), the lease in the fleet's namespace.
func (b *run) controllerArgs(k int) []string {
	cache := b.cacheDir()
	if b.f.shards > 1 {
		cache = filepath.Join(cache, b.f.shardName(k)) // a process's mirrors are its own
	}
	args := []string{
		"--kubeconfig", b.kubeconfig,
		"--cache-dir", cache,
		"--workers", strconv.Itoa(b.o.Workers),
	}
	if b.f.shards > 1 {
		args = append(args, "--watch-label-selector", shardLabel+"="+b.f.shardName(k),
			"--leader-elect", "--leader-election-namespace", namespace)
	}
	if b.o.Transport == TransportFile {
		args = append(args, "--allow-local-repositories") // off by default: local repositories
	}
	if b.o.CPUProfile != "" {
		args = append(args, "--cpuprofile", b.o.CPUProfile)
	}
	if b.o.MemProfile != "" {
		args = append(args, "--memprofile", b.o.MemProfile)
	}
	if b.pprofAddr != "" {
		args = append(args, "--pprof-bind-address", b.pprofAddr)
	}
	return args
}

// startController runs argv (e.g. `flotilla controller`) with flags, its metrics on a free
// loopback port, its output into logPath.
func startController(argv, flags, env []string, logPath string) (*controllerProc, error) {
	addrs, err := localaddr.Free(1)
	if err != nil {
		return nil, err
	}
	args := append(append(append([]string{}, argv[1:]...), flags...),
		"--metrics-bind-address", addrs[0],
		"--health-probe-bind-address", "0")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start controller %s: %w", strings.Join(argv, " "), err)
	}
	p := &controllerProc{cmd: cmd, logPath: logPath, metrics: "http://" + addrs[0] + "/metrics", done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// serving waits until the controller serves its metrics. It returns localaddr.ErrTaken when
// the controller exited because one of its addresses was in use.
func (p *controllerProc) serving(timeout time.Duration) error {
	c := http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			if b, _ := os.ReadFile(p.logPath); localaddr.Taken(b) {
				return fmt.Errorf("%w: %s", localaddr.ErrTaken, tail(p.logPath, 5))
			}
			return p.exited()
		default:
		}
		resp, err := c.Get(p.metrics) //nolint:noctx // a probe
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	return fmt.Errorf("the controller did not serve its metrics within %s; its log: %s%s", timeout, p.logPath, tail(p.logPath, 20))
}

// exited returns why the controller is gone, nil while it runs or once the bench killed it.
func (p *controllerProc) exited() error {
	if p.killed != nil {
		return nil
	}
	select {
	case <-p.done:
		return fmt.Errorf("the controller exited (%w); its log: %s%s", p.err, p.logPath, tail(p.logPath, 20))
	default:
		return nil
	}
}

func (p *controllerProc) cpu() (cpuTimes, error) {
	if p.killed != nil {
		return p.killed.cpu, nil
	}
	_, _, cpu, err := procStat(p.cmd.Process.Pid)
	return cpu, err
}

func (p *controllerProc) peakRSS() (int64, error) {
	if p.killed != nil {
		return p.killed.rss, nil
	}
	return peakRSS(p.cmd.Process.Pid)
}

// stop sends SIGTERM, as the kubelet does (the controller then writes its CPU profile), and
// waits for the exit. Only the first call stops; later calls return its result.
func (p *controllerProc) stop() error {
	p.stopOnce.Do(func() { p.stopErr = p.terminate() })
	return p.stopErr
}

func (p *controllerProc) terminate() error {
	if err := p.exited(); err != nil {
		return err
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		var exit *exec.ExitError
		if p.err != nil && !errors.As(p.err, &exit) {
			return p.err
		}
		return nil
	case <-time.After(time.Minute):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("the controller did not stop within a minute of SIGTERM; its log: %s", p.logPath)
	}
}

// scrape reads the controller's metrics.
func (p *controllerProc) scrape(ctx context.Context) (samples, error) {
	if p.killed != nil {
		return p.killed.metrics, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.metrics, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape controller metrics: %w", err)
	}
	defer resp.Body.Close()
	return parseSamples(resp.Body)
}

// tail returns the last n lines of a file, indented, for error messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		return ""
	}
	return "\n  " + strings.Join(testenv.LastLines(b, n), "\n  ")
}

// reading is what a process reported last.
type reading struct {
	cpu     cpuTimes
	metrics samples
	rss     int64
}

// kill ends the process at once (SIGKILL: no lease released), as a node that dies, after reading
// its CPU, metrics and peak RSS, which answer for it from then on.
func (p *controllerProc) kill(ctx context.Context) error {
	var r reading
	var err error
	if r.cpu, err = p.cpu(); err != nil {
		return err
	}
	if r.metrics, err = p.scrape(ctx); err != nil {
		return err
	}
	if r.rss, err = p.peakRSS(); err != nil {
		return err
	}
	p.stopOnce.Do(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	p.killed = &r
	return nil
}

// controllers are the controller processes of a run: one, or one per shard (--shards), killed
// ones included (they count with what they last reported).
type controllers struct{ procs []*controllerProc }

// reapedCPU is the CPU the killed processes had used when they were killed, their children's
// included: the bench's own child CPU counts it from then on.
func (cs *controllers) reapedCPU() float64 {
	var sum float64
	for _, p := range cs.procs {
		if p.killed != nil {
			sum += p.killed.cpu.total()
		}
	}
	return sum
}

// exited returns why a process the bench did not kill is gone, nil while all run.
func (cs *controllers) exited() error {
	for _, p := range cs.procs {
		if err := p.exited(); err != nil {
			return err
		}
	}
	return nil
}

// cpu is the processes' CPU, summed.
func (cs *controllers) cpu() (cpuTimes, error) {
	var sum cpuTimes
	for _, p := range cs.procs {
		c, err := p.cpu()
		if err != nil {
			return sum, err
		}
		sum.Self, sum.Children = sum.Self+c.Self, sum.Children+c.Children
	}
	return sum, nil
}

// peakRSS is the processes' peak RSS, summed (what the fleet's controllers hold at most).
func (cs *controllers) peakRSS() (int64, error) {
	var sum int64
	for _, p := range cs.procs {
		n, err := p.peakRSS()
		if err != nil {
			return sum, err
		}
		sum += n
	}
	return sum, nil
}

// scrape reads every process's metrics and adds them up, series by series.
func (cs *controllers) scrape(ctx context.Context) (samples, error) {
	sum := samples{}
	for _, p := range cs.procs {
		m, err := p.scrape(ctx)
		if err != nil {
			return nil, err
		}
		for k, v := range m {
			sum[k] += v
		}
	}
	return sum, nil
}

// stop stops every process (a killed one's stop is the kill's); the first error wins.
func (cs *controllers) stop() error {
	var first error
	for _, p := range cs.procs {
		if err := p.stop(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// logs names the processes' log files.
func (cs *controllers) logs() string {
	var paths []string
	for _, p := range cs.procs {
		paths = append(paths, p.logPath)
	}
	return strings.Join(paths, ", ")
}
