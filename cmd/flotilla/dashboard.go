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

	"github.com/flotilla-dev/flotilla/internal/dashboard"
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
			api, err := apiServer(cmd.Context(), "--kubeconfig", kubeconfig)
			if err != nil {
				return err
			}
			cfg, ns := api.REST, namespace
			if ns == "" {
				ns = api.Namespace
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
	r, err := dashboard.Watch(ctx, cfg, ns)
	if err != nil {
		return err
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
	return dashboard.Serve(ctx, l, dashboard.New(r, dashboard.Options{Namespace: ns, Interval: every, Hosts: dashboard.HostsFor(l.Addr().String())}))
}
