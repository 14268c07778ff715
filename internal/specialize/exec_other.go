//go:build !unix

package specialize

import "os/exec"

// killProcessGroup keeps os/exec's default where there are no process
// groups: cancelling kills the function's own process.
func killProcessGroup(*exec.Cmd) {}

// endProcessGroup does nothing where there are no process groups.
func endProcessGroup(*exec.Cmd) {}
