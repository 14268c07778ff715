package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/demo"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// namespace holds every object of the synthetic fleet.
const namespace = "fleet"

// fleetLabel selects every cluster of the fleet; each PackageSet targets it.
var fleetLabel = map[string]string{"flotilla.dev/bench": "fleet"}

// fleet names the objects and repositories of a synthetic fleet: clusters c-00000.., packages
// pkg-00.. (each published as v1 and v2 in one catalog), and sets s-00.. (set i deploys package
// i mod packages to every cluster).
type fleet struct {
	clusters, packages, sets int
	// waves, when not 0, labels the clusters into that many waves for the rollout phases.
	waves int
	// shards, when more than 1, splits the fleet: cluster i and its Repository belong to shard
	// i mod shards (label shardLabel), the catalog to shard 0, and every set has one copy per
	// shard, which targets that shard's clusters and names its deployments as the set would.
	shards int
	// health gives every cluster a kubeconfig (its Secret workloadSecret: one workload API server
	// for all, each cluster at an address of its own) and the Flux engine with its objects in a
	// namespace of the cluster's name, so flotilla bootstraps each cluster and reads its health
	// back without two clusters writing one object.
	health bool
}

// workloadSecret names the Secret with cluster's kubeconfig for the workload API server (--idle).
func workloadSecret(cluster string) string { return cluster + "-kubeconfig" }

func (f fleet) cluster(i int) string { return fmt.Sprintf("c-%05d", i) }
func (f fleet) set(i int) string     { return fmt.Sprintf("s-%02d", i) }
func (f fleet) pkg(set int) string   { return fmt.Sprintf("pkg-%02d", set%f.packages) }

// shardLabel is the label that puts an object into a shard (--shards).
const shardLabel = "shard"

func (f fleet) shardName(k int) string { return fmt.Sprintf("shard-%d", k) }

// shardOf is the shard of cluster i.
func (f fleet) shardOf(i int) int { return i % max(f.shards, 1) }

// inShard are labels with the shard label of shard k added (labels as they are without shards).
func (f fleet) inShard(k int, labels map[string]string) map[string]string {
	if f.shards <= 1 {
		return labels
	}
	out := map[string]string{shardLabel: f.shardName(k)}
	for key, v := range labels {
		out[key] = v
	}
	return out
}

// setCopies are the names of set's PackageSets: the set, or one copy per shard.
func (f fleet) setCopies(set int) []string {
	if f.shards <= 1 {
		return []string{f.set(set)}
	}
	names := make([]string, f.shards)
	for k := range names {
		names[k] = f.set(set) + "-" + f.shardName(k)
	}
	return names
}

// shardClusters are the names of shard k's clusters.
func (f fleet) shardClusters(k int) []string {
	var names []string
	for i := range f.clusters {
		if f.shardOf(i) == k {
			names = append(names, f.cluster(i))
		}
	}
	return names
}

func (f fleet) clusterNames() []string {
	names := make([]string, f.clusters)
	for i := range names {
		names[i] = f.cluster(i)
	}
	return names
}

// repoDir is the bare repository of name under root.
func repoDir(root, name string) string { return filepath.Join(root, name+".git") }

// initRepos creates empty bare repositories for names under root.
func initRepos(root string, names []string) error {
	return parallel(len(names), func(i int) error {
		_, err := git.PlainInit(repoDir(root, names[i]), true)
		return err
	})
}

// publishCatalog publishes v1 and v2 of every package into the catalog, as Porch would.
func (f fleet) publishCatalog(ctx context.Context, store *pkgrepo.Store, url string) error {
	for p := range f.packages {
		name := f.pkg(p)
		for _, image := range []string{"nginx:1.27", "nginx:1.28"} {
			if _, err := demo.PublishPackage(ctx, store, pkgrepo.Remote{URL: url}, name, image); err != nil {
				return fmt.Errorf("publish %s: %w", name, err)
			}
		}
	}
	return nil
}

// objects returns the fleet's Repositories, WorkloadClusters and PackageSets, with the catalog at
// catalogURL and cluster c's repository at clusterURL(c); revision gives each set's blueprint
// revision.
func (f fleet) objects(catalogURL string, clusterURL func(cluster string) string, revision func(set int) string) []client.Object {
	catalog := repository("catalog", catalogURL)
	catalog.Labels = f.inShard(0, nil)
	objs := []client.Object{catalog}
	for i := range f.clusters {
		r := repository(f.cluster(i), clusterURL(f.cluster(i)))
		r.Labels = f.inShard(f.shardOf(i), nil)
		objs = append(objs, r)
	}
	for i := range f.clusters {
		c := &v1alpha1.WorkloadCluster{
			TypeMeta:   typeMeta("WorkloadCluster"),
			ObjectMeta: metav1.ObjectMeta{Name: f.cluster(i), Namespace: namespace, Labels: f.inShard(f.shardOf(i), f.labelWaves(i, fleetLabel))},
			Spec: v1alpha1.WorkloadClusterSpec{
				Repository: v1alpha1.LocalObjectReference{Name: f.cluster(i)},
				Approval:   v1alpha1.ApprovalAutomatic,
			},
		}
		if f.health {
			c.Spec.KubeConfigSecretRef = &v1alpha1.SecretKeyReference{Name: workloadSecret(f.cluster(i)), Key: "value"}
			c.Spec.Sync.Engine = v1alpha1.EngineFlux
			c.Spec.Sync.Flux = &v1alpha1.FluxSync{Namespace: f.cluster(i)}
		}
		objs = append(objs, c)
	}
	for s := range f.sets {
		for k, name := range f.setCopies(s) {
			set := &v1alpha1.PackageSet{
				TypeMeta:   typeMeta("PackageSet"),
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: f.inShard(k, nil)},
				Spec: v1alpha1.PackageSetSpec{
					Package: v1alpha1.PackageReference{Repository: &v1alpha1.LocalObjectReference{Name: "catalog"}, Name: f.pkg(s), Revision: revision(s)},
					// A shard's copy sees only its shard's clusters (its replica caches no other).
					Targets: v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{
						Clusters: &v1alpha1.ClusterGenerator{Selector: v1alpha1.LabelSelector{MatchLabels: fleetLabel}},
					}},
					Template: v1alpha1.DeploymentTemplate{NameExpr: "set.name + '-' + target.name"},
				},
			}
			if f.shards > 1 {
				// Named as the set's own deployments would be, labelled into the shard.
				set.Spec.Template.NameExpr = "'" + f.set(s) + "-' + target.name"
				set.Spec.Template.Labels = map[string]string{shardLabel: "'" + f.shardName(k) + "'"}
			}
			objs = append(objs, set)
		}
	}
	return objs
}

func repository(name, url string) *v1alpha1.Repository {
	return &v1alpha1.Repository{
		TypeMeta:   typeMeta("Repository"),
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       v1alpha1.RepositorySpec{Git: &v1alpha1.GitRepository{URL: url}},
	}
}

func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: kind}
}

// writeYAML writes objs as one multi-document YAML file, for `flotilla render`.
func writeYAML(path string, objs []client.Object) error {
	var b strings.Builder
	for _, o := range objs {
		y, err := yaml.Marshal(o)
		if err != nil {
			return err
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
