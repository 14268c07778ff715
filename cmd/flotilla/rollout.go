package main

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

func rolloutCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "rollout", Short: "Act on PackageSet rollouts"}
	var kubeconfig, namespace string
	annotate := func(use, short, key, done string) *cobra.Command {
		c := &cobra.Command{
			Use:   use,
			Short: short,
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				c, ns, err := kubeClient(cmd.Context(), kubeconfig, namespace)
				if err != nil {
					return err
				}
				set := &v1alpha1.PackageSet{}
				if err := c.Get(cmd.Context(), client.ObjectKey{Namespace: ns, Name: args[0]}, set); err != nil {
					return err
				}
				if set.Spec.Strategy.Type != v1alpha1.StrategyRollingUpdate {
					return fmt.Errorf("packageset %s/%s has strategy %s: only a RollingUpdate has a rollout to %s", ns, args[0], cmp.Or(string(set.Spec.Strategy.Type), "AllAtOnce"), strings.Fields(cmd.Use)[0])
				}
				before := set.DeepCopy()
				if set.Annotations == nil {
					set.Annotations = map[string]string{}
				}
				set.Annotations[key] = strconv.FormatInt(time.Now().UnixNano(), 10)
				if err := c.Patch(cmd.Context(), set, client.MergeFrom(before)); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "packageset %s/%s %s\n", ns, args[0], done)
				return nil
			},
		}
		c.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the management cluster")
		c.Flags().StringVarP(&namespace, "namespace", "n", "", "namespace (default: the kubeconfig's)")
		return c
	}
	cmd.AddCommand(
		annotate("resume SET", "Resume a paused rollout (sets a new value of flotilla.dev/resume)", v1alpha1.AnnotationResume, "resumed"),
		annotate("undo SET", "Roll a rollout back by hand: every target it moved returns to its last healthy revision, and it halts (sets a new value of flotilla.dev/undo)",
			v1alpha1.AnnotationUndo, "rolled back (see its status.rollout.rolledBack)"),
	)
	return cmd
}
