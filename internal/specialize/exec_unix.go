//go:build unix

package specialize

import (
	"os/exec"
	"syscall"
)

// killProcessGroup starts cmd in a process group of its own and makes
// cancelling it kill the whole group: a script killed alone would leave the
// commands it started running, still writing.
func killProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

// endProcessGroup kills what is left of cmd's process group once cmd has exited: processes the
// function started and left running.
func endProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
