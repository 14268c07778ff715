// Command flotilla deploys kpt packages to fleets of clusters through GitOps: the controller, and
// the same logic on local files (render, demo).
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{
		Use:           "flotilla",
		Short:         "Deploy kpt packages to fleets of clusters through GitOps, one pinned revision at a time",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(controllerCmd(), renderCmd(), diffCmd(), demoCmd(), approveCmd(), bootstrapCmd(), statusCmd(), dashboardCmd(), rolloutCmd(), versionCmd(), benchCmd(), publishCmd())
	if err := root.Execute(); err != nil {
		var exit *exitError
		if errors.As(err, &exit) {
			if exit.code > 1 {
				fmt.Fprintln(os.Stderr, "error:", err)
			} else {
				fmt.Fprintln(os.Stderr, err)
			}
			os.Exit(exit.code)
		}
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
