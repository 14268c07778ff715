package workloadcluster

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/fleet"
	"github.com/flotilla-dev/flotilla/internal/render"
)

// renderArgs are renderInputs' arguments, for a test to change one at a time.
type renderArgs struct {
	cluster   *v1alpha1.WorkloadCluster
	repo      *v1alpha1.Repository
	pins      []render.Pin
	published *v1alpha1.DeployedPackagesStatus
}

func baseRenderArgs() *renderArgs {
	a := &renderArgs{
		cluster: &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "edge01", UID: "c", ResourceVersion: "10", Generation: 1}},
		repo:    &v1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "edge01", UID: "r", ResourceVersion: "11", Generation: 1}},
		published: &v1alpha1.DeployedPackagesStatus{Packages: []v1alpha1.PublishedPin{
			{Deployment: "a", Tag: "a/v1"}, {Deployment: "b", Tag: "b/v1"}}},
	}
	for _, name := range []string{"a", "b", "c"} {
		pd := &v1alpha1.PackageDeployment{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("u-" + name), ResourceVersion: "12", Generation: 1}}
		a.pins = append(a.pins, render.Pin{Deployment: pd, RepoURL: "https://git.example/catalog.git", Branch: "main",
			Resolved: v1alpha1.ResolvedRevision{Repository: "catalog", Revision: 1, Tag: name + "/v1", Commit: "1111", Directory: "/" + name}})
	}
	return a
}

// TestRenderInputs: the key that lets a reconcile skip a render changes with the spec of every
// object the render reads (a new generation), every part of a pin and the deployments the
// published revision carries, and not with a status write, labels, annotations or the order in
// which the cache lists the deployments.
func TestRenderInputs(t *testing.T) {
	// renderInputs names every field of a pin and of its resolved revision: a field added to either
	// must be added there too, or a change to it would not be rendered for up to verifyEvery.
	if n := reflect.TypeFor[render.Pin]().NumField(); n != 6 {
		t.Errorf("render.Pin has %d fields, renderInputs hashes 6: hash the new one and count it here", n)
	}
	if n := reflect.TypeFor[v1alpha1.ResolvedRevision]().NumField(); n != 6 {
		t.Errorf("ResolvedRevision has %d fields, renderInputs hashes 6: hash the new one and count it here", n)
	}

	tests := []struct {
		name   string
		change func(a *renderArgs)
		same   bool
	}{
		{name: "listed in another order", same: true, change: func(a *renderArgs) { slices.Reverse(a.pins) }},
		{name: "read again (new objects, same versions)", same: true, change: func(a *renderArgs) {
			for i := range a.pins {
				a.pins[i].Deployment = a.pins[i].Deployment.DeepCopy()
			}
		}},
		{name: "status, labels or annotations written", same: true, change: func(a *renderArgs) {
			a.cluster.ResourceVersion, a.repo.ResourceVersion = "20", "21"
			a.cluster.Annotations = map[string]string{"x": "y"}
			a.pins[1].Deployment.ResourceVersion, a.pins[1].Deployment.Labels = "22", map[string]string{"x": "y"}
		}},
		{name: "published again, carrying the same deployments", same: true, change: func(a *renderArgs) {
			a.published = &v1alpha1.DeployedPackagesStatus{Revision: 2, Packages: []v1alpha1.PublishedPin{
				{Deployment: "b", Tag: "b/v2"}, {Deployment: "a", Tag: "a/v1"}}}
		}},
		{name: "cluster spec changed", change: func(a *renderArgs) { a.cluster.Generation = 2 }},
		{name: "cluster recreated", change: func(a *renderArgs) { a.cluster.UID = "c2" }},
		{name: "cluster of another namespace", change: func(a *renderArgs) { a.cluster.Namespace = "other" }},
		{name: "repository spec changed", change: func(a *renderArgs) { a.repo.Generation = 2 }},
		{name: "another repository", change: func(a *renderArgs) { a.repo.Name = "other" }},
		{name: "deployment spec changed", change: func(a *renderArgs) { a.pins[1].Deployment.Generation = 2 }},
		{name: "deployment recreated", change: func(a *renderArgs) { a.pins[1].Deployment.UID = "u-b2" }},
		{name: "published carries another deployment", change: func(a *renderArgs) {
			a.published.Packages = append(a.published.Packages, v1alpha1.PublishedPin{Deployment: "c", Tag: "c/v1"})
		}},
		{name: "nothing published", change: func(a *renderArgs) { a.published = nil }},
		{name: "resolved to another tag", change: func(a *renderArgs) { a.pins[0].Resolved.Tag = "a/v2" }},
		{name: "resolved to a new commit", change: func(a *renderArgs) { a.pins[0].Resolved.Commit = "2222" }},
		{name: "resolved revision", change: func(a *renderArgs) { a.pins[0].Resolved.Revision = 2 }},
		{name: "resolved directory", change: func(a *renderArgs) { a.pins[0].Resolved.Directory = "/x" }},
		{name: "resolved image", change: func(a *renderArgs) { a.pins[0].Resolved.Image = "reg/x" }},
		{name: "resolved repository", change: func(a *renderArgs) { a.pins[0].Resolved.Repository = "c2" }},
		{name: "repository URL", change: func(a *renderArgs) { a.pins[2].RepoURL = "https://x" }},
		{name: "branch", change: func(a *renderArgs) { a.pins[2].Branch = "dev" }},
		{name: "insecure", change: func(a *renderArgs) { a.pins[2].Insecure = true }},
		{name: "draining", change: func(a *renderArgs) { a.pins[2].Drain = true }},
		{name: "a pin less", change: func(a *renderArgs) { a.pins = a.pins[1:] }},
		{name: "no pins", change: func(a *renderArgs) { a.pins = nil }},
		{name: "a pin twice", change: func(a *renderArgs) { a.pins = append(a.pins, a.pins[0]) }},
	}
	base := baseRenderArgs()
	want := renderInputs(base.cluster, base.repo, base.pins, base.published)
	seen := map[[32]byte]string{}
	for _, tt := range tests {
		a := baseRenderArgs()
		tt.change(a)
		got := renderInputs(a.cluster, a.repo, a.pins, a.published)
		switch {
		case tt.same && got != want:
			t.Errorf("%s: the inputs differ", tt.name)
		case !tt.same && got == want:
			t.Errorf("%s: the inputs are the same", tt.name)
		case !tt.same:
			if other, ok := seen[got]; ok {
				t.Errorf("%s and %s: the same inputs", tt.name, other)
			}
			seen[got] = tt.name
		}
	}
}

// TestLastPublishStandsInForTheBranchTheStatusNames: a reconcile skips a render or a publish on
// the strength of the last publish only while the cluster's status says what that publish did
// (Ready because it published, and the commit it left: a status write that failed after it
// leaves the status behind), and not after a failure forgot it.
func TestLastPublishStandsInForTheBranchTheStatusNames(t *testing.T) {
	a := baseRenderArgs()
	cluster := a.cluster
	cluster.Status.ObservedGeneration = cluster.Generation
	cluster.Status.DeployedPackages = &v1alpha1.DeployedPackagesStatus{Tag: "deployed-packages/v2", Commit: "c2"}
	setPublished(cluster, fleet.Outcome{Published: cluster.Status.DeployedPackages})
	inputs := renderInputs(cluster, a.repo, a.pins, cluster.Status.DeployedPackages)
	r := &Reconciler{}
	r.remember(cluster, "digest", "c2", inputs, nil)
	skips := func() (bool, bool) {
		_, reused := r.renderedBefore(cluster, inputs)
		return reused, r.upToDate(cluster, "digest", inputs, nil)
	}
	if reused, upToDate := skips(); !reused || !upToDate {
		t.Fatalf("right after the publish: reused %v, up to date %v; want both", reused, upToDate)
	}
	cluster.Status.DeployedPackages.Commit = "c1" // the status write after the publish failed
	if reused, upToDate := skips(); reused || upToDate {
		t.Errorf("status behind the publish: reused %v, up to date %v; want neither", reused, upToDate)
	}
	cluster.Status.DeployedPackages.Commit = "c2"
	setFailed(cluster, errors.New("the git server is down")) // the status write after the recovery failed
	if reused, upToDate := skips(); reused || upToDate {
		t.Errorf("Ready on a failure: reused %v, up to date %v; want neither", reused, upToDate)
	}
	setPublished(cluster, fleet.Outcome{Published: cluster.Status.DeployedPackages})
	if reused, upToDate := skips(); !reused || !upToDate {
		t.Errorf("the status as the publish left it again: reused %v, up to date %v; want both", reused, upToDate)
	}
	r.forgetPublish(client.ObjectKeyFromObject(cluster))
	if reused, upToDate := skips(); reused || upToDate {
		t.Errorf("after a failure: reused %v, up to date %v; want neither", reused, upToDate)
	}
}
