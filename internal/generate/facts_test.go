package generate_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/generate"
)

// target.facts in templates: a cluster whose facts were read, and one whose facts were not (every
// fact at its zero value, so the same expression works for both).
func TestTargetFacts(t *testing.T) {
	clusters := fleet()[:2]
	clusters[0].Facts = &v1alpha1.ClusterFacts{KubernetesVersion: "v1.33.1", Nodes: 5, CPU: resource.MustParse("20"),
		Regions: []string{"eu-west"}, Site: map[string]string{"site": "madrid"}}
	set := packageSet(edgeClusters(), v1alpha1.DeploymentTemplate{Labels: map[string]string{
		"size":    "target.facts.nodes > 3 ? 'large' : 'small'",
		"site":    "'site' in target.facts.site ? target.facts.site['site'] : 'unknown'",
		"region":  "target.facts.regions.size() > 0 ? target.facts.regions[0] : 'none'",
		"version": "target.facts.kubernetesVersion == '' ? 'unread' : target.facts.kubernetesVersion.replace('.', '-')",
		"cpu":     "target.facts.cpu",
	}})
	got, err := generate.Generate(generate.Inputs{Set: set, Clusters: clusters})
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]map[string]string{}
	for _, tg := range got.Targets {
		labels[tg.Cluster] = tg.Labels
	}
	want := map[string]map[string]string{
		"edge01": {"size": "large", "site": "madrid", "region": "eu-west", "version": "v1-33-1", "cpu": "20"},
		"edge02": {"size": "small", "site": "unknown", "region": "none", "version": "unread", "cpu": "0"},
	}
	if diff := cmp.Diff(want, labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s; problems %v", diff, got.Problems)
	}
}
