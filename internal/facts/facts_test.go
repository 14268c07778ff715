package facts

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
