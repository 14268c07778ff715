// Package facts reads facts about a workload cluster (its Kubernetes version, nodes, allocatable
// totals, the distinct values of well-known node labels, and a ConfigMap where the site publishes
// its own facts) and turns them into what PackageSets use: `target.facts` in CEL and a values
// layer. The workload cluster is input: what it reports is bounded before it reaches status.
package facts

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// Well-known node labels whose distinct values are facts.
const (
	LabelRegion       = "topology.kubernetes.io/region"
	LabelZone         = "topology.kubernetes.io/zone"
	LabelInstanceType = "node.kubernetes.io/instance-type"
)

// DefaultConfigMap is where a site publishes its own facts, unless spec.factsConfigMap says
// otherwise.
var DefaultConfigMap = v1alpha1.NamespacedName{Namespace: "kube-system", Name: "flotilla-facts"}

// Bounds on what a workload cluster can put into status.
const (
	maxDistinct   = 64
	maxSiteKeys   = 64
	maxSiteValue  = 1024
	maxLabelValue = 63
	maxSiteKey    = 253
	maxVersion    = 64
)

// Reader reads a workload cluster's objects (remotecluster.Client).
type Reader interface {
	List(ctx context.Context, gvk schema.GroupVersionKind, namespace string, opts metav1.ListOptions) (*unstructured.UnstructuredList, error)
	Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error)
}

// Bounds on reading a workload cluster's nodes: they are listed a page at a time, and a cluster
// that reports more than maxNodes (ten times Kubernetes' largest supported cluster) is refused.
const (
	nodesPage = 500
	maxNodes  = 50000
)

// Read reads cluster's facts through c (a client of the workload cluster); version is its API
// server's version. A missing site ConfigMap is no error: the site has no facts of its own. Only
// what the facts are made of is kept of each object: a node's well-known labels and allocatable
// CPU and memory, the ConfigMap's data.
func Read(ctx context.Context, c Reader, version string, site v1alpha1.NamespacedName) (v1alpha1.ClusterFacts, error) {
	var nodes []corev1.Node
	opts := metav1.ListOptions{Limit: nodesPage}
	for {
		list, err := c.List(ctx, corev1.SchemeGroupVersion.WithKind("Node"), "", opts)
		if err != nil {
			return v1alpha1.ClusterFacts{}, fmt.Errorf("list nodes: %w", err)
		}
		if len(nodes)+len(list.Items) > maxNodes {
			return v1alpha1.ClusterFacts{}, fmt.Errorf("the cluster reports more than %d nodes, more than flotilla takes", maxNodes)
		}
		for i := range list.Items {
			n, err := factsOf(list.Items[i].Object)
			if err != nil {
				return v1alpha1.ClusterFacts{}, fmt.Errorf("list nodes: a node's %w", err)
			}
			nodes = append(nodes, n)
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			break
		}
	}
	var data map[string]string
	u, err := c.Get(ctx, corev1.SchemeGroupVersion.WithKind("ConfigMap"), site.Namespace, site.Name)
	switch {
	case err == nil:
		if data, _, err = unstructured.NestedStringMap(u.Object, "data"); err != nil {
			return v1alpha1.ClusterFacts{}, fmt.Errorf("read ConfigMap %s/%s: its data are not strings", site.Namespace, site.Name)
		}
	case !apierrors.IsNotFound(err):
		return v1alpha1.ClusterFacts{}, fmt.Errorf("read ConfigMap %s/%s: %w", site.Namespace, site.Name, err)
	}
	return From(version, nodes, data)
}

// factsOf is the part of a node that its facts are made of: its well-known labels and its
// allocatable CPU and memory.
func factsOf(obj map[string]any) (corev1.Node, error) {
	var n corev1.Node
	labels, _, err := unstructured.NestedStringMap(obj, "metadata", "labels")
	if err != nil {
		return n, errors.New("labels are not strings")
	}
	for _, l := range []string{LabelRegion, LabelZone, LabelInstanceType} {
		if v, ok := labels[l]; ok {
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			n.Labels[l] = v
		}
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		v, found, _ := unstructured.NestedFieldNoCopy(obj, "status", "allocatable", string(r))
		if !found {
			continue
		}
		var text string
		switch v := v.(type) {
		case string:
			text = v
		case int64:
			text = strconv.FormatInt(v, 10)
		case float64:
			text = strconv.FormatFloat(v, 'f', -1, 64)
		default:
			return n, fmt.Errorf("allocatable %s is not a quantity", r)
		}
		q, err := resource.ParseQuantity(text)
		if err != nil {
			return n, fmt.Errorf("allocatable %s is not a quantity", r)
		}
		if n.Status.Allocatable == nil {
			n.Status.Allocatable = corev1.ResourceList{}
		}
		n.Status.Allocatable[r] = q
	}
	return n, nil
}

// From computes facts from what the cluster reported. Site facts beyond the bounds (64 keys,
// 1 KiB values) are refused as a whole, naming the bound: they would not fit a status.
func From(version string, nodes []corev1.Node, site map[string]string) (v1alpha1.ClusterFacts, error) {
	if len(version) > maxVersion {
		return v1alpha1.ClusterFacts{}, fmt.Errorf("the API server reports a version of %d characters, more than the %d flotilla takes", len(version), maxVersion)
	}
	f := v1alpha1.ClusterFacts{KubernetesVersion: version, Nodes: int32(len(nodes))}
	cpu, mem := resource.Quantity{}, resource.Quantity{}
	distinct := map[string]map[string]bool{LabelRegion: {}, LabelZone: {}, LabelInstanceType: {}}
	for _, n := range nodes {
		if q, ok := n.Status.Allocatable[corev1.ResourceCPU]; ok {
			cpu.Add(q)
		}
		if q, ok := n.Status.Allocatable[corev1.ResourceMemory]; ok {
			mem.Add(q)
		}
		for label, seen := range distinct {
			if v := n.Labels[label]; v != "" && len(v) <= maxLabelValue && len(seen) < maxDistinct {
				seen[v] = true
			}
		}
	}
	f.CPU, f.Memory = canonical(cpu), canonical(mem)
	f.Regions, f.Zones, f.InstanceTypes = sorted(distinct[LabelRegion]), sorted(distinct[LabelZone]), sorted(distinct[LabelInstanceType])
	if len(site) > maxSiteKeys {
		return f, fmt.Errorf("the site facts ConfigMap has %d keys, more than the %d flotilla takes", len(site), maxSiteKeys)
	}
	for k, v := range site {
		if len(k) > maxSiteKey {
			return f, fmt.Errorf("a site fact's key is %d characters, more than the %d flotilla takes", len(k), maxSiteKey)
		}
		if len(v) > maxSiteValue {
			return f, fmt.Errorf("site fact %q is %d bytes, more than the %d flotilla takes", k, len(v), maxSiteValue)
		}
	}
	if len(site) > 0 {
		f.Site = maps.Clone(site)
	}
	return f, nil
}

// canonical is q written the way it reads back from the API server, so equal facts compare equal.
func canonical(q resource.Quantity) resource.Quantity {
	return resource.MustParse(q.String())
}

func sorted(set map[string]bool) []string {
	if len(set) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(set))
}

// Values are the facts as a values layer: kubernetesVersion, nodes, cpu, memory, region, zone and
// instanceType (distinct values, comma-separated), then every site fact.
func Values(f *v1alpha1.ClusterFacts) map[string]string {
	if f == nil {
		return nil
	}
	out := map[string]string{
		"kubernetesVersion": f.KubernetesVersion,
		"nodes":             strconv.Itoa(int(f.Nodes)),
		"cpu":               f.CPU.String(),
		"memory":            f.Memory.String(),
		"region":            strings.Join(f.Regions, ","),
		"zone":              strings.Join(f.Zones, ","),
		"instanceType":      strings.Join(f.InstanceTypes, ","),
	}
	maps.Copy(out, f.Site)
	return out
}
