// Package fleetstatus builds the fleet table of `flotilla status`: one row per deployment
// (cluster × package) with what it asks for, what is published and what the cluster reports, and
// one row per PackageSet with its rollout progress.
package fleetstatus

import (
	"context"
	"fmt"
	"io"
	"sort"
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

// Read lists the fleet's objects in namespace ("" for all namespaces).
func Read(ctx context.Context, c client.Reader, namespace string) (Snapshot, error) {
	var s Snapshot
	var clusters v1alpha1.WorkloadClusterList
	var deployments v1alpha1.PackageDeploymentList
	var sets v1alpha1.PackageSetList
	var variants v1alpha1.PackageVariantList
	for _, l := range []client.ObjectList{&clusters, &deployments, &sets, &variants} {
		if err := c.List(ctx, l, client.InNamespace(namespace)); err != nil {
			return s, err
		}
	}
	s.Clusters, s.Deployments, s.Sets, s.Variants = clusters.Items, deployments.Items, sets.Items, variants.Items
	return s, nil
}

// Print writes the deployments table, then the sets table.
func Print(w io.Writer, s Snapshot) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	clusters := map[string]*v1alpha1.WorkloadCluster{}
	for i := range s.Clusters {
		c := &s.Clusters[i]
		clusters[c.Namespace+"/"+c.Name] = c
	}
	deployments := append([]v1alpha1.PackageDeployment(nil), s.Deployments...)
	sort.Slice(deployments, func(i, j int) bool {
		a, b := deployments[i], deployments[j]
		if a.Spec.Cluster.Name != b.Spec.Cluster.Name {
			return a.Spec.Cluster.Name < b.Spec.Cluster.Name
		}
		return a.Name < b.Name
	})
	fmt.Fprintln(tw, "CLUSTER\tDEPLOYMENT\tPACKAGE\tWANTS\tPINNED\tDEPLOYED-PACKAGES\tSYNC\tREADY")
	for _, pd := range deployments {
		c := clusters[pd.Namespace+"/"+pd.Spec.Cluster.Name]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", pd.Spec.Cluster.Name, pd.Name, pd.Spec.Package.Name, pd.Spec.Package.Revision,
			pinned(&pd), published(c, &pd), condition(pd.Status.Conditions, v1alpha1.ConditionSynced), condition(pd.Status.Conditions, v1alpha1.ConditionReady))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := printLineage(w, s, deployments); err != nil {
		return err
	}
	if len(s.Sets) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	fmt.Fprintln(tw, "PACKAGESET\tPACKAGE\tTARGETS\tUPDATED\tREADY\tROLLOUT\tSTATUS")
	sets := append([]v1alpha1.PackageSet(nil), s.Sets...)
	sort.Slice(sets, func(i, j int) bool { return sets[i].Name < sets[j].Name })
	for _, set := range sets {
		fmt.Fprintf(tw, "%s\t%s@%s\t%d\t%d\t%d\t%s\t%s\n", set.Name, set.Spec.Package.Name, setRevision(&set),
			set.Status.Targets, set.Status.Updated, set.Status.Ready, rollout(&set), condition(set.Status.Conditions, v1alpha1.ConditionReady))
	}
	return tw.Flush()
}

// printLineage writes the variants table, and for each deployment that pins a variant's output,
// the chain it runs: which blueprint revision, through which layers.
func printLineage(w io.Writer, s Snapshot, deployments []v1alpha1.PackageDeployment) error {
	if len(s.Variants) == 0 {
		return nil
	}
	variants := append([]v1alpha1.PackageVariant(nil), s.Variants...)
	sort.Slice(variants, func(i, j int) bool {
		return variants[i].Namespace+"/"+variants[i].Name < variants[j].Namespace+"/"+variants[j].Name
	})
	byTag := map[string]*v1alpha1.PackageVariant{}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PACKAGEVARIANT\tDOWNSTREAM\tLINEAGE\tSTATUS")
	for i := range variants {
		pv := &variants[i]
		down := "-"
		if d := pv.Status.Downstream; d != nil {
			down = d.Tag
			byTag[pv.Namespace+"/"+d.Repository+"/"+d.Tag] = pv
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", pv.Name, down, chain(pv.Status.Lineage), condition(pv.Status.Conditions, v1alpha1.ConditionReady))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, pd := range deployments {
		r := pd.Status.Resolved
		if r == nil {
			continue
		}
		if pv := byTag[pd.Namespace+"/"+r.Repository+"/"+r.Tag]; pv != nil {
			fmt.Fprintf(w, "%s on %s runs %s ← %s\n", pd.Name, pd.Spec.Cluster.Name, r.Tag, chainUp(pv.Status.Lineage))
		}
	}
	return nil
}

// chain is a lineage root first: free5gc-upf/v7 → upf-telco/v4.
func chain(l []v1alpha1.LineageEntry) string {
	if len(l) == 0 {
		return "-"
	}
	tags := make([]string, len(l))
	for i, e := range l {
		tags[i] = e.Tag
	}
	return strings.Join(tags, " → ")
}

// chainUp is a lineage nearest first: upf-telco/v4 ← free5gc-upf/v7.
func chainUp(l []v1alpha1.LineageEntry) string {
	tags := make([]string, 0, len(l))
	for i := len(l) - 1; i >= 0; i-- {
		tags = append(tags, l[i].Tag)
	}
	return strings.Join(tags, " ← ")
}

// setRevision is the revision a set asks for: its spec's, or, promoted from another set, the one
// it deploys and where it comes from (the chain dev → staging → prod reads along the table).
func setRevision(set *v1alpha1.PackageSet) string {
	rf := set.Spec.Package.RevisionFrom
	if rf == nil {
		return set.Spec.Package.Revision
	}
	rev := set.Spec.Package.Revision
	if p := set.Status.Promotion; p != nil {
		rev = p.Revision
	}
	return rev + " ← " + rf.PackageSet
}

func pinned(pd *v1alpha1.PackageDeployment) string {
	if r := pd.Status.Resolved; r != nil {
		return fmt.Sprintf("v%d", r.Revision)
	}
	return "-"
}

// published is the deployed-packages revision carrying the deployment's pin, or what is pending.
func published(c *v1alpha1.WorkloadCluster, pd *v1alpha1.PackageDeployment) string {
	switch {
	case c == nil:
		return "no cluster"
	case c.Status.Proposal != nil && !meta.IsStatusConditionTrue(pd.Status.Conditions, v1alpha1.ConditionPublished):
		return fmt.Sprintf("proposed v%d", c.Status.Proposal.Revision)
	case pd.Status.DeployedPackagesRevision > 0:
		return fmt.Sprintf("v%d", pd.Status.DeployedPackagesRevision)
	}
	return "-"
}

func rollout(set *v1alpha1.PackageSet) string {
	r := set.Status.Rollout
	if r == nil {
		return string(orDefault(set.Spec.Strategy.Type, v1alpha1.StrategyAllAtOnce))
	}
	state := fmt.Sprintf("step %d/%d", r.Step+1, steps(set))
	switch {
	case r.Halted:
		state += " halted: " + strings.Join(r.FailedTargets, ",")
	case r.Paused:
		state += " paused"
	}
	return r.Revision + " " + state
}

func steps(set *v1alpha1.PackageSet) int {
	if ru := set.Spec.Strategy.RollingUpdate; ru != nil {
		return len(ru.Steps)
	}
	return 1
}

func orDefault[T comparable](v, d T) T {
	var zero T
	if v == zero {
		return d
	}
	return v
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
