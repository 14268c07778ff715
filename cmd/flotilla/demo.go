package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/flotilla-dev/flotilla/internal/demo"
)

func demoCmd() *cobra.Command {
	var keep bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run flotilla on a sandbox fleet: local git repositories, a catalog, three clusters",
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := os.MkdirTemp("", "flotilla-demo-")
			if err != nil {
				return err
			}
			if !keep {
				defer os.RemoveAll(dir)
			}
			return demo.Run(cmd.Context(), cmd.OutOrStdout(), dir)
		},
	}
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the sandbox directory (repositories and objects) to look around")
	return cmd
}
