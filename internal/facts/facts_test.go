package facts

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

func testNode(name string, labels map[string]string, cpu, memory string) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
	return n
}

func TestFrom(t *testing.T) {
	nodes := []corev1.Node{
		testNode("n1", map[string]string{LabelRegion: "eu-west", LabelZone: "eu-west-1b", LabelInstanceType: "m5.large"}, "3500m", "7Gi"),
		testNode("n2", map[string]string{LabelRegion: "eu-west", LabelZone: "eu-west-1a"}, "500m", "1Gi"),
		testNode("n3", map[string]string{LabelRegion: strings.Repeat("x", 64)}, "1", "1Gi"), // too long a label value: skipped
	}
	f, err := From("v1.33.1", nodes, map[string]string{"site": "madrid"})
	if err != nil {
		t.Fatal(err)
	}
	got := Values(&f)
	want := map[string]string{"kubernetesVersion": "v1.33.1", "nodes": "3", "cpu": "5", "memory": "9Gi", "region": "eu-west",
		"zone": "eu-west-1a,eu-west-1b", "instanceType": "m5.large", "site": "madrid"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
}

// A workload cluster's site ConfigMap is input: beyond the bounds it is refused, naming the bound.
func TestFromBoundsSiteFacts(t *testing.T) {
	many := map[string]string{}
	for i := range 65 {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	for name, tc := range map[string]struct {
		site map[string]string
		want string
	}{
		"too many keys":    {many, "65 keys, more than the 64"},
		"too long a value": {map[string]string{"blob": strings.Repeat("x", 1025)}, `site fact "blob" is 1025 bytes`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := From("v1.33.1", nil, tc.site)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("From = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// pagedNodes answers node lists a page at a time, as an API server does with limit and continue;
// the ConfigMap is site (nil: not found).
type pagedNodes struct {
	pages [][]map[string]any
	site  map[string]any
	asked []metav1.ListOptions
}

func (p *pagedNodes) List(_ context.Context, gvk schema.GroupVersionKind, _ string, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	if gvk.Kind != "Node" {
		return nil, fmt.Errorf("listed %s", gvk.Kind)
	}
	p.asked = append(p.asked, opts)
	i := 0
	if opts.Continue != "" {
		i, _ = strconv.Atoi(opts.Continue)
	}
	list := &unstructured.UnstructuredList{}
	for _, obj := range p.pages[i] {
		list.Items = append(list.Items, unstructured.Unstructured{Object: obj})
	}
	if i+1 < len(p.pages) {
		list.SetContinue(strconv.Itoa(i + 1))
	}
	return list, nil
}

func (p *pagedNodes) Get(_ context.Context, _ schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	if p.site == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
	}
	return &unstructured.Unstructured{Object: p.site}, nil
}

func node(labels map[string]any, allocatable map[string]any) map[string]any {
	return map[string]any{"metadata": map[string]any{"name": "n", "labels": labels, "annotations": map[string]any{"big": strings.Repeat("x", 1000)}},
		"status": map[string]any{"allocatable": allocatable, "images": []any{map[string]any{"names": []any{"a"}}}}}
}

// Read lists the nodes a page at a time and keeps only what facts are made of; what a cluster
// reports that is not what a node or a ConfigMap holds is refused, naming what is wrong.
func TestReadTakesWhatFactsAreMadeOf(t *testing.T) {
	ctx := context.Background()
	site := v1alpha1.NamespacedName{Namespace: "kube-system", Name: "flotilla-facts"}
	p := &pagedNodes{
		pages: [][]map[string]any{
			{node(map[string]any{LabelRegion: "eu-west", "other": "x"}, map[string]any{"cpu": "1500m", "memory": "1Gi"})},
			// Integers as the JSON decoder gives them (int64), and as a float.
			{node(map[string]any{LabelZone: "eu-west-1a"}, map[string]any{"cpu": int64(2), "memory": float64(1073741824)})},
		},
		site: map[string]any{"data": map[string]any{"site": "madrid"}},
	}
	f, err := Read(ctx, p, "v1.33.1", site)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"kubernetesVersion": "v1.33.1", "nodes": "2", "cpu": "3500m", "memory": "2Gi", "region": "eu-west",
		"zone": "eu-west-1a", "instanceType": "", "site": "madrid"}
	if diff := cmp.Diff(want, Values(&f)); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	if len(p.asked) != 2 || p.asked[0].Limit != nodesPage || p.asked[1].Continue != "1" {
		t.Errorf("lists asked %+v, want two pages of %d", p.asked, nodesPage)
	}

	for name, tc := range map[string]struct {
		p    *pagedNodes
		want string
	}{
		"labels that are not strings": {&pagedNodes{pages: [][]map[string]any{{node(map[string]any{LabelRegion: int64(1)}, nil)}}},
			"list nodes: a node's labels are not strings"},
		"a cpu that is not a quantity": {&pagedNodes{pages: [][]map[string]any{{node(nil, map[string]any{"cpu": "lots"})}}},
			"list nodes: a node's allocatable cpu is not a quantity"},
		"a memory that is a map": {&pagedNodes{pages: [][]map[string]any{{node(nil, map[string]any{"memory": map[string]any{}})}}},
			"list nodes: a node's allocatable memory is not a quantity"},
		"too many nodes": {&pagedNodes{pages: [][]map[string]any{make([]map[string]any, maxNodes+1)}},
			"more than 50000 nodes"},
		"site data that are not strings": {&pagedNodes{pages: [][]map[string]any{nil}, site: map[string]any{"data": map[string]any{"k": int64(1)}}},
			"read ConfigMap kube-system/flotilla-facts: its data are not strings"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Read(ctx, tc.p, "v1.33.1", site)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Read = %v, want an error with %q", err, tc.want)
			}
		})
	}
}
