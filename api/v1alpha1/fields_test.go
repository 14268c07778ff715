package v1alpha1_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/crdvalidate"
)

func variant(mutate func(*v1alpha1.PackageVariant)) client.Object {
	v := &v1alpha1.PackageVariant{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "pvar-", Namespace: ns},
		Spec: v1alpha1.PackageVariantSpec{
			Upstream:   v1alpha1.VariantUpstream{Repository: &v1alpha1.LocalObjectReference{Name: "catalog"}, Name: "upf"},
			Downstream: v1alpha1.VariantDownstream{Repository: v1alpha1.LocalObjectReference{Name: "blueprints"}, Package: "upf-edge"},
		},
	}
	mutate(v)
	return v
}

// raw is obj as a file would hold it with one field set to a value its Go type cannot carry (a
// duration that does not parse, say): what kubectl apply can send. It panics on a mistake in the
// table.
func raw(obj client.Object, value any, path ...string) client.Object {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		panic(err)
	}
	u := &unstructured.Unstructured{Object: content}
	gvk, err := env.Client.GroupVersionKindFor(obj)
	if err != nil {
		panic(err)
	}
	u.SetGroupVersionKind(gvk)
	if err := unstructured.SetNestedField(u.Object, value, path...); err != nil {
		panic(err)
	}
	return u
}

func rolling(steps ...v1alpha1.RolloutStep) func(*v1alpha1.PackageSet) {
	return func(s *v1alpha1.PackageSet) {
		s.Spec.Strategy = v1alpha1.RolloutStrategy{Type: v1alpha1.StrategyRollingUpdate, RollingUpdate: &v1alpha1.RollingUpdate{Steps: steps}}
	}
}

func unavailable(v intstr.IntOrString) v1alpha1.RolloutStep {
	return v1alpha1.RolloutStep{MaxUnavailable: &v}
}

func selector(sel v1alpha1.LabelSelector) func(*v1alpha1.PackageSet) {
	return func(s *v1alpha1.PackageSet) { s.Spec.Targets.Clusters.Selector = sel }
}

func withVariant(mutate func(*v1alpha1.VariantSpec)) func(*v1alpha1.PackageSet) {
	return func(s *v1alpha1.PackageSet) {
		s.Spec.Variant = &v1alpha1.VariantSpec{}
		mutate(s.Spec.Variant)
	}
}

// fieldCases are one bad value (at least) for each field the controller parses that the first
// table did not cover: each refused at admission, with the field named.
func fieldCases() []validationCase {
	return []validationCase{
		// PackageSet rollouts.
		{"set negative health timeout", packageSet(func(s *v1alpha1.PackageSet) {
			rolling(v1alpha1.RolloutStep{})(s)
			s.Spec.Strategy.RollingUpdate.HealthTimeout = &metav1.Duration{Duration: -1e9}
		}), "rollingUpdate.healthTimeout must be a positive duration", "spec.strategy.rollingUpdate.healthTimeout"},
		{"set health timeout that does not parse", raw(packageSet(rolling(v1alpha1.RolloutStep{})), "ten minutes", "spec", "strategy", "rollingUpdate", "healthTimeout"),
			"rollingUpdate.healthTimeout must be a positive duration", "spec.strategy.rollingUpdate.healthTimeout"},
		{"set maxUnavailable 0", packageSet(rolling(unavailable(intstr.FromInt32(0)))), "maxUnavailable must be a count of at least 1 or a percentage", "spec.strategy.rollingUpdate.steps[0].maxUnavailable"},
		{"set negative maxUnavailable", packageSet(rolling(unavailable(intstr.FromInt32(-2)))), "maxUnavailable must be a count of at least 1", "spec.strategy.rollingUpdate.steps[0].maxUnavailable"},
		{"set maxUnavailable a number in a string", packageSet(rolling(unavailable(intstr.FromString("50")))), "or a percentage from 1% to 100%", "spec.strategy.rollingUpdate.steps[0].maxUnavailable"},
		{"set maxUnavailable over 100%", packageSet(rolling(v1alpha1.RolloutStep{}, unavailable(intstr.FromString("150%")))), "or a percentage from 1% to 100%", "spec.strategy.rollingUpdate.steps[1].maxUnavailable"},
		{"set maxUnavailable 0%", packageSet(rolling(unavailable(intstr.FromString("0%")))), "or a percentage from 1% to 100%", "spec.strategy.rollingUpdate.steps[0].maxUnavailable"},
		{"set step selector unknown operator", packageSet(rolling(v1alpha1.RolloutStep{Selector: &v1alpha1.LabelSelector{
			MatchExpressions: []v1alpha1.LabelSelectorRequirement{{Key: "region", Operator: "Matches", Values: []string{"eu"}}}}})),
			`supported values: "In", "NotIn", "Exists", "DoesNotExist"`, "spec.strategy.rollingUpdate.steps[0].selector.matchExpressions[0].operator"},
		{"set step selector bad value", packageSet(rolling(v1alpha1.RolloutStep{Selector: &v1alpha1.LabelSelector{
			MatchExpressions: []v1alpha1.LabelSelectorRequirement{{Key: "wave", Operator: "In", Values: []string{"first wave"}}}}})),
			"should match", "spec.strategy.rollingUpdate.steps[0].selector.matchExpressions[0].values[0]"},
		{"set promotion healthyFor negative", packageSet(func(s *v1alpha1.PackageSet) {
			s.Spec.Package.RevisionFrom = &v1alpha1.RevisionFrom{PackageSet: "staging", HealthyFor: &metav1.Duration{Duration: -1e9}}
		}), "revisionFrom.healthyFor must be a duration", "spec.package.revisionFrom.healthyFor"},

		// PackageSet generators and template.
		{"set cluster selector In without values", packageSet(selector(v1alpha1.LabelSelector{
			MatchExpressions: []v1alpha1.LabelSelectorRequirement{{Key: "region", Operator: metav1.LabelSelectorOpIn}}})),
			"matchExpressions: operators In and NotIn need values, Exists and DoesNotExist take none", "spec.targets.clusters.selector.matchExpressions[0]"},
		{"set cluster selector Exists with values", packageSet(selector(v1alpha1.LabelSelector{
			MatchExpressions: []v1alpha1.LabelSelectorRequirement{{Key: "region", Operator: metav1.LabelSelectorOpExists, Values: []string{"eu"}}}})),
			"operators In and NotIn need values", "spec.targets.clusters.selector.matchExpressions[0]"},
		{"set cluster selector bad key", packageSet(selector(v1alpha1.LabelSelector{
			MatchExpressions: []v1alpha1.LabelSelectorRequirement{{Key: "site type", Operator: metav1.LabelSelectorOpExists}}})),
			"matchExpressions: key must be a label key", "spec.targets.clusters.selector.matchExpressions[0].key"},
		{"set objects selector bad key", packageSet(func(s *v1alpha1.PackageSet) {
			s.Spec.Targets = v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{Objects: &v1alpha1.ObjectGenerator{APIVersion: "v1", Kind: "ConfigMap",
				Selector: v1alpha1.LabelSelector{MatchExpressions: []v1alpha1.LabelSelectorRequirement{{Key: "-bad-", Operator: metav1.LabelSelectorOpExists}}}}}}
		}), "matchExpressions: key must be a label key", "spec.targets.objects.selector.matchExpressions[0].key"},
		{"set matrix selector bad value", packageSet(func(s *v1alpha1.PackageSet) {
			s.Spec.Targets = v1alpha1.Generator{Matrix: []v1alpha1.LeafGenerator{
				{Clusters: &v1alpha1.ClusterGenerator{Selector: v1alpha1.LabelSelector{MatchExpressions: []v1alpha1.LabelSelectorRequirement{
					{Key: "env", Operator: metav1.LabelSelectorOpNotIn, Values: []string{strings.Repeat("x", 64)}}}}}},
				{List: []v1alpha1.ListElement{{Cluster: "edge01"}}},
			}}
		}), "spec.targets.matrix[0].clusters.selector.matchExpressions[0].values[0]", "spec.targets.matrix[0].clusters.selector"},
		{"set template label key", packageSet(func(s *v1alpha1.PackageSet) { s.Spec.Template.Labels = map[string]string{"team name": "'core'"} }),
			"template.labels keys must be label keys", "spec.template.labels"},
		{"set template annotation key", packageSet(func(s *v1alpha1.PackageSet) { s.Spec.Template.Annotations = map[string]string{"a/b/c": "'x'"} }),
			"template.annotations keys must be annotation keys", "spec.template.annotations"},
		{"set template dependsOn without nameExpr", packageSet(func(s *v1alpha1.PackageSet) { s.Spec.Template.DependsOn = []v1alpha1.TemplateDependency{{}} }),
			"should be at least 1 chars long", "spec.template.dependsOn[0].nameExpr"},
		{"set template bad namespace", packageSet(func(s *v1alpha1.PackageSet) { s.Spec.Template.Namespace = "Core_NS" }), "template.namespace must be a namespace name", "spec.template.namespace"},

		// PackageSet variants.
		{"set values layer bad ConfigMap name", packageSet(withVariant(func(v *v1alpha1.VariantSpec) {
			v.Values.Hierarchy = []v1alpha1.ValuesLayer{{ConfigMap: "UPF_defaults"}}
		})), "values.hierarchy[].configMap must be a ConfigMap name", "spec.variant.values.hierarchy[0].configMap"},
		{"set injector apiVersion without version", packageSet(withVariant(func(v *v1alpha1.VariantSpec) {
			v.Injectors = []v1alpha1.Injector{{APIVersion: "infra.nephio.org", Kind: "WorkloadCluster", NameExpr: "target.name"}}
		})), "injectors[].apiVersion must be GROUP/VERSION or VERSION", "spec.variant.injectors[0].apiVersion"},
		{"set function image with a space", packageSet(withVariant(func(v *v1alpha1.VariantSpec) {
			v.Pipeline = &v1alpha1.VariantPipeline{Mutators: []v1alpha1.KptFunction{{Image: "gcr.io/kpt-fn/set namespace:v0.4.1"}}}
		})), "mutators[].image must be an image reference", "spec.variant.pipeline.mutators[0].image"},
		{"set function exec with arguments", packageSet(withVariant(func(v *v1alpha1.VariantSpec) {
			v.Pipeline = &v1alpha1.VariantPipeline{Mutators: []v1alpha1.KptFunction{{Exec: "set-namespace --namespace x"}}}
		})), "mutators[].exec must be an executable's name or absolute path", "spec.variant.pipeline.mutators[0].exec"},
		{"set function with image and exec", packageSet(withVariant(func(v *v1alpha1.VariantSpec) {
			v.Pipeline = &v1alpha1.VariantPipeline{Mutators: []v1alpha1.KptFunction{{Image: "gcr.io/kpt-fn/x:v1", Exec: "x"}}}
		})), "set exactly one of image or exec", "spec.variant.pipeline.mutators[0]"},

		// WorkloadCluster.
		{"cluster kubeconfig key with a slash", cluster(func(c *v1alpha1.WorkloadCluster) {
			c.Spec.KubeConfigSecretRef = &v1alpha1.SecretKeyReference{Name: "kc", Key: "a/b"}
		}), "should match", "spec.kubeConfigSecretRef.key"},
		{"cluster argo namespace", cluster(func(c *v1alpha1.WorkloadCluster) {
			c.Spec.Sync.Engine, c.Spec.Sync.ArgoCD = v1alpha1.EngineArgoCD, &v1alpha1.ArgoCDSync{Namespace: "Argo_CD"}
		}), "argoCD.namespace must be a namespace name", "spec.sync.argoCD.namespace"},
		{"cluster argo project", cluster(func(c *v1alpha1.WorkloadCluster) {
			c.Spec.Sync.Engine, c.Spec.Sync.ArgoCD = v1alpha1.EngineArgoCD, &v1alpha1.ArgoCDSync{Project: "My Project"}
		}), "argoCD.project must be an AppProject name", "spec.sync.argoCD.project"},
		{"cluster argo server not a URL", cluster(func(c *v1alpha1.WorkloadCluster) {
			c.Spec.Sync.Engine, c.Spec.Sync.ArgoCD = v1alpha1.EngineArgoCD, &v1alpha1.ArgoCDSync{Destination: v1alpha1.ArgoCDDestination{Server: "kubernetes.default.svc"}}
		}), "argoCD.destination.server must be an API server URL", "spec.sync.argoCD.destination.server"},
		{"cluster argo destination name with a space", cluster(func(c *v1alpha1.WorkloadCluster) {
			c.Spec.Sync.Engine, c.Spec.Sync.ArgoCD = v1alpha1.EngineArgoCD, &v1alpha1.ArgoCDSync{Destination: v1alpha1.ArgoCDDestination{Name: "edge 01"}}
		}), "argoCD.destination.name must be an Argo CD cluster name", "spec.sync.argoCD.destination.name"},
		{"cluster flux namespace", cluster(func(c *v1alpha1.WorkloadCluster) {
			c.Spec.Sync.Engine, c.Spec.Sync.Flux = v1alpha1.EngineFlux, &v1alpha1.FluxSync{Namespace: "Flux_System"}
		}), "flux.namespace must be a namespace name", "spec.sync.flux.namespace"},
		{"cluster flux interval zero", cluster(func(c *v1alpha1.WorkloadCluster) {
			c.Spec.Sync.Engine, c.Spec.Sync.Flux = v1alpha1.EngineFlux, &v1alpha1.FluxSync{Interval: &metav1.Duration{}}
		}), "flux.interval must be a duration of at least 1s", "spec.sync.flux.interval"},
		{"cluster flux interval that does not parse", raw(cluster(func(c *v1alpha1.WorkloadCluster) {
			c.Spec.Sync.Engine, c.Spec.Sync.Flux = v1alpha1.EngineFlux, &v1alpha1.FluxSync{}
		}), "every minute", "spec", "sync", "flux", "interval"), "flux.interval must be a duration", "spec.sync.flux.interval"},
		{"cluster drain timeout that does not parse", raw(cluster(func(*v1alpha1.WorkloadCluster) {}), "later", "spec", "sync", "drainTimeout"),
			"spec.sync.drainTimeout must be a positive duration", "spec.sync.drainTimeout"},
		{"cluster gcp service account not an email", cluster(func(c *v1alpha1.WorkloadCluster) {
			c.Spec.Sync.Git.Auth, c.Spec.Sync.Git.GCPServiceAccountEmail = "gcpserviceaccount", "sync-account"
		}), "gcpServiceAccountEmail must be an email address", "spec.sync.git.gcpServiceAccountEmail"},

		// Repository.
		{"repository interval that does not parse", raw(repo(func(*v1alpha1.Repository) {}), "hourly", "spec", "interval"), "interval must be at least 5s", "spec.interval"},

		// PackageVariant.
		{"variant without upstream", variant(func(v *v1alpha1.PackageVariant) { v.Spec.Upstream = v1alpha1.VariantUpstream{} }),
			"spec.upstream: set either variant", "spec.upstream"},
		{"variant upstream variant with repository", variant(func(v *v1alpha1.PackageVariant) { v.Spec.Upstream.Variant, v.Spec.Upstream.Name = "base", "" }),
			"spec.upstream.variant takes the other variant's latest published revision", "spec.upstream"},
		{"variant upstream name without repository", variant(func(v *v1alpha1.PackageVariant) { v.Spec.Upstream.Repository = nil }),
			"spec.upstream.repository is required with name", "spec.upstream"},
		{"variant upstream escapes", variant(func(v *v1alpha1.PackageVariant) { v.Spec.Upstream.Name = "../x" }),
			"spec.upstream.name must be a relative package path", "spec.upstream.name"},
		{"variant upstream revision a branch", variant(func(v *v1alpha1.PackageVariant) { v.Spec.Upstream.Revision = "main" }),
			"spec.upstream.revision must be vN", "spec.upstream.revision"},
		{"variant downstream escapes", variant(func(v *v1alpha1.PackageVariant) { v.Spec.Downstream.Package = "a/../../b" }),
			"spec.downstream.package must be a relative package path", "spec.downstream.package"},
		{"variant downstream without repository", variant(func(v *v1alpha1.PackageVariant) { v.Spec.Downstream.Repository.Name = "" }),
			"", "spec.downstream.repository.name"},
		{"variant values layer with an expression", variant(func(v *v1alpha1.PackageVariant) {
			v.Spec.Values.Hierarchy = []v1alpha1.ValuesLayer{{ConfigMapExpr: "'upf-' + target.name"}}
		}), "a PackageVariant has no target cluster", "spec"},
		{"variant values layer bad ConfigMap name", variant(func(v *v1alpha1.PackageVariant) {
			v.Spec.Values.Hierarchy = []v1alpha1.ValuesLayer{{ConfigMap: "Bad Name"}}
		}), "values.hierarchy[].configMap must be a ConfigMap name", "spec.values.hierarchy[0].configMap"},
		{"variant unknown approval", variant(func(v *v1alpha1.PackageVariant) { v.Spec.Approval = "Later" }), `supported values: "Automatic", "Manual"`, "spec.approval"},
		{"variant function image and exec", variant(func(v *v1alpha1.PackageVariant) {
			v.Spec.Pipeline = &v1alpha1.VariantPipeline{Mutators: []v1alpha1.KptFunction{{}}}
		}), "set exactly one of image or exec", "spec.pipeline.mutators[0]"},
	}
}

// The minimal and the full form of each kind are accepted, by the API server and offline.
func TestValidObjectsAreAccepted(t *testing.T) {
	ctx := context.Background()
	_ = env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	ten, five := metav1.Duration{Duration: 600e9}, metav1.Duration{Duration: 5e9}
	quarter, one := intstr.FromString("25%"), intstr.FromInt32(1)
	region := &v1alpha1.LabelSelector{
		MatchLabels:      map[string]string{"example.com/tier": "edge"},
		MatchExpressions: []v1alpha1.LabelSelectorRequirement{{Key: "region", Operator: metav1.LabelSelectorOpIn, Values: []string{"eu", "us"}}, {Key: "canary", Operator: metav1.LabelSelectorOpDoesNotExist}},
	}
	objs := map[string]client.Object{
		"minimal repository": repo(func(*v1alpha1.Repository) {}),
		"full git repository": repo(func(r *v1alpha1.Repository) {
			r.Spec.Git = &v1alpha1.GitRepository{URL: "ssh://git@git.example:2222/fleet/catalog.git", SyncURL: "https://git.example/fleet/catalog.git",
				Branch: "release/v1", Directory: "packages/core", SecretRef: &v1alpha1.LocalObjectReference{Name: "git-creds"}}
			r.Spec.Interval = &ten
		}),
		"full oci repository": repo(func(r *v1alpha1.Repository) {
			r.Spec.Git, r.Spec.OCI = nil, &v1alpha1.OCIRepository{URL: "oci://registry.example:5000/fleet/catalog", SecretRef: &v1alpha1.LocalObjectReference{Name: "registry"}, Insecure: true}
		}),
		"minimal cluster": cluster(func(*v1alpha1.WorkloadCluster) {}),
		"full config sync cluster": cluster(func(c *v1alpha1.WorkloadCluster) {
			c.Labels = map[string]string{"region": "eu"}
			c.Spec.Context = map[string]string{"env": "prod", "free form": "any value at all"}
			c.Spec.KubeConfigSecretRef = &v1alpha1.SecretKeyReference{Name: "edge01-kubeconfig", Key: "kubeconfig.yaml"}
			c.Spec.Approval = v1alpha1.ApprovalManual
			c.Spec.Sync.Package = "clusters/edge01/deployed-packages"
			c.Spec.Sync.Deletion, c.Spec.Sync.DrainTimeout = v1alpha1.DeletionEmptyFirst, &five
			c.Spec.Sync.Git.Auth, c.Spec.Sync.Git.GCPServiceAccountEmail = "gcpserviceaccount", "sync@fleet.iam.gserviceaccount.com"
		}),
		"full argo cd cluster": cluster(func(c *v1alpha1.WorkloadCluster) {
			c.Spec.Sync.Engine = v1alpha1.EngineArgoCD
			c.Spec.Sync.ArgoCD = &v1alpha1.ArgoCDSync{Namespace: "argocd", Project: "edge.sites", Destination: v1alpha1.ArgoCDDestination{Server: "https://10.0.0.1:6443"}}
		}),
		"full flux cluster": cluster(func(c *v1alpha1.WorkloadCluster) {
			c.Spec.Sync.Engine = v1alpha1.EngineFlux
			c.Spec.Sync.Flux = &v1alpha1.FluxSync{Namespace: "flux-system", Interval: &metav1.Duration{Duration: 30e9}}
		}),
		"minimal deployment": deployment(func(pd *v1alpha1.PackageDeployment) { pd.Name = "minimal" }),
		"full deployment": deployment(func(pd *v1alpha1.PackageDeployment) {
			pd.Name = "full"
			pd.Spec.Package = v1alpha1.PackageReference{Repository: &v1alpha1.LocalObjectReference{Name: "catalog"}, Name: "core/free5gc-upf", Revision: "latest"}
			pd.Spec.Namespace, pd.Spec.DeletionPolicy, pd.Spec.Suspend = "free5gc", v1alpha1.DeletionPolicyOrphan, true
			pd.Spec.DependsOn = []v1alpha1.LocalObjectReference{{Name: "crds"}, {Name: "smf"}}
		}),
		"minimal set": packageSet(func(*v1alpha1.PackageSet) {}),
		"full set": packageSet(func(s *v1alpha1.PackageSet) {
			s.Spec.Package.RevisionFrom = &v1alpha1.RevisionFrom{PackageSet: "staging-upf", HealthyFor: &metav1.Duration{Duration: 1800e9}}
			s.Spec.Targets = v1alpha1.Generator{Matrix: []v1alpha1.LeafGenerator{
				{Clusters: &v1alpha1.ClusterGenerator{Selector: *region}},
				{List: []v1alpha1.ListElement{{Cluster: "edge01", Values: map[string]string{"slice": "a", "any key": "any value"}}}},
			}}
			s.Spec.Template = v1alpha1.DeploymentTemplate{NameExpr: "'upf-' + target.name", NamespaceExpr: "'upf-' + values.slice",
				DeletionPolicy: v1alpha1.DeletionPolicyOrphan, Labels: map[string]string{"example.com/site": "target.name"},
				Annotations: map[string]string{"Example.com/Owner": "'core'"}, DependsOn: []v1alpha1.TemplateDependency{{NameExpr: "'smf-' + target.name"}}}
			s.Spec.DependsOn = []v1alpha1.SetDependency{{Name: "smf", Scope: v1alpha1.DependencyFleet}}
			s.Spec.Strategy = v1alpha1.RolloutStrategy{Type: v1alpha1.StrategyRollingUpdate, RollingUpdate: &v1alpha1.RollingUpdate{
				Steps:         []v1alpha1.RolloutStep{{Selector: region, MaxUnavailable: &one, Pause: true}, {MaxUnavailable: &quarter}},
				HealthTimeout: &ten, OnFailure: v1alpha1.OnFailureRollback, RollbackScope: v1alpha1.RollbackAll,
			}}
			s.Spec.Variant = &v1alpha1.VariantSpec{Package: "upf",
				Values: v1alpha1.VariantValues{Hierarchy: []v1alpha1.ValuesLayer{{ConfigMap: "upf-defaults", Required: true}, {ConfigMapExpr: "'upf-' + target.name"}, {Facts: true}},
					Inline: map[string]string{"replicas": "3"}},
				Injectors: []v1alpha1.Injector{{APIVersion: "infra.nephio.org/v1alpha1", Kind: "WorkloadCluster", NameExpr: "target.name"}, {Kind: "ConfigMap", NameExpr: "'x'"}},
				Pipeline: &v1alpha1.VariantPipeline{Mutators: []v1alpha1.KptFunction{
					{Image: "gcr.io/kpt-fn/set-namespace:v0.4.1", ConfigMap: map[string]string{"namespace": "upf"}, Name: "set namespace"},
					{Image: "registry.example:5000/fns/apply-setters@sha256:" + strings.Repeat("a", 64)},
					{Exec: "/usr/local/bin/set-labels"},
				}}}
		}),
		"partitioned set": packageSet(func(s *v1alpha1.PackageSet) {
			s.Spec.Strategy = v1alpha1.RolloutStrategy{Type: v1alpha1.StrategyRollingUpdate, RollingUpdate: &v1alpha1.RollingUpdate{
				PartitionBy: "topology.kubernetes.io/region", Steps: []v1alpha1.RolloutStep{{MaxUnavailable: &quarter}}}}
		}),
		"minimal variant": variant(func(*v1alpha1.PackageVariant) {}),
		"full variant": variant(func(v *v1alpha1.PackageVariant) {
			v.Spec.Upstream.Revision = "v3"
			v.Spec.Values = v1alpha1.VariantValues{Hierarchy: []v1alpha1.ValuesLayer{{ConfigMap: "upf-eu", Required: true}}, Inline: map[string]string{"region": "eu"}}
			v.Spec.Pipeline = &v1alpha1.VariantPipeline{Mutators: []v1alpha1.KptFunction{{Image: "gcr.io/kpt-fn/set-labels:v0.2.0"}}}
			v.Spec.Approval, v.Spec.Suspend = v1alpha1.ApprovalManual, true
		}),
		"chained variant": variant(func(v *v1alpha1.PackageVariant) {
			v.Spec.Upstream = v1alpha1.VariantUpstream{Variant: "upf-eu"}
		}),
	}
	validator, err := crdvalidate.New()
	if err != nil {
		t.Fatal(err)
	}
	for name, obj := range objs {
		t.Run(name, func(t *testing.T) {
			if errs := validator.Validate(ctx, unstructuredOf(t, obj)); len(errs) > 0 {
				t.Errorf("offline validation refuses it: %v", errs.ToAggregate())
			}
			if err := env.Client.Create(ctx, obj); err != nil {
				t.Errorf("the API server refuses it: %v", err)
			}
		})
	}
}
