package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/flotilla-dev/flotilla/internal/offline"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

func renderCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "render -f DIR",
		Short: "Publish every cluster's deployed-packages from objects in YAML files, without a cluster",
		Long: `render reads Repository, WorkloadCluster, PackageDeployment and Secret objects from the YAML
files under DIR, resolves every deployment, and publishes each cluster's deployed-packages into the
repositories they name (http(s):// and file:// alike), exactly as the controller would. Manual
clusters get a proposal branch. It prints one row per cluster and exits non-zero if any cluster
failed; a failed cluster publishes nothing.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := offline.Load(dir)
			if err != nil {
				return err
			}
			cache, err := os.MkdirTemp("", "flotilla-render-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(cache)
			store := pkgrepo.NewStore(cache)
			// render runs as the user, on the user's files: local repositories are theirs to name.
			store.AllowLocal = true
			results := offline.Run(cmd.Context(), store, f)
			if err := offline.PrintTable(cmd.OutOrStdout(), results); err != nil {
				return err
			}
			if n := offline.Failed(results); n > 0 {
				return fmt.Errorf("%d of %d clusters published nothing (see the table)", n, len(results))
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&dir, "filename", "f", "", "directory (or file) with the objects")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}
