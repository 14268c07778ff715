package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/flotilla-dev/flotilla/internal/fleetstatus"
)

func statusCmd() *cobra.Command {
	var kubeconfig, namespace, output string
	var all, watch bool
	var every time.Duration
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Print the fleet: every deployment with its pin, deployed-packages revision and sync state, and rollouts",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			c, ns, err := kubeClient(cmd.Context(), kubeconfig, namespace)
			if err != nil {
				return err
			}
			if all {
				ns = ""
			}
			for {
				s, err := fleetstatus.Read(cmd.Context(), c, ns)
				if err != nil {
					return err
				}
				if watch {
					fmt.Fprint(cmd.OutOrStdout(), "\033[H\033[2J")
					fmt.Fprintf(cmd.OutOrStdout(), "every %s — %s\n\n", every, time.Now().Format(time.TimeOnly))
				}
				if output == "yaml" || output == "json" {
					list, err := fleetstatus.List(s)
					if err == nil {
						err = writeStructured(cmd.OutOrStdout(), output, list)
					}
					if err != nil || !watch {
						return err
					}
				} else if err := fleetstatus.Print(cmd.OutOrStdout(), fleetstatus.Build(s)); err != nil || !watch {
					return err
				}
				select {
				case <-cmd.Context().Done():
					return nil
				case <-time.After(every):
				}
			}
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the management cluster")
	f.StringVarP(&namespace, "namespace", "n", "", "namespace (default: the kubeconfig's)")
	f.BoolVarP(&all, "all-namespaces", "A", false, "every namespace")
	f.BoolVarP(&watch, "watch", "w", false, "refresh until interrupted")
	f.DurationVar(&every, "interval", 2*time.Second, "refresh interval with --watch")
	f.StringVarP(&output, "output", "o", "", "table (default), or yaml or json: the objects as a List, as kubectl get -o")
	return cmd
}
