package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/internal/approval"
)

func approveCmd() *cobra.Command {
	var kubeconfig, namespace string
	cmd := &cobra.Command{
		Use:   "approve CLUSTER",
		Short: "Approve the pending deployed-packages proposal of a WorkloadCluster with Manual approval",
		Long: `Approve reads the cluster's pending proposal (status.proposal), prints its summary and sets
flotilla.dev/approve to the proposal's commit. Only that commit is published: if the proposal
changes before the controller publishes it, the cluster reports the approval outdated
(ApprovalOutdated) and nothing is published until the new proposal is approved.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := kubeClient(cmd.Context(), kubeconfig, namespace)
			if err != nil {
				return err
			}
			p, err := approval.Approve(cmd.Context(), c, client.ObjectKey{Namespace: ns, Name: args[0]})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "workloadcluster %s/%s: approved %s at %s: %s\n", ns, args[0], p.Branch, p.Commit, p.Summary)
			return nil
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "path to a kubeconfig")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "namespace of the cluster (default: the kubeconfig's)")
	return cmd
}
