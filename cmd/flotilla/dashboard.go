package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/dashboard"
	"github.com/flotilla-dev/flotilla/internal/scheme"
)

func dashboardCmd() *cobra.Command {
	var kubeconfig, namespace, bind string
	var all bool
	var every time.Duration
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve the read-only web dashboard of the fleet: matrix, rollouts, clusters, packages",
		Long: `Serve the fleet as a web page on --bind-address (127.0.0.1:8080: only this machine), updated
live: the clusters × packages matrix with each pinned revision and its health, every PackageSet
rollout step by step, each cluster's revisions, proposal and problems, each package's revision
spread and variants. It watches WorkloadClusters, PackageDeployments, PackageSets and
PackageVariants with your kubeconfig (the read-only access of flotilla status: get, list, watch)
and never reads a Secret or changes anything: approve, resume and undo stay commands, which the
page shows.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, ns, err := loadKubeconfig(kubeconfig, namespace)
			if err != nil {
				return err
			}
			if all {
				ns = ""
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runDashboard(ctx, cmd.OutOrStdout(), cfg, ns, bind, every)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the management cluster")
	f.StringVarP(&namespace, "namespace", "n", "", "namespace (default: the kubeconfig's)")
	f.BoolVarP(&all, "all-namespaces", "A", false, "every namespace")
	f.StringVar(&bind, "bind-address", "127.0.0.1:8080", "address to serve on; another than a loopback address lets anyone who reaches it read the fleet")
	f.DurationVar(&every, "interval", dashboard.DefaultInterval, "how often the page refreshes")
	return cmd
}

// runDashboard watches the fleet in namespace ns ("" for all) and serves the dashboard on bind
// until ctx ends.
func runDashboard(ctx context.Context, out io.Writer, cfg *rest.Config, ns, bind string, every time.Duration) error {
	s := scheme.New()
	// A plain list first: a missing permission or CRD is an error now, not an informer retrying
	// forever in the background.
	direct, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return err
	}
	kinds := []client.ObjectList{&v1alpha1.WorkloadClusterList{}, &v1alpha1.PackageDeploymentList{}, &v1alpha1.PackageSetList{}, &v1alpha1.PackageVariantList{}}
	for _, l := range kinds {
		if err := direct.List(ctx, l, client.InNamespace(ns), client.Limit(1)); err != nil {
			return fmt.Errorf("read the fleet: %w", err)
		}
	}
	opts := cache.Options{Scheme: s, DefaultTransform: cache.TransformStripManagedFields()}
	if ns != "" {
		opts.DefaultNamespaces = map[string]cache.Config{ns: {}}
	}
	c, err := cache.New(cfg, opts)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cacheDone := make(chan error, 1)
	go func() { cacheDone <- c.Start(ctx) }()
	for _, obj := range []client.Object{&v1alpha1.WorkloadCluster{}, &v1alpha1.PackageDeployment{}, &v1alpha1.PackageSet{}, &v1alpha1.PackageVariant{}} {
		if _, err := c.GetInformer(ctx, obj); err != nil {
			return fmt.Errorf("watch the fleet: %w", err)
		}
	}
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("watch the fleet: %w", context.Cause(ctx))
	}
	l, err := net.Listen("tcp", bind)
	if err != nil {
		return fmt.Errorf("--bind-address: %w", err)
	}
	where := "namespace " + ns
	if ns == "" {
		where = "every namespace"
	}
	fmt.Fprintf(out, "flotilla dashboard of %s: http://%s/ (read-only; Ctrl-C stops it)\n", where, l.Addr())
	h := dashboard.New(c, dashboard.Options{Namespace: ns, Interval: every, Hosts: dashboard.HostsFor(l.Addr().String())})
	err = dashboard.Serve(ctx, l, h)
	cancel()
	if cerr := <-cacheDone; err == nil {
		err = cerr
	}
	return err
}
