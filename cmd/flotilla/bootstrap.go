package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/bootstrap"
	"github.com/flotilla-dev/flotilla/internal/offline"
	"github.com/flotilla-dev/flotilla/internal/remotecluster"
)

func bootstrapCmd() *cobra.Command {
	var kubeconfig, namespace, dir, targetKubeconfig, objNamespace, output string
	var apply bool
	cmd := &cobra.Command{
		Use:   "bootstrap CLUSTER",
		Short: "Print (or --apply) the root sync object that makes a cluster sync its deployed-packages",
		Long: `bootstrap prints the root sync object of a WorkloadCluster for its engine: a RootSync
flotilla-deployed-packages (Config Sync), a GitRepository + Kustomization (Flux) or an Application
(Argo CD), following the cluster repository's branch at <directory>/deployed-packages and pruning
what leaves it. The WorkloadCluster and its Repository are read from the management cluster, or
from the YAML files under -f DIR. With --apply the objects are server-side applied to the cluster
of --target-kubeconfig (default: the current kubeconfig).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			cluster, repo, err := loadCluster(cmd, dir, kubeconfig, namespace, args[0])
			if err != nil {
				return err
			}
			objs, err := bootstrap.Objects(cluster, repo, objNamespace)
			if err != nil {
				return err
			}
			if !apply {
				if output == "json" {
					list, err := yamlDocsToList(objs)
					if err != nil {
						return err
					}
					return writeStructured(cmd.OutOrStdout(), output, list)
				}
				_, err := cmd.OutOrStdout().Write(objs)
				return err
			}
			cfg, err := apiServer(cmd.Context(), "--target-kubeconfig", targetKubeconfig)
			if err != nil {
				return err
			}
			target, err := remotecluster.NewClient(cfg.REST)
			if err != nil {
				return err
			}
			applied, err := bootstrap.Apply(cmd.Context(), target, objs)
			for _, a := range applied {
				fmt.Fprintf(cmd.OutOrStdout(), "%s applied\n", a)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the management cluster")
	f.StringVarP(&namespace, "namespace", "n", "", "namespace of the WorkloadCluster (default: the kubeconfig's, or default with -f)")
	f.StringVarP(&dir, "filename", "f", "", "read the WorkloadCluster and Repository from the YAML files under DIR instead")
	f.BoolVar(&apply, "apply", false, "server-side apply the objects instead of printing them")
	f.StringVar(&targetKubeconfig, "target-kubeconfig", "", "kubeconfig of the workload cluster for --apply (default: the current one)")
	f.StringVar(&objNamespace, "sync-namespace", "", "namespace of the root sync objects (default: the engine's)")
	f.StringVarP(&output, "output", "o", "", "yaml (default) or json (a v1 List) for the printed objects")
	return cmd
}

// loadCluster reads a WorkloadCluster and its Repository from files or from the API server.
func loadCluster(cmd *cobra.Command, dir, kubeconfig, namespace, name string) (*v1alpha1.WorkloadCluster, *v1alpha1.Repository, error) {
	if dir != "" {
		if namespace == "" {
			namespace = "default"
		}
		f, err := offline.Load(dir)
		if err != nil {
			return nil, nil, err
		}
		c := f.Clusters[namespace+"/"+name]
		if c == nil {
			return nil, nil, fmt.Errorf("no WorkloadCluster %s/%s under %s", namespace, name, dir)
		}
		return c, f.Repositories[namespace+"/"+c.Spec.Repository.Name], nil
	}
	c, ns, err := kubeClient(cmd.Context(), kubeconfig, namespace)
	if err != nil {
		return nil, nil, err
	}
	cluster := &v1alpha1.WorkloadCluster{}
	if err := c.Get(cmd.Context(), client.ObjectKey{Namespace: ns, Name: name}, cluster); err != nil {
		return nil, nil, err
	}
	repo := &v1alpha1.Repository{}
	if err := c.Get(cmd.Context(), client.ObjectKey{Namespace: ns, Name: cluster.Spec.Repository.Name}, repo); err != nil {
		return nil, nil, fmt.Errorf("repository of cluster %s: %w", name, err)
	}
	return cluster, repo, nil
}
