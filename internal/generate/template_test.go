package generate_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/generate"
)

func edgeClusters() v1alpha1.Generator {
	return v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{Clusters: selectEdge()}}
}

func TestTemplate(t *testing.T) {
	upstream := generate.Upstream{Repository: "catalog", Name: "free5gc-upf", Revision: "v6", Tag: "free5gc-upf/v6", Commit: "abc123", Number: 6}
	tests := []struct {
		name     string
		targets  v1alpha1.Generator
		template v1alpha1.DeploymentTemplate
		want     generate.Result
	}{{
		name: "all variables, namespaceExpr, labels and annotations",
		targets: v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{List: []v1alpha1.ListElement{
			{Cluster: "edge03", Values: map[string]string{"ns": "upf"}},
		}}},
		template: v1alpha1.DeploymentTemplate{
			NameExpr:       "set.labels.team + '-' + upstream.name + '-' + target.name",
			Namespace:      "ignored",
			NamespaceExpr:  "values.ns + '-' + target.context.env",
			DeletionPolicy: v1alpha1.DeletionPolicyOrphan,
			Labels: map[string]string{
				"env":              "target.context.env",
				"example.com/site": "target.labels['site-type'].upperAscii()",
			},
			Annotations: map[string]string{
				"flotilla.dev/upstream": "'%s@%s (v%d) from %s/%s'.format([upstream.tag, upstream.commit, upstream.number, set.namespace, upstream.repository])",
			},
		},
		want: generate.Result{Targets: []generate.Target{{
			Key: "edge03{ns=upf}", Cluster: "edge03", Values: map[string]string{"ns": "upf"},
			Name: "core-free5gc-upf-edge03", Namespace: "upf-staging", DeletionPolicy: v1alpha1.DeletionPolicyOrphan,
			Labels:      map[string]string{"env": "staging", "example.com/site": "EDGE"},
			Annotations: map[string]string{"flotilla.dev/upstream": "free5gc-upf/v6@abc123 (v6) from fleet/catalog"},
		}}},
	}, {
		name:     "static namespace; a long name is hashed down to 63 characters",
		targets:  edgeClusters(),
		template: v1alpha1.DeploymentTemplate{NameExpr: "'a-very-long-deployment-name-prefix-that-goes-on-and-on-for-' + target.name", Namespace: "upf"},
		want: generate.Result{Targets: []generate.Target{
			{Key: "edge02", Cluster: "edge02", Name: "a-very-long-deployment-name-prefix-that-goes-on-and-on-22e8986f", Namespace: "upf", DeletionPolicy: del},
			{Key: "edge03", Cluster: "edge03", Name: "a-very-long-deployment-name-prefix-that-goes-on-and-on-44cd3814", Namespace: "upf", DeletionPolicy: del},
			{Key: "edge01", Cluster: "edge01", Name: "a-very-long-deployment-name-prefix-that-goes-on-and-on-c3cd760b", Namespace: "upf", DeletionPolicy: del},
		}},
	}, {
		name:     "runtime CEL error is a problem of each target it fails for",
		targets:  edgeClusters(),
		template: v1alpha1.DeploymentTemplate{NameExpr: "set.name + '-' + target.nme"},
		want: generate.Result{Problems: []generate.Problem{
			{Target: "edge01", Message: `template.nameExpr "set.name + '-' + target.nme": no such key: nme (target edge01)`},
			{Target: "edge02", Message: `template.nameExpr "set.name + '-' + target.nme": no such key: nme (target edge02)`},
			{Target: "edge03", Message: `template.nameExpr "set.name + '-' + target.nme": no such key: nme (target edge03)`},
		}},
	}, {
		name:     "a label that fails for one target leaves the others fine",
		targets:  edgeClusters(),
		template: v1alpha1.DeploymentTemplate{Labels: map[string]string{"env": "target.context.env == 'staging' ? 'not valid!' : target.context.env"}},
		want: generate.Result{
			Targets: []generate.Target{
				{Key: "edge01", Cluster: "edge01", Name: "upf-edge01", DeletionPolicy: del, Labels: map[string]string{"env": "prod"}},
				{Key: "edge02", Cluster: "edge02", Name: "upf-edge02", DeletionPolicy: del, Labels: map[string]string{"env": "prod"}},
			},
			Problems: []generate.Problem{{Target: "edge03", Message: `template.labels["env"] "target.context.env == 'staging' ? 'not valid!' : target.context.env": gives "not valid!", not a valid label value: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?') (target edge03)`}},
		},
	}, {
		name:    "dependsOn: per target, each name once; a bad name or the deployment itself is a problem",
		targets: v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{List: []v1alpha1.ListElement{{Cluster: "edge01"}, {Cluster: "edge02"}, {Cluster: "edge03"}}}},
		template: v1alpha1.DeploymentTemplate{DependsOn: []v1alpha1.TemplateDependency{
			{NameExpr: "'smf-' + target.name"}, {NameExpr: "target.name == 'edge02' ? 'Bad_Name' : 'crds-' + target.name"},
			{NameExpr: "'smf-' + target.name"}, {NameExpr: "target.name == 'edge03' ? 'upf-edge03' : 'smf-' + target.name"},
		}},
		want: generate.Result{
			Targets: []generate.Target{{Key: "edge01", Cluster: "edge01", Name: "upf-edge01", DeletionPolicy: del, DependsOn: []string{"smf-edge01", "crds-edge01"}}},
			Problems: []generate.Problem{
				{Target: "edge02", Message: `template.dependsOn[1].nameExpr "target.name == 'edge02' ? 'Bad_Name' : 'crds-' + target.name": gives "Bad_Name", not a valid deployment name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*') (target edge02)`},
				{Target: "edge03", Message: `template.dependsOn[3].nameExpr "target.name == 'edge03' ? 'upf-edge03' : 'smf-' + target.name": gives "upf-edge03", the deployment itself: name a deployment of another set on the cluster (target edge03)`},
			},
		},
	}, {
		name:     "invalid name and namespace",
		targets:  v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{List: []v1alpha1.ListElement{{Cluster: "edge01"}, {Cluster: "edge02"}}}},
		template: v1alpha1.DeploymentTemplate{NameExpr: "target.name == 'edge01' ? 'Edge01' : target.name", NamespaceExpr: "target.name == 'edge02' ? 'a.b' : ''"},
		want: generate.Result{Problems: []generate.Problem{
			{Target: "edge01", Message: `template.nameExpr "target.name == 'edge01' ? 'Edge01' : target.name": gives "Edge01", not a valid name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*') (target edge01)`},
			{Target: "edge02", Message: `template.namespaceExpr "target.name == 'edge02' ? 'a.b' : ''": gives "a.b", not a valid namespace: must not contain dots (target edge02)`},
		}},
	}, {
		name: "duplicate names: a problem on each target naming the clash",
		targets: v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{List: []v1alpha1.ListElement{
			{Cluster: "edge01", Values: map[string]string{"slice": "a"}},
			{Cluster: "edge01", Values: map[string]string{"slice": "b"}},
			{Cluster: "edge01", Values: map[string]string{"slice": "a"}}, // the same target again: not a clash
			{Cluster: "edge02"},
		}}},
		want: generate.Result{
			Targets: []generate.Target{target("edge02", "edge02", "upf-edge02", nil)},
			Problems: []generate.Problem{
				{Target: "edge01{slice=a}", Message: `deployment name "upf-edge01" is also generated for target edge01{slice=b}: make template.nameExpr unique per target (include target.name or values)`},
				{Target: "edge01{slice=b}", Message: `deployment name "upf-edge01" is also generated for target edge01{slice=a}: make template.nameExpr unique per target (include target.name or values)`},
			},
		},
	}, {
		name:     "duplicate names across many targets keep messages short",
		targets:  v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{Clusters: &v1alpha1.ClusterGenerator{}}},
		template: v1alpha1.DeploymentTemplate{NameExpr: "set.name"},
		want: generate.Result{Problems: []generate.Problem{
			{Target: "core01", Message: `deployment name "upf" is also generated for targets core02, edge01, edge02 and 1 more: make template.nameExpr unique per target (include target.name or values)`},
			{Target: "core02", Message: `deployment name "upf" is also generated for targets core01, edge01, edge02 and 1 more: make template.nameExpr unique per target (include target.name or values)`},
			{Target: "edge01", Message: `deployment name "upf" is also generated for targets core01, core02, edge02 and 1 more: make template.nameExpr unique per target (include target.name or values)`},
			{Target: "edge02", Message: `deployment name "upf" is also generated for targets core01, core02, edge01 and 1 more: make template.nameExpr unique per target (include target.name or values)`},
			{Target: "edge03", Message: `deployment name "upf" is also generated for targets core01, core02, edge01 and 1 more: make template.nameExpr unique per target (include target.name or values)`},
		}},
	}, {
		name:     "an expression that costs too much fails instead of hanging",
		targets:  v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{List: []v1alpha1.ListElement{{Cluster: "edge01"}}}},
		template: v1alpha1.DeploymentTemplate{NameExpr: "lists.range(2000).map(i, lists.range(2000).map(j, i * j)).size() > 0 ? 'a' : 'b'"},
		want: generate.Result{Problems: []generate.Problem{
			{Target: "edge01", Message: `template.nameExpr "lists.range(2000).map(i, lists.range(2000).map(j, i * j)).size() > 0 ? 'a' : 'b'": operation cancelled: actual cost limit exceeded (target edge01)`},
		}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := generate.Generate(generate.Inputs{Set: packageSet(tt.targets, tt.template), Clusters: fleet(), Upstream: upstream})
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Generate (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSetErrors covers failures of the whole generator: Generate and Check return the same error
// and Generate no result, so the controller changes nothing.
func TestSetErrors(t *testing.T) {
	objects := func(o v1alpha1.ObjectGenerator) v1alpha1.Generator {
		o.APIVersion, o.Kind = "infra.nephio.org/v1alpha1", "WorkloadCluster"
		return v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{Objects: &o}}
	}
	tests := []struct {
		name     string
		targets  v1alpha1.Generator
		template v1alpha1.DeploymentTemplate
		want     string
	}{
		{"nameExpr does not compile", edgeClusters(), v1alpha1.DeploymentTemplate{NameExpr: "set.name + "},
			`template.nameExpr "set.name + ": Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER} (at 1:12)`},
		{"undeclared variable", edgeClusters(), v1alpha1.DeploymentTemplate{NameExpr: "cluster.name"},
			`template.nameExpr "cluster.name": undeclared reference to 'cluster' (in container '') (at 1:1)`},
		{"label expression of the wrong type", edgeClusters(), v1alpha1.DeploymentTemplate{Labels: map[string]string{"replicas": "size(values)"}},
			`template.labels["replicas"] "size(values)": gives int, want string`},
		{"invalid label key", edgeClusters(), v1alpha1.DeploymentTemplate{Labels: map[string]string{"not a key": "'x'"}},
			`template.labels["not a key"]: "not a key" is not a valid key: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
		{"annotation does not compile", edgeClusters(), v1alpha1.DeploymentTemplate{Annotations: map[string]string{"a": "'x"}},
			`template.annotations["a"] "'x": Syntax error: token recognition error at: ''x' (at 1:1)`},
		{"invalid namespace", edgeClusters(), v1alpha1.DeploymentTemplate{Namespace: "Upf"},
			`template.namespace "Upf" is not a valid namespace: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
		{"invalid deletion policy", edgeClusters(), v1alpha1.DeploymentTemplate{DeletionPolicy: "Keep"},
			`template.deletionPolicy "Keep": want Delete or Orphan`},
		{"clusterExpr of the wrong type", objects(v1alpha1.ObjectGenerator{ClusterExpr: "object.metadata.name.size()"}), v1alpha1.DeploymentTemplate{},
			`targets.objects.clusterExpr "object.metadata.name.size()": gives int, want string`},
		{"clusterExpr uses target", objects(v1alpha1.ObjectGenerator{ClusterExpr: "target.name"}), v1alpha1.DeploymentTemplate{},
			`targets.objects.clusterExpr "target.name": undeclared reference to 'target' (in container '') (at 1:1)`},
		{"valuesExpr in a matrix does not give a map", v1alpha1.Generator{Matrix: []v1alpha1.LeafGenerator{
			{Clusters: selectEdge()},
			{Objects: objects(v1alpha1.ObjectGenerator{ValuesExpr: "object.metadata.name + 'x'"}).Objects},
		}}, v1alpha1.DeploymentTemplate{},
			`targets.matrix[1].objects.valuesExpr "object.metadata.name + 'x'": gives string, want map(string, string)`},
		{"invalid selector", v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{Clusters: &v1alpha1.ClusterGenerator{Selector: v1alpha1.LabelSelector{
			MatchExpressions: []v1alpha1.LabelSelectorRequirement{{Key: "site-type", Operator: "Near"}},
		}}}}, v1alpha1.DeploymentTemplate{},
			`targets.clusters.selector: "Near" is not a valid label selector operator`},
		{"no generator", v1alpha1.Generator{}, v1alpha1.DeploymentTemplate{},
			`targets: set exactly one of clusters, list, objects or matrix`},
		{"matrix element with two generators", v1alpha1.Generator{Matrix: []v1alpha1.LeafGenerator{
			{Clusters: selectEdge()},
			{Clusters: selectEdge(), List: []v1alpha1.ListElement{}},
		}}, v1alpha1.DeploymentTemplate{},
			`targets.matrix[1]: set exactly one of clusters, list or objects`},
		{"matrix of one", v1alpha1.Generator{Matrix: []v1alpha1.LeafGenerator{{Clusters: selectEdge()}}}, v1alpha1.DeploymentTemplate{},
			`targets.matrix has 1 generators, want 2`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := packageSet(tt.targets, tt.template)
			got, err := generate.Generate(generate.Inputs{Set: set, Clusters: fleet()})
			if err == nil {
				t.Fatalf("Generate: no error, want %q; result %+v", tt.want, got)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("Generate error (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(generate.Result{}, got); diff != "" {
				t.Errorf("Generate result with an error (-want +got):\n%s", diff)
			}
			checkErr := generate.Check(set)
			if checkErr == nil || checkErr.Error() != err.Error() {
				t.Errorf("Check = %v, want %q", checkErr, err)
			}
		})
	}
}

func TestCheckValid(t *testing.T) {
	set := packageSet(edgeClusters(), v1alpha1.DeploymentTemplate{
		NameExpr:      "target.name + '-' + values.?slice.orValue('x')",
		NamespaceExpr: "target.context.env",
		Labels:        map[string]string{"cidr": "cidr('10.0.0.0/8').containsIP(ip('10.1.2.3')) ? 'in' : 'out'"},
		Annotations:   map[string]string{"q": "string(quantity('1Gi').asInteger())", "u": "url('https://x.example/a').getHost()"},
	})
	if err := generate.Check(set); err != nil {
		t.Errorf("Check: %v", err)
	}
}
