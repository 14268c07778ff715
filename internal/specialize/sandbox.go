package specialize

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/kptdev/krm-functions-sdk/go/fn"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// starlark-go bounds a script's steps, not its memory: one step may allocate up to 1 GiB, and a
// loop of a few hundred steps tens of GiB. In the controller, where a tenant writes the script (a
// set's pipeline, a blueprint's Kptfile), it runs in a child process of flotilla's own binary
// (ExecPolicy.Sandbox, "flotilla fn starlark"), which stops itself past its memory bound; the
// child is run as an exec function is (timeout, output bound, an environment of PATH only, its
// process group killed), and offers itself first to the kernel's OOM killer.

// exitOutOfMemory is the exit status of a sandboxed script stopped at its memory bound.
const exitOutOfMemory = 3

// sandboxArgs are the arguments that make the flotilla binary serve one sandboxed starlark run
// with a memory bound of maxMemory bytes.
func sandboxArgs(maxMemory int64) []string {
	return []string{"fn", "starlark", "--max-memory", strconv.FormatInt(maxMemory, 10)}
}

// sandboxSlot lets one sandboxed script run at a time in this process: the controller keeps room
// for one (its GOMEMLIMIT lowered by --starlark-max-memory), not for one per reconcile.
var sandboxSlot = make(chan struct{}, 1)

// runSandboxed runs the starlark function in a child process of policy.Sandbox, one at a time.
func runSandboxed(ctx context.Context, policy ExecPolicy, items []*yaml.RNode, cfg *yaml.RNode) ([]*yaml.RNode, error) {
	select {
	case sandboxSlot <- struct{}{}:
		defer func() { <-sandboxSlot }()
	case <-ctx.Done():
		return nil, fmt.Errorf("starlark: waited for the sandbox, where another script runs (scripts run one at a time), until %w", context.Cause(ctx))
	}
	limit := cmp.Or(policy.SandboxMemory, DefaultSandboxMemory)
	out, err := runProcess(ctx, policy, policy.Sandbox, sandboxArgs(limit), items, cfg)
	if err != nil {
		return nil, fmt.Errorf("starlark (in a sandbox of %s of memory): %w", byteSize(limit), err)
	}
	return out, nil
}

// ServeStarlark is "flotilla fn starlark": it runs the starlark function over the ResourceList on
// stdin and writes the ResourceList it makes to stdout (a script's error as an error result),
// within maxMemory bytes. Past them it writes why to stderr and exits the process with
// exitOutOfMemory. It returns the exit status.
func ServeStarlark(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, maxMemory int64) int {
	// The kernel's OOM killer (a container's memory limit) takes this process before the
	// controller; allowed to any process for itself.
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0)
	debug.SetMemoryLimit(maxMemory)
	// A recursion without end grows a stack, which the heap does not count and the watch does:
	// the runtime's own stack bound (fatal, with a traceback) is set past the memory bound, so the
	// watch stops the child first.
	debug.SetMaxStack(int(max(1<<30, 2*maxMemory)))
	given := &countingReader{r: io.LimitReader(stdin, maxMemory)}
	stop := watchMemory(maxMemory, func() {
		fmt.Fprintf(stderr, "the script used more than %s of memory (the package it was given: %d bytes of YAML), so it was stopped\n", byteSize(maxMemory), given.n.Load())
		os.Exit(exitOutOfMemory)
	})
	defer stop()
	in, err := io.ReadAll(given)
	if err != nil {
		fmt.Fprintf(stderr, "read the ResourceList: %v\n", err)
		return 1
	}
	rl, err := fn.ParseResourceList(in)
	if err != nil {
		fmt.Fprintf(stderr, "read the ResourceList: %v\n", err)
		return 1
	}
	var cfg *yaml.RNode
	if rl.FunctionConfig != nil && !rl.FunctionConfig.IsEmpty() {
		cfg = rl.FunctionConfig.CopyToResourceNode()
	}
	items, err := starlarkItems(ctx, rl.Items.CopyToResourceNodes(), cfg)
	status := 0
	if err != nil {
		rl.Items = nil
		rl.Results = append(rl.Results, fn.ErrorResult(err))
		status = 1
	} else {
		rl.Items = fn.MoveToKubeObjects(items)
	}
	out, err := rl.ToYAML()
	if err != nil {
		fmt.Fprintf(stderr, "write the ResourceList: %v\n", err)
		return 1
	}
	if _, err := stdout.Write(out); err != nil {
		return 1
	}
	return status
}

// watchMemory calls exceeded (once) when the memory the process holds from the system (heap,
// stacks, the runtime's own; less what it gave back) passes limit, checked every millisecond;
// stop ends the watch.
func watchMemory(limit int64, exceeded func()) (stop func()) {
	done := make(chan struct{})
	go func() {
		sample := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			metrics.Read(sample)
			if int64(sample[0].Value.Uint64()-sample[1].Value.Uint64()) > limit {
				exceeded()
				return
			}
		}
	}()
	return func() { close(done) }
}

// countingReader counts what was read through it, for another goroutine to read.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
