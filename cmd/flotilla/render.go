package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flotilla-dev/flotilla/internal/fleet"
	"github.com/flotilla-dev/flotilla/internal/ocipkg"
	"github.com/flotilla-dev/flotilla/internal/offline"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// offlineRun loads dir and runs every cluster through git: the one flow behind render, render
// --dry-run and diff. A load error is returned as is: nothing ran.
func offlineRun(cmd *cobra.Command, dir string, dryRun bool, flags runFlags) ([]offline.Result, *offline.Preview, error) {
	load := offline.Load
	if flags.live {
		load = offline.LoadChanges // references are checked once laid over the live fleet
	}
	f, err := load(dir)
	if err != nil {
		return nil, nil, err
	}
	if flags.live {
		// The management cluster's fleet, with the files' objects in place of its own.
		c, ns, err := kubeClient(cmd.Context(), flags.kubeconfig, flags.namespace)
		if err != nil {
			return nil, nil, err
		}
		base, err := offline.FromAPI(cmd.Context(), c, ns)
		if err != nil {
			return nil, nil, err
		}
		if f, err = f.Over(base); err != nil {
			return nil, nil, err
		}
	}
	if f.Approvals, err = parseApprovals(f, flags.approvals); err != nil {
		return nil, nil, err
	}
	for _, c := range flags.clusters {
		key, err := clusterKey(f, "--cluster", c)
		if err != nil {
			return nil, nil, err
		}
		if f.Only == nil {
			f.Only = map[string]bool{}
		}
		f.Only[key] = true
	}
	f.Progress = progress(cmd.ErrOrStderr(), "render")
	cache, err := os.MkdirTemp("", "flotilla-render-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(cache)
	store := pkgrepo.NewStore(cache)
	// render runs as the user, on the user's files: local repositories are theirs to name.
	store.AllowLocal = true
	var git offline.Git = fleet.Sources{Store: store, Registry: &ocipkg.Cache{}}
	var preview *offline.Preview
	if dryRun {
		preview = offline.NewPreview(git)
		git = preview
	}
	return offline.Run(cmd.Context(), git, f), preview, nil
}

func renderCmd() *cobra.Command {
	var dir, output string
	var dryRun bool
	var flags runFlags
	cmd := &cobra.Command{
		Use:   "render -f DIR",
		Short: "Publish every cluster's deployed-packages from objects in YAML files, without a cluster",
		Long: `render reads Repository, WorkloadCluster, PackageDeployment, PackageSet and Secret objects (and
the ConfigMaps and other objects sets read) from the YAML files under DIR, validates and defaults
them as the API server would, expands PackageSets with the controller's planning core, resolves
every deployment, and publishes each cluster's deployed-packages (and variants) into the
repositories they name (http(s):// and file:// alike), exactly as the controller would. Manual
clusters get a proposal branch. It prints one row per cluster and exits non-zero if any cluster
failed; a failed cluster publishes nothing. With --dry-run it pushes nothing and says what it
would do (flotilla diff shows the content).`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			results, _, err := offlineRun(cmd, dir, dryRun, flags)
			if err != nil {
				return err
			}
			switch output {
			case "yaml", "json":
				err = writeStructured(cmd.OutOrStdout(), output, offline.Rows(results, dryRun))
			case "":
				if dryRun {
					err = offline.PrintDryRunTable(cmd.OutOrStdout(), results)
				} else {
					err = offline.PrintTable(cmd.OutOrStdout(), results)
				}
			}
			if err != nil {
				return err
			}
			if n := offline.Failed(results); n > 0 {
				return fmt.Errorf("%d of %d clusters published nothing (see the table)", n, len(results))
			}
			switch {
			case offline.Wrote(results) == 0:
				fmt.Fprintln(cmd.ErrOrStderr(), "nothing changed")
			case dryRun:
				fmt.Fprintln(cmd.ErrOrStderr(), "dry run: nothing was pushed")
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&dir, "filename", "f", "", "directory (or file) with the objects")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "plan every publish against the repositories, push nothing")
	cmd.Flags().StringVarP(&output, "output", "o", "", "table (default), yaml or json")
	flags.add(cmd)
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func diffCmd() *cobra.Command {
	var dir, output string
	var flags runFlags
	cmd := &cobra.Command{
		Use:   "diff -f DIR [--live [--kubeconfig FILE] [-n NS]]",
		Short: "Show what render would write to each repository, as a unified diff, pushing nothing",
		Long: `diff runs render on the objects under DIR without pushing, and prints a unified diff of every
package it would write: each cluster's deployed-packages (its sync objects) and each variant.
With --live it reads the fleet of a namespace of the management cluster (the kubeconfig's, or
--kubeconfig and -n) and puts the objects under DIR in place of its own: the diff of a change
before it is applied.
Exit status, as kubectl diff: 0 when nothing would change, 1 when something would, 2 on an error
(invalid input, a cluster that cannot be rendered, an unreachable repository).`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return cannotRun(err)
			}
			results, preview, err := offlineRun(cmd, dir, true, flags)
			if err != nil {
				return cannotRun(err)
			}
			changes := preview.Changes()
			if output == "yaml" || output == "json" {
				diffs, err := offline.Diffs(changes)
				if err == nil {
					err = writeStructured(cmd.OutOrStdout(), output, diffs)
				}
				if err != nil {
					return cannotRun(err)
				}
			} else if err := offline.WriteDiff(cmd.OutOrStdout(), changes); err != nil {
				return cannotRun(err)
			}
			if n := offline.Failed(results); n > 0 {
				_ = offline.PrintDryRunTable(cmd.ErrOrStderr(), results)
				return cannotRun(fmt.Errorf("%d of %d clusters cannot be rendered (see the table)", n, len(results)))
			}
			if len(changes) > 0 {
				return &exitError{code: exitFinding, err: fmt.Errorf("%d packages would change", len(changes))}
			}
			fmt.Fprintln(cmd.ErrOrStderr(), "no changes")
			return nil
		},
	}
	cmd.Flags().StringVarP(&dir, "filename", "f", "", "directory (or file) with the objects")
	cmd.Flags().BoolVar(&flags.live, "live", false, "read the fleet from the management cluster, the files being the changes")
	cmd.Flags().StringVar(&flags.kubeconfig, "kubeconfig", "", "kubeconfig of the management cluster, with --live")
	cmd.Flags().StringVarP(&flags.namespace, "namespace", "n", "", "namespace of the fleet, with --live (default: the kubeconfig's)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "the unified diff (default), or yaml or json: one entry per file")
	flags.add(cmd)
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

// runFlags are the flags render and diff share.
type runFlags struct {
	approvals, clusters   []string
	live                  bool
	kubeconfig, namespace string
}

func (f *runFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&f.approvals, "approve", nil,
		"approve the pending proposal of a Manual cluster: CLUSTER=COMMIT, the full commit id of the proposal you reviewed (repeatable; CLUSTER is NAME or NAMESPACE/NAME)")
	cmd.Flags().StringArrayVar(&f.clusters, "cluster", nil,
		"limit the run to this cluster, NAME or NAMESPACE/NAME (repeatable): the others, and their variants, are not written")
}

// clusterKey is the fleet's key (namespace/name) of a cluster a flag names.
func clusterKey(f *offline.Fleet, flag, name string) (string, error) {
	key := name
	if !strings.Contains(key, "/") {
		key = "default/" + key
	}
	if f.Clusters[key] == nil {
		return "", fmt.Errorf("%s %q: no WorkloadCluster %s in the files", flag, name, key)
	}
	return key, nil
}

// parseApprovals turns CLUSTER=COMMIT flags into the fleet's approvals, refusing clusters that are
// not in the files.
func parseApprovals(f *offline.Fleet, flags []string) (map[string]string, error) {
	out := map[string]string{}
	for _, a := range flags {
		name, commit, ok := strings.Cut(a, "=")
		if !ok || name == "" || commit == "" {
			return nil, fmt.Errorf("--approve %q: write CLUSTER=COMMIT, the full commit id of the proposal you reviewed", a)
		}
		key, err := clusterKey(f, "--approve", name)
		if err != nil {
			return nil, err
		}
		out[key] = commit
	}
	return out, nil
}
