package generate_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/generate"
)

// TestDeterministic shuffles the inputs: the result is the same, problems and clashes included.
func TestDeterministic(t *testing.T) {
	set := packageSet(v1alpha1.Generator{Matrix: []v1alpha1.LeafGenerator{
		{Objects: &v1alpha1.ObjectGenerator{
			APIVersion: "infra.nephio.org/v1alpha1", Kind: "WorkloadCluster",
			ClusterExpr: "object.spec.clusterName",
			ValuesExpr:  "{'nic': object.spec.masterInterface}",
		}},
		{List: []v1alpha1.ListElement{
			{Values: map[string]string{"slice": "a", "zone": "1"}},
			{Values: map[string]string{"slice": "b", "zone": "1"}},
			{Values: map[string]string{"slice": "c"}},
		}},
	}}, v1alpha1.DeploymentTemplate{
		NameExpr: "target.name + '-' + values.?zone.orValue('0')", // slices a and b clash
		Labels:   map[string]string{"slice": "values.slice", "env": "target.context.env"},
	})
	var objects []*unstructured.Unstructured
	for i := range 20 {
		objects = append(objects, nephioCluster(fmt.Sprintf("n%02d", i), fmt.Sprintf("c%02d", i%12), "edge"))
	}
	objects = append(objects, nephioCluster("broken", "", "edge"))
	var clusters []generate.Cluster
	for i := range 10 { // c10 and c11 do not exist
		clusters = append(clusters, generate.Cluster{
			Name: fmt.Sprintf("c%02d", i), Namespace: "fleet",
			Labels: map[string]string{"i": fmt.Sprint(i)}, Context: map[string]string{"env": "prod"},
		})
	}

	want, err := generate.Generate(generate.Inputs{Set: set, Clusters: clusters, Objects: objects})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if len(want.Targets) != 10 || len(want.Problems) != 2*10+2*3+1 {
		t.Fatalf("Generate: %d targets and %d problems, want 10 and 27:\n%+v", len(want.Targets), len(want.Problems), want.Problems)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		c, o := slices.Clone(clusters), slices.Clone(objects)
		rng.Shuffle(len(c), func(i, j int) { c[i], c[j] = c[j], c[i] })
		rng.Shuffle(len(o), func(i, j int) { o[i], o[j] = o[j], o[i] })
		got, err := generate.Generate(generate.Inputs{Set: set, Clusters: c, Objects: o})
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("Generate on shuffled inputs (-first +shuffled):\n%s", diff)
		}
	}
}

// BenchmarkGenerate10k: 10,000 clusters, a clusters generator, nameExpr and two labels.
func BenchmarkGenerate10k(b *testing.B) {
	clusters := make([]generate.Cluster, 10000)
	for i := range clusters {
		clusters[i] = generate.Cluster{
			Name: fmt.Sprintf("edge%05d", i), Namespace: "fleet",
			Labels:  map[string]string{"site-type": "edge", "region": fmt.Sprintf("r%d", i%10)},
			Context: map[string]string{"env": "prod"},
		}
	}
	set := packageSet(v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{Clusters: &v1alpha1.ClusterGenerator{
		Selector: v1alpha1.LabelSelector{MatchLabels: map[string]string{"site-type": "edge"}},
	}}}, v1alpha1.DeploymentTemplate{
		NameExpr: "set.name + '-' + target.name",
		Labels:   map[string]string{"region": "target.labels.region", "env": "target.context.env"},
	})
	in := generate.Inputs{Set: set, Clusters: clusters}
	b.ReportAllocs()
	for b.Loop() {
		res, err := generate.Generate(in)
		if err != nil || len(res.Targets) != len(clusters) {
			b.Fatalf("Generate: %d targets, %v", len(res.Targets), err)
		}
	}
}
