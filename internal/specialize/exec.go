package specialize

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/kptdev/krm-functions-sdk/go/fn"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// maxStderr bounds how much of a failing function's stderr goes into an
// error, which may end up in a condition message.
const maxStderr = 2048

// errOutputLimit stops a function that writes more than its policy allows.
var errOutputLimit = errors.New("output limit reached")

// errTimeout is the cause of a function's context when its own timeout, not
// the caller's context, ends it.
var errTimeout = errors.New("exec function timeout")

// runExec runs an exec function by the KRM function spec: a ResourceList
// with the items and the functionConfig on stdin, a ResourceList on stdout.
// The command line is split on spaces (no shell, no quoting); its first word
// must be an executable the policy allows (see resolveExec), and that exact
// file is what runs. The function gets a fresh empty working directory and
// an environment of PATH only, so neither the controller's files in its
// working directory nor its environment (the service account's
// KUBERNETES_* variables, credentials) are handed to it. It is killed, with
// the processes it started, when it outlives the policy's timeout or writes
// more than its output bound. Results of severity error fail the function,
// like a non-zero exit.
func runExec(ctx context.Context, policy ExecPolicy, command string, items []*yaml.RNode, cfg *yaml.RNode) ([]*yaml.RNode, error) {
	args := strings.Fields(command)
	if len(args) == 0 {
		return nil, errors.New("exec is empty")
	}
	bin, err := policy.resolveExec(args[0], exec.LookPath)
	if err != nil {
		return nil, err
	}
	return runProcess(ctx, policy, bin, args[1:], items, cfg)
}

// runProcess runs bin with args as a KRM function, as runExec describes: what runs is the
// caller's choice (an allowed exec function, or flotilla's own starlark sandbox).
func runProcess(ctx context.Context, policy ExecPolicy, bin string, args []string, items []*yaml.RNode, cfg *yaml.RNode) ([]*yaml.RNode, error) {
	inputs, err := setIDs(items)
	if err != nil {
		return nil, err
	}
	rl := &fn.ResourceList{Items: fn.MoveToKubeObjects(copyNodes(items)), FunctionConfig: fn.NewEmptyKubeObject()}
	if cfg != nil {
		rl.FunctionConfig = fn.CopyToKubeObject(cfg)
	}
	in, err := rl.ToYAML()
	if err != nil {
		return nil, fmt.Errorf("write ResourceList: %w", err)
	}
	dir, err := os.MkdirTemp("", "flotilla-exec-")
	if err != nil {
		return nil, fmt.Errorf("working directory: %w", err)
	}
	defer os.RemoveAll(dir)

	timeout := cmp.Or(policy.Timeout, DefaultExecTimeout)
	// A function writes the package it was given, changed: twice its input may come back.
	limit := max(cmp.Or(policy.MaxOutput, DefaultExecMaxOutput), 2*int64(len(in)))
	ctx, cancelTimeout := context.WithTimeoutCause(ctx, timeout, errTimeout)
	defer cancelTimeout()
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	out := &boundedOutput{limit: limit, stop: func() { stop(errOutputLimit) }}
	stdout, stderr := &boundedWriter{out: out}, &boundedWriter{out: out}

	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(in), stdout, stderr
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	cmd.Dir = dir
	killProcessGroup(cmd)
	// A killed script's children may keep stdout open; do not wait on them.
	cmd.WaitDelay = time.Second
	runErr := cmd.Run()
	// What the function started in the background must not outlive it, as the controller.
	endProcessGroup(cmd)
	switch cause := context.Cause(ctx); {
	case out.exceeded():
		return nil, fmt.Errorf("wrote more than %s to stdout and stderr, so it was stopped; a KRM function's output is a ResourceList of the package", byteSize(limit))
	case runErr != nil && errors.Is(cause, errTimeout):
		return nil, fmt.Errorf("timed out after %s", timeout)
	case runErr != nil && ctx.Err() != nil:
		return nil, fmt.Errorf("stopped: %w", cause)
	}
	// A failing function still writes its ResourceList, whose results say
	// why; they are worth more to a user than the exit status.
	rlOut, parseErr := fn.ParseResourceList(stdout.buf.Bytes())
	if parseErr == nil && rlOut.Results.ExitCode() != 0 {
		return nil, fmt.Errorf("reported errors: %s", strings.TrimSpace(rlOut.Results.Error()))
	}
	if runErr != nil {
		return nil, fmt.Errorf("%w%s", runErr, stderrTail(stderr.buf.Bytes()))
	}
	if parseErr != nil {
		return nil, fmt.Errorf("read its output: %w%s", parseErr, stderrTail(stderr.buf.Bytes()))
	}
	nodes := []*yaml.RNode(rlOut.Items.CopyToResourceNodes())
	return nodes, restoreComments(inputs, nodes)
}

// CheckExecAllowlist checks the entries of an exec allowlist, for a flag:
// each is a bare command name (no slash), which allows the file that name
// resolves to on PATH, or an absolute path, which allows exactly that file.
// A relative path or an entry with spaces could never match and is an error.
func CheckExecAllowlist(entries []string) error {
	for _, e := range entries {
		switch {
		case e == "":
			return errors.New("an empty entry allows nothing: name an executable or an absolute path")
		case e == "true" || e == "false":
			// --allow-exec-functions was a switch before it took a list.
			return fmt.Errorf("%q: --allow-exec-functions takes the executables to allow (e.g. --allow-exec-functions=kubeconform,/opt/fns/set-image), not true or false", e)
		case strings.ContainsFunc(e, unicode.IsSpace):
			return fmt.Errorf("%q: an exec function's arguments are the blueprint's; name only the executable", e)
		case strings.Contains(e, "/") && !filepath.IsAbs(e):
			return fmt.Errorf("%q: a path must be absolute (a relative one would depend on the working directory)", e)
		}
	}
	return nil
}

// resolveExec returns the file an exec function's executable names, when
// the policy allows it. Both the executable and the allowlist's entries
// stand for files: a bare name for the file it resolves to on PATH, an
// absolute path for itself after filepath.Clean. The function may run when
// the two files are the same path, so the operator may allow "sed" or
// "/usr/bin/sed" and a Kptfile may name it either way. Paths are compared as
// written, without following symlinks: a multi-call binary (busybox) does
// what the name it is run under says, so a link to an allowed file is not
// that file. The cleaned path is what runs: a ".." is resolved by the same
// lexical rule that matched, not by the kernel after following links.
func (p ExecPolicy) resolveExec(name string, lookPath func(string) (string, error)) (string, error) {
	var bin string
	switch {
	case filepath.IsAbs(name):
		bin = filepath.Clean(name)
	case strings.Contains(name, "/"):
		return "", fmt.Errorf("exec path %q must be absolute or a command on PATH", name)
	default:
		if found, err := lookPath(name); err == nil && filepath.IsAbs(found) {
			bin = filepath.Clean(found)
		}
	}
	for _, e := range p.Allowed {
		allowed := filepath.Clean(e)
		if !filepath.IsAbs(e) {
			if e != name && bin == "" {
				continue
			}
			found, err := lookPath(e)
			if err != nil || !filepath.IsAbs(found) {
				if e == name {
					return "", fmt.Errorf("allowed, but %s is not found on the controller's PATH", name)
				}
				continue
			}
			allowed = filepath.Clean(found)
		}
		if bin != "" && bin == allowed {
			return bin, nil
		}
	}
	how := fmt.Sprintf("%q", name)
	if bin != "" && bin != name {
		how = fmt.Sprintf("%q (or %q)", name, bin)
	}
	return "", fmt.Errorf("not allowed: the controller runs only the executables named by its --allow-exec-functions flag; "+
		"an operator who trusts this one adds %s to it", how)
}

// boundedOutput is the output budget an exec function's stdout and stderr
// share. Writes past it are refused and stop the function, so a function
// that writes without end costs the controller at most limit bytes.
type boundedOutput struct {
	mu    sync.Mutex
	limit int64
	n     int64
	over  bool
	stop  func()
}

func (b *boundedOutput) exceeded() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.over
}

// boundedWriter is one stream of a boundedOutput.
type boundedWriter struct {
	out *boundedOutput
	buf bytes.Buffer
}

func (w *boundedWriter) Write(p []byte) (int, error) {
	b := w.out
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.over {
		return 0, errOutputLimit
	}
	if int64(len(p)) > b.limit-b.n {
		keep := b.limit - b.n
		w.buf.Write(p[:keep])
		b.n, b.over = b.limit, true
		b.stop()
		return int(keep), errOutputLimit
	}
	b.n += int64(len(p))
	return w.buf.Write(p)
}

func byteSize(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

func stderrTail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return ""
	}
	if len(s) > maxStderr {
		s = "..." + s[runeStart(s, len(s)-maxStderr):]
	}
	return ": " + s
}

func copyNodes(in []*yaml.RNode) []*yaml.RNode {
	out := make([]*yaml.RNode, len(in))
	for i, n := range in {
		out[i] = n.Copy()
	}
	return out
}

// runeStart is i, or the start of the next character when i is inside one.
func runeStart(s string, i int) int {
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return i
}
