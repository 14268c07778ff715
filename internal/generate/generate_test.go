package generate_test

import (
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/generate"
)

const del = v1alpha1.DeletionPolicyDelete

func packageSet(targets v1alpha1.Generator, template v1alpha1.DeploymentTemplate) *v1alpha1.PackageSet {
	return &v1alpha1.PackageSet{
		ObjectMeta: metav1.ObjectMeta{Name: "upf", Namespace: "fleet", Labels: map[string]string{"team": "core"}},
		Spec: v1alpha1.PackageSetSpec{
			Package:  v1alpha1.PackageReference{Name: "free5gc-upf", Revision: "v6"},
			Targets:  targets,
			Template: template,
		},
	}
}

// fleet is five clusters: three edge, two core.
func fleet() []generate.Cluster {
	c := func(name, siteType, env string) generate.Cluster {
		return generate.Cluster{
			Name: name, Namespace: "fleet",
			Labels:  map[string]string{"site-type": siteType},
			Context: map[string]string{"env": env},
		}
	}
	return []generate.Cluster{
		c("edge01", "edge", "prod"), c("edge02", "edge", "prod"), c("edge03", "edge", "staging"),
		c("core01", "core", "prod"), c("core02", "core", "prod"),
	}
}

func selectEdge() *v1alpha1.ClusterGenerator {
	return &v1alpha1.ClusterGenerator{Selector: v1alpha1.LabelSelector{MatchLabels: map[string]string{"site-type": "edge"}}}
}

// nephioCluster is shaped like Nephio's infra.nephio.org/v1alpha1 WorkloadCluster.
func nephioCluster(name, clusterName, siteType string) *unstructured.Unstructured {
	spec := map[string]any{"cnis": []any{"macvlan", "sriov"}, "masterInterface": "eth1"}
	if clusterName != "" {
		spec["clusterName"] = clusterName
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "infra.nephio.org/v1alpha1",
		"kind":       "WorkloadCluster",
		"metadata": map[string]any{
			"name": name, "namespace": "fleet",
			"labels": map[string]any{"nephio.org/site-type": siteType},
		},
		"spec": spec,
	}}
}

func target(key, cluster, name string, values map[string]string) generate.Target {
	return generate.Target{Key: key, Cluster: cluster, Name: name, Values: values, DeletionPolicy: del}
}

func TestGenerators(t *testing.T) {
	objects := []*unstructured.Unstructured{
		nephioCluster("nephio-edge01", "edge01", "edge"),
		nephioCluster("nephio-edge02", "edge02", "edge"),
		nephioCluster("nephio-core01", "core01", "core"), // not selected
		nephioCluster("nephio-edge42", "edge42", "edge"), // no such WorkloadCluster
		nephioCluster("nephio-broken", "", "edge"),       // no spec.clusterName
		{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "edge03"}}},
	}
	tests := []struct {
		name     string
		targets  v1alpha1.Generator
		template v1alpha1.DeploymentTemplate
		want     generate.Result
	}{{
		name:    "clusters selects 3 of 5 by label",
		targets: v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{Clusters: selectEdge()}},
		want: generate.Result{Targets: []generate.Target{
			target("edge01", "edge01", "upf-edge01", nil),
			target("edge02", "edge02", "upf-edge02", nil),
			target("edge03", "edge03", "upf-edge03", nil),
		}},
	}, {
		name: "list with values and a missing cluster",
		targets: v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{List: []v1alpha1.ListElement{
			{Cluster: "edge01", Values: map[string]string{"replicas": "2"}},
			{Cluster: "edge99"},
			{Values: map[string]string{"replicas": "3"}},
			{Cluster: "core01"},
		}}},
		want: generate.Result{
			Targets: []generate.Target{
				target("core01", "core01", "upf-core01", nil),
				target("edge01{replicas=2}", "edge01", "upf-edge01", map[string]string{"replicas": "2"}),
			},
			Problems: []generate.Problem{
				{Target: "edge99", Message: "WorkloadCluster edge99 does not exist in namespace fleet"},
				{Target: "targets.list[2]", Message: "targets.list[2] names no cluster: set its cluster (it may be left out only in a matrix whose other generator names the cluster)"},
			},
		},
	}, {
		name: "objects: Nephio WorkloadClusters with clusterExpr and valuesExpr",
		targets: v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{Objects: &v1alpha1.ObjectGenerator{
			APIVersion:  "infra.nephio.org/v1alpha1",
			Kind:        "WorkloadCluster",
			Selector:    v1alpha1.LabelSelector{MatchLabels: map[string]string{"nephio.org/site-type": "edge"}},
			ClusterExpr: "object.spec.clusterName",
			ValuesExpr:  "{'cni': object.spec.cnis[0], 'nic': object.spec.masterInterface}",
		}}},
		want: generate.Result{
			Targets: []generate.Target{
				target("edge01{cni=macvlan,nic=eth1}", "edge01", "upf-edge01", map[string]string{"cni": "macvlan", "nic": "eth1"}),
				target("edge02{cni=macvlan,nic=eth1}", "edge02", "upf-edge02", map[string]string{"cni": "macvlan", "nic": "eth1"}),
			},
			Problems: []generate.Problem{
				{Target: "WorkloadCluster/nephio-broken", Message: `targets.objects.clusterExpr "object.spec.clusterName": no such key: clusterName (object WorkloadCluster/nephio-broken)`},
				{Target: "edge42{cni=macvlan,nic=eth1}", Message: "WorkloadCluster edge42 does not exist in namespace fleet"},
			},
		},
	}, {
		name: "objects: default clusterExpr is the object's name",
		targets: v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{Objects: &v1alpha1.ObjectGenerator{
			APIVersion: "v1", Kind: "ConfigMap",
		}}},
		want: generate.Result{Targets: []generate.Target{target("edge03", "edge03", "upf-edge03", nil)}},
	}, {
		name: "objects: valuesExpr giving a non-string value is a problem of that object",
		targets: v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{Objects: &v1alpha1.ObjectGenerator{
			APIVersion: "infra.nephio.org/v1alpha1", Kind: "WorkloadCluster",
			Selector:    v1alpha1.LabelSelector{MatchLabels: map[string]string{"nephio.org/site-type": "core"}},
			ClusterExpr: "object.spec.clusterName",
			ValuesExpr:  "{'cnis': object.spec.cnis}",
		}}},
		want: generate.Result{Problems: []generate.Problem{{
			Target:  "WorkloadCluster/nephio-core01",
			Message: `targets.objects.valuesExpr "{'cnis': object.spec.cnis}": gives list for key "cnis", want string (object WorkloadCluster/nephio-core01)`,
		}}},
	}, {
		name: "matrix clusters × list: product, names from values",
		targets: v1alpha1.Generator{Matrix: []v1alpha1.LeafGenerator{
			{Clusters: selectEdge()},
			{List: []v1alpha1.ListElement{{Values: map[string]string{"slice": "a"}}, {Values: map[string]string{"slice": "b"}}}},
		}},
		template: v1alpha1.DeploymentTemplate{NameExpr: "target.name + '-' + values.slice"},
		want: generate.Result{Targets: []generate.Target{
			target("edge01{slice=a}", "edge01", "edge01-a", map[string]string{"slice": "a"}),
			target("edge01{slice=b}", "edge01", "edge01-b", map[string]string{"slice": "b"}),
			target("edge02{slice=a}", "edge02", "edge02-a", map[string]string{"slice": "a"}),
			target("edge02{slice=b}", "edge02", "edge02-b", map[string]string{"slice": "b"}),
			target("edge03{slice=a}", "edge03", "edge03-a", map[string]string{"slice": "a"}),
			target("edge03{slice=b}", "edge03", "edge03-b", map[string]string{"slice": "b"}),
		}},
	}, {
		name: "matrix list × list naming clusters: intersection, second wins",
		targets: v1alpha1.Generator{Matrix: []v1alpha1.LeafGenerator{
			{List: []v1alpha1.ListElement{
				{Cluster: "edge01", Values: map[string]string{"tier": "gold", "replicas": "1"}},
				{Cluster: "edge02", Values: map[string]string{"tier": "silver"}},
			}},
			{List: []v1alpha1.ListElement{
				{Cluster: "edge01", Values: map[string]string{"replicas": "2"}},
				{Cluster: "edge03", Values: map[string]string{"replicas": "3"}},
			}},
		}},
		want: generate.Result{Targets: []generate.Target{
			target("edge01{replicas=2,tier=gold}", "edge01", "upf-edge01", map[string]string{"tier": "gold", "replicas": "2"}),
		}},
	}, {
		name: "matrix list × list without clusters: a problem per pair",
		targets: v1alpha1.Generator{Matrix: []v1alpha1.LeafGenerator{
			{List: []v1alpha1.ListElement{{Values: map[string]string{"a": "1"}}}},
			{List: []v1alpha1.ListElement{{Values: map[string]string{"b": "2"}}}},
		}},
		want: generate.Result{Problems: []generate.Problem{{
			Target:  "targets.matrix[0].list[0]+targets.matrix[1].list[0]",
			Message: "targets.matrix[0].list[0]+targets.matrix[1].list[0] names no cluster: set its cluster (it may be left out only in a matrix whose other generator names the cluster)",
		}}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := generate.Generate(generate.Inputs{
				Set:      packageSet(tt.targets, tt.template),
				Clusters: fleet(),
				Objects:  objects,
			})
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Generate (-want +got):\n%s", diff)
			}
		})
	}
}

// A matrix of two lists of 10,000 elements that name no cluster (or the same one) would make
// 10^8 pairs: it fails as a whole, counted before any pair is made, and a matrix just within the
// bound generates.
func TestMatrixIsBounded(t *testing.T) {
	list := func(n int, cluster string) []v1alpha1.ListElement {
		l := make([]v1alpha1.ListElement, n)
		for i := range l {
			l[i] = v1alpha1.ListElement{Cluster: cluster, Values: map[string]string{"i": strconv.Itoa(i)}}
		}
		return l
	}
	for name, matrix := range map[string][]v1alpha1.LeafGenerator{
		"no cluster":       {{List: list(10_000, "")}, {List: list(10_000, "")}},
		"the same cluster": {{List: list(10_000, "edge01")}, {List: list(10_000, "edge01")}},
		"clusters × list":  {{Clusters: &v1alpha1.ClusterGenerator{}}, {List: list(10_000, "")}},
	} {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := generate.Generate(generate.Inputs{Set: packageSet(v1alpha1.Generator{Matrix: matrix}, v1alpha1.DeploymentTemplate{}), Clusters: manyClusters(generate.MaxMatrix/10_000 + 1)})
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), "makes more than 100000 pairs") {
				t.Fatalf("Generate = %v, want the matrix refused", err)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
				t.Errorf("Generate allocated %d MiB before it refused the matrix", grew>>20)
			}
		})
	}
	got, err := generate.Generate(generate.Inputs{
		Set:      packageSet(v1alpha1.Generator{Matrix: []v1alpha1.LeafGenerator{{Clusters: &v1alpha1.ClusterGenerator{}}, {List: list(10_000, "")}}}, v1alpha1.DeploymentTemplate{NameExpr: "target.name + '-' + values.i"}),
		Clusters: manyClusters(generate.MaxMatrix/10_000 - 1),
	})
	if err != nil || len(got.Targets) != generate.MaxMatrix {
		t.Fatalf("a matrix of %d pairs: %d targets, %v", generate.MaxMatrix, len(got.Targets), err)
	}
}

// manyClusters is edge01 and n clusters c0..cN-1.
func manyClusters(n int) []generate.Cluster {
	clusters := []generate.Cluster{{Name: "edge01", Namespace: "fleet"}}
	for i := range n {
		clusters = append(clusters, generate.Cluster{Name: "c" + strconv.Itoa(i), Namespace: "fleet"})
	}
	return clusters
}
