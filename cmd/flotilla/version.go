package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/flotilla-dev/flotilla/internal/buildinfo"
)

func versionCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print flotilla's version, commit, commit date and Go version",
		Long: `version prints the release version, the commit and its date that ` + "`make build`" + ` stamps from
git; a binary built with go install reports its module's version (and, built from a checkout,
its vcs.revision and vcs.time). The controller logs the same at start and serves it as the
flotilla_build_info metric.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			info := buildinfo.Get()
			if output == "yaml" || output == "json" {
				return writeStructured(cmd.OutOrStdout(), output, info)
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "flotilla %s\ncommit    %s\ndate      %s\ngo        %s %s\n",
				info.Version, info.Commit, info.Date, info.GoVersion, info.Platform)
			return err
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "text (default), or yaml or json")
	return cmd
}
