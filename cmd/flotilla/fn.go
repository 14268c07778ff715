package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/flotilla-dev/flotilla/internal/specialize"
)

// fnCmd is "flotilla fn starlark": the controller's sandbox for the built-in starlark function,
// run as its child process (specialize.ServeStarlark). Hidden: not a command for people.
func fnCmd() *cobra.Command {
	fn := &cobra.Command{Use: "fn", Hidden: true, Short: "Run a built-in KRM function as the controller's sandboxed child process"}
	var maxMemory int64
	starlark := &cobra.Command{
		Use:   "starlark",
		Short: "Run the starlark function over the ResourceList on stdin, within --max-memory bytes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if code := specialize.ServeStarlark(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), maxMemory); code != 0 {
				return &exitError{code: code, err: fmt.Errorf("fn starlark: exit status %d", code)}
			}
			return nil
		},
	}
	starlark.Flags().Int64Var(&maxMemory, "max-memory", specialize.DefaultSandboxMemory, "bytes of memory the script may use")
	fn.AddCommand(starlark)
	return fn
}
