// Package fleetstatus reads the fleet as people look at it (Fleet): one entry per deployment
// (cluster × package) with what it asks for, what is published, what the cluster reports and its
// health, each PackageSet with its rollout step by step, each variant with its lineage. `flotilla
// status` prints it as tables, the dashboard serves it as JSON.
package fleetstatus

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// Snapshot is the fleet as read from the API server.
type Snapshot struct {
	Clusters    []v1alpha1.WorkloadCluster
	Deployments []v1alpha1.PackageDeployment
	Sets        []v1alpha1.PackageSet
	Variants    []v1alpha1.PackageVariant
}

// List is the snapshot's objects as a v1 List, clusters, then deployments, then sets, each
// with its apiVersion and kind (as kubectl get -o yaml prints them).
func List(s Snapshot) (map[string]any, error) {
	items := []any{}
	add := func(kind string, obj runtime.Object) error {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return err
		}
		u["apiVersion"], u["kind"] = v1alpha1.GroupVersion.String(), kind
		unstructured.RemoveNestedField(u, "metadata", "managedFields")
		items = append(items, u)
		return nil
	}
	for i := range s.Clusters {
		if err := add("WorkloadCluster", &s.Clusters[i]); err != nil {
			return nil, err
		}
	}
	for i := range s.Deployments {
		if err := add("PackageDeployment", &s.Deployments[i]); err != nil {
			return nil, err
		}
	}
	for i := range s.Sets {
		if err := add("PackageSet", &s.Sets[i]); err != nil {
			return nil, err
		}
	}
	for i := range s.Variants {
		if err := add("PackageVariant", &s.Variants[i]); err != nil {
			return nil, err
		}
	}
	return map[string]any{"apiVersion": "v1", "kind": "List", "items": items}, nil
}

// Read lists the fleet's objects in namespace ("" for all namespaces), with opts (a cache reader
// may be given client.UnsafeDisableDeepCopy: Build never changes the objects).
func Read(ctx context.Context, c client.Reader, namespace string, opts ...client.ListOption) (Snapshot, error) {
	var s Snapshot
	var clusters v1alpha1.WorkloadClusterList
	var deployments v1alpha1.PackageDeploymentList
	var sets v1alpha1.PackageSetList
	var variants v1alpha1.PackageVariantList
	for _, l := range []client.ObjectList{&clusters, &deployments, &sets, &variants} {
		if err := c.List(ctx, l, append([]client.ListOption{client.InNamespace(namespace)}, opts...)...); err != nil {
			return s, err
		}
	}
	s.Clusters, s.Deployments, s.Sets, s.Variants = clusters.Items, deployments.Items, sets.Items, variants.Items
	return s, nil
}

// Print writes the deployments table, then the variants and the sets tables.
func Print(w io.Writer, f Fleet) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	var deployments []Deployment
	for _, c := range f.Clusters {
		deployments = append(deployments, c.Deployments...)
	}
	deployments = append(deployments, f.Orphans...)
	slices.SortStableFunc(deployments, func(a, b Deployment) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Name, b.Name))
	})
	fmt.Fprintln(tw, "CLUSTER\tDEPLOYMENT\tPACKAGE\tWANTS\tPINNED\tDEPLOYED-PACKAGES\tSYNC\tREADY\tHEALTH")
	for _, d := range deployments {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.Cluster, d.Name, d.Package, d.Wants, d.Pinned, d.Published,
			condition(d.Conditions, v1alpha1.ConditionSynced), condition(d.Conditions, v1alpha1.ConditionReady), d.Status.Health)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := printLineage(w, f, deployments); err != nil {
		return err
	}
	if len(f.Sets) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	fmt.Fprintln(tw, "PACKAGESET\tPACKAGE\tTARGETS\tUPDATED\tREADY\tROLLOUT\tSTATUS\tHEALTH")
	sets := slices.Clone(f.Sets)
	slices.SortStableFunc(sets, func(a, b Set) int { return cmp.Compare(a.Name, b.Name) })
	for _, set := range sets {
		fmt.Fprintf(tw, "%s\t%s@%s\t%d\t%d\t%d\t%s\t%s\t%s\n", set.Name, set.Package, set.Revision,
			set.Targets, set.Updated, set.Ready, rolloutText(set), condition(set.Conditions, v1alpha1.ConditionReady), set.Status.Health)
	}
	return tw.Flush()
}

// printLineage writes the variants table, and for each deployment that pins a variant's output,
// the chain it runs: which blueprint revision, through which layers.
func printLineage(w io.Writer, f Fleet, deployments []Deployment) error {
	if len(f.Variants) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PACKAGEVARIANT\tDOWNSTREAM\tLINEAGE\tSTATUS\tHEALTH")
	for _, pv := range f.Variants {
		down := "-"
		if d := pv.Downstream; d != nil {
			down = d.Tag
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", pv.Name, down, chain(pv.Lineage), condition(pv.Conditions, v1alpha1.ConditionReady), pv.Status.Health)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, d := range deployments {
		if len(d.Lineage) > 0 {
			fmt.Fprintf(w, "%s on %s runs %s\n", d.Name, d.Cluster, strings.Join(d.Lineage, " ← "))
		}
	}
	return nil
}

func rolloutText(set Set) string {
	r := set.Rollout
	if r == nil || r.Revision == "" {
		return set.Strategy
	}
	state := fmt.Sprintf("step %d/%d", r.Step+1, len(r.Steps))
	switch {
	case r.Halted:
		state += " halted: " + strings.Join(r.FailedTargets, ",")
	case r.Paused:
		state += " paused"
	}
	return r.Revision + " " + state
}

// condition renders a condition as its reason (True/False/Unknown when it has none), "-" if absent.
func condition(conds []metav1.Condition, typ string) string {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil {
		return "-"
	}
	if c.Reason != "" {
		return string(c.Status) + " " + c.Reason
	}
	return string(c.Status)
}
