// Command flotilla deploys kpt packages to fleets of clusters through GitOps: the controller, and
// the same logic on local files (render, demo).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// Exit statuses, documented in the README's CLI section.
const (
	exitOK = 0
	// exitFinding: the command ran and found something (diff: a change) or failed at its work.
	exitFinding = 1
	// exitCannotRun: the command could not do its work: its command line is wrong, or there is no
	// API server to talk to (diff: any error, as kubectl diff).
	exitCannotRun = 2
)

// exitError ends the command with its code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// cannotRun is err with exit status 2.
func cannotRun(err error) error { return &exitError{code: exitCannotRun, err: err} }

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command line args and returns its exit status; errors are one line on stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := &cobra.Command{
		Use:           "flotilla",
		Short:         "Deploy kpt packages to fleets of clusters through GitOps, one pinned revision at a time",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// cobra checks the command, its flags and its arguments before this hook, and the required
	// flags after it (so the hook checks them first): an error before the hook has passed is a
	// usage error.
	started := false
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if err := cmd.ValidateRequiredFlags(); err != nil {
			return err
		}
		if err := cmd.ValidateFlagGroups(); err != nil {
			return err
		}
		started = true
		return nil
	}
	root.AddCommand(controllerCmd(), renderCmd(), diffCmd(), demoCmd(), approveCmd(), bootstrapCmd(), statusCmd(), dashboardCmd(), rolloutCmd(), versionCmd(), benchCmd(), publishCmd(), fnCmd())
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	code, prefix := exitFinding, "error: "
	var exit *exitError
	switch {
	case errors.As(err, &exit):
		code = exit.code
		if code == exitFinding {
			prefix = "" // a finding ("3 packages would change") is not an error
		}
	case !started:
		code, err = exitCannotRun, fmt.Errorf("%s (see %s --help)", oneLine(err.Error()), cmd.CommandPath())
	}
	fmt.Fprintln(stderr, prefix+err.Error())
	return code
}

// oneLine is a cobra message on one line: its suggestions for an unknown command come on lines of
// their own.
func oneLine(msg string) string {
	msg = strings.Replace(strings.TrimSpace(msg), "\n\nDid you mean this?\n\t", "; did you mean ", 1)
	return strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n\t", " or ")), " ")
}
