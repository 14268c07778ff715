package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

func rolloutCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "rollout", Short: "Act on PackageSet rollouts"}
	var kubeconfig, namespace string
	resume := &cobra.Command{
		Use:   "resume SET",
		Short: "Resume a paused rollout (sets a new value of flotilla.dev/resume)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := kubeClient(kubeconfig, namespace)
			if err != nil {
				return err
			}
			set := &v1alpha1.PackageSet{}
			if err := c.Get(cmd.Context(), client.ObjectKey{Namespace: ns, Name: args[0]}, set); err != nil {
				return err
			}
			before := set.DeepCopy()
			if set.Annotations == nil {
				set.Annotations = map[string]string{}
			}
			set.Annotations[v1alpha1.AnnotationResume] = strconv.FormatInt(time.Now().UnixNano(), 10)
			if err := c.Patch(cmd.Context(), set, client.MergeFrom(before)); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "packageset %s/%s resumed\n", ns, args[0])
			return nil
		},
	}
	resume.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the management cluster")
	resume.Flags().StringVarP(&namespace, "namespace", "n", "", "namespace (default: the kubeconfig's)")
	cmd.AddCommand(resume)
	return cmd
}
