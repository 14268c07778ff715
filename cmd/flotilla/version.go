package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print flotilla's version",
		Run: func(cmd *cobra.Command, _ []string) {
			v := version
			if v == "" {
				if bi, ok := debug.ReadBuildInfo(); ok {
					v = bi.Main.Version
				}
			}
			fmt.Fprintln(cmd.OutOrStdout(), "flotilla", v)
		},
	}
}
