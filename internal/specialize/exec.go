package specialize

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/kptdev/krm-functions-sdk/go/fn"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// maxStderr bounds how much of a failing function's stderr goes into an
// error, which may end up in a condition message.
const maxStderr = 2048

// runExec runs an exec function by the KRM function spec: a ResourceList
// with the items and the functionConfig on stdin, a ResourceList on stdout.
// The command line is split on spaces (no shell, no quoting). The binary
// must be an absolute path or found on PATH: a relative path would depend on
// the controller's working directory. Its environment holds PATH only, so
// the controller's own environment (and any credentials in it) stays out of
// reach. Results of severity error fail the function, like a non-zero exit.
func runExec(ctx context.Context, policy ExecPolicy, command string, items []*yaml.RNode, cfg *yaml.RNode) ([]*yaml.RNode, error) {
	if !policy.Allow {
		return nil, errors.New("exec functions are not allowed by this controller's exec policy")
	}
	args := strings.Fields(command)
	if len(args) == 0 {
		return nil, errors.New("exec is empty")
	}
	if strings.Contains(args[0], "/") && !filepath.IsAbs(args[0]) {
		return nil, fmt.Errorf("exec path %q must be absolute or a command on PATH", args[0])
	}

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

	timeout := policy.Timeout
	if timeout <= 0 {
		timeout = DefaultExecTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(in), &stdout, &stderr
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	// A killed script's children may keep stdout open; do not wait on them.
	cmd.WaitDelay = time.Second
	runErr := cmd.Run()
	if runErr != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("timed out after %s", timeout)
	}
	// A failing function still writes its ResourceList, whose results say
	// why; they are worth more to a user than the exit status.
	out, parseErr := fn.ParseResourceList(stdout.Bytes())
	if parseErr == nil && out.Results.ExitCode() != 0 {
		return nil, fmt.Errorf("reported errors: %s", strings.TrimSpace(out.Results.Error()))
	}
	if runErr != nil {
		return nil, fmt.Errorf("%w%s", runErr, stderrTail(stderr.Bytes()))
	}
	if parseErr != nil {
		return nil, fmt.Errorf("read its output: %w%s", parseErr, stderrTail(stderr.Bytes()))
	}
	nodes := []*yaml.RNode(out.Items.CopyToResourceNodes())
	return nodes, restoreComments(inputs, nodes)
}

func stderrTail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return ""
	}
	if len(s) > maxStderr {
		s = "..." + s[len(s)-maxStderr:]
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
