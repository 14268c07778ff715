package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/scheme"
)

func approveCmd() *cobra.Command {
	var kubeconfig, namespace string
	cmd := &cobra.Command{
		Use:   "approve CLUSTER",
		Short: "Approve the pending deployed-packages proposal of a WorkloadCluster with Manual approval",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := kubeClient(kubeconfig, namespace)
			if err != nil {
				return err
			}
			rev, err := approve(cmd.Context(), c, client.ObjectKey{Namespace: ns, Name: args[0]})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "workloadcluster %s/%s: approved v%d\n", ns, args[0], rev)
			return nil
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "path to a kubeconfig")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "namespace of the cluster (default: the kubeconfig's)")
	return cmd
}

// approve sets flotilla.dev/approve=v<N> for the cluster's pending proposal.
func approve(ctx context.Context, c client.Client, key client.ObjectKey) (int, error) {
	var cluster v1alpha1.WorkloadCluster
	if err := c.Get(ctx, key, &cluster); err != nil {
		return 0, err
	}
	p := cluster.Status.Proposal
	if p == nil {
		return 0, fmt.Errorf("workloadcluster %s has no pending proposal", key)
	}
	before := cluster.DeepCopy()
	if cluster.Annotations == nil {
		cluster.Annotations = map[string]string{}
	}
	cluster.Annotations[v1alpha1.AnnotationApprove] = fmt.Sprintf("v%d", p.Revision)
	return p.Revision, c.Patch(ctx, &cluster, client.MergeFrom(before))
}

func kubeClient(kubeconfig, namespace string) (client.Client, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", err
	}
	if namespace == "" {
		if namespace, _, err = cc.Namespace(); err != nil {
			return nil, "", err
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	return c, namespace, err
}
