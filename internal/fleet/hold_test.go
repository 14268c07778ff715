package fleet_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/fleet"
	"github.com/flotilla-dev/flotilla/internal/render"
)

func TestHold(t *testing.T) {
	pin := func(name string, deps ...string) render.Pin {
		pd := &v1alpha1.PackageDeployment{}
		pd.Name = name
		for _, d := range deps {
			pd.Spec.DependsOn = append(pd.Spec.DependsOn, v1alpha1.LocalObjectReference{Name: d})
		}
		return render.Pin{Deployment: pd}
	}
	pins := []render.Pin{pin("crds"), pin("app", "crds"), pin("top", "app"), pin("lone", "gone"), pin("after", "lone"), pin("kept", "gone")}
	names := func(pins []render.Pin) []string {
		var out []string
		for _, p := range pins {
			out = append(out, p.Deployment.Name)
		}
		return out
	}
	kept, held := fleet.Hold(pins, nil)
	if diff := cmp.Diff([]string{"crds", "app", "top"}, names(kept)); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"lone": "gone", "after": "lone", "kept": "gone"}, held); diff != "" {
		t.Errorf("held (-want +got):\n%s", diff)
	}
	// Published before its dependency went: kept, and so is what depends on it.
	published := &v1alpha1.DeployedPackagesStatus{Packages: []v1alpha1.PublishedPin{{Deployment: "kept"}, {Deployment: "lone"}}}
	kept, held = fleet.Hold(pins, published)
	if diff := cmp.Diff([]string{"crds", "app", "top", "lone", "after", "kept"}, names(kept)); diff != "" {
		t.Errorf("kept with published (-want +got):\n%s", diff)
	}
	if len(held) != 0 {
		t.Errorf("held with published = %v; want none", held)
	}
	// Without its dependency, app is held, and top with it.
	kept, _ = fleet.Hold([]render.Pin{pin("app", "crds"), pin("top", "app")}, nil)
	if len(kept) != 0 {
		t.Errorf("kept = %v; want none", names(kept))
	}
}

// renderCluster is a Config Sync cluster edge01 and its repository, for fleet.Render.
func renderCluster() (*v1alpha1.WorkloadCluster, *v1alpha1.Repository) {
	cluster := &v1alpha1.WorkloadCluster{}
	cluster.Name = "edge01"
	repo := &v1alpha1.Repository{Spec: v1alpha1.RepositorySpec{Git: &v1alpha1.GitRepository{URL: "https://git.example/edge01.git", Branch: "main", Directory: "/"}}}
	return cluster, repo
}

// renderPin is deployment name of the catalog's package name/v1, to namespace ns (empty: the
// package's own), after deps.
func renderPin(name, ns string, deps ...string) render.Pin {
	pd := &v1alpha1.PackageDeployment{}
	pd.Name, pd.Namespace, pd.Spec.Namespace = name, "fleet", ns
	for _, d := range deps {
		pd.Spec.DependsOn = append(pd.Spec.DependsOn, v1alpha1.LocalObjectReference{Name: d})
	}
	return render.Pin{Deployment: pd, RepoURL: "https://git.example/catalog.git", Branch: "main",
		Resolved: v1alpha1.ResolvedRevision{Repository: "catalog", Revision: 1, Tag: name + "/v1", Commit: "c", Directory: "/" + name}}
}

// A dependency the engine refuses has no pin: what depends on it is held back, not published
// without its order.
func TestRenderHoldsDependentsOfRefusedDeployments(t *testing.T) {
	cluster, repo := renderCluster()
	pin := renderPin
	out, err := fleet.Render(cluster, repo, []render.Pin{pin("refused", "config-management-system"), pin("app", "", "refused"), pin("other", "")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range out.Pins {
		names = append(names, p.Deployment)
	}
	if diff := cmp.Diff([]string{"other"}, names); diff != "" {
		t.Errorf("published (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"app": "refused"}, out.Held); diff != "" {
		t.Errorf("held (-want +got):\n%s", diff)
	}
}

// A render's pins rendered again with the revision it published (what the next reconcile reads)
// give the same tree and hold back the same deployments: the WorkloadCluster reconciler remembers
// a publish's inputs with that revision, so that reconcile does not render again.
func TestRenderAgainWithWhatItPublished(t *testing.T) {
	cluster, repo := renderCluster()
	pin := renderPin
	pins := []render.Pin{pin("crds", ""), pin("app", "", "crds"), pin("top", "", "app"), pin("lone", "", "gone"),
		pin("after", "", "lone"), pin("kept", "", "gone"), pin("refused", "config-management-system"), pin("late", "", "refused")}
	for _, before := range []*v1alpha1.DeployedPackagesStatus{
		nil,
		{Packages: []v1alpha1.PublishedPin{{Deployment: "kept"}}},
		{Packages: []v1alpha1.PublishedPin{{Deployment: "kept"}, {Deployment: "lone"}, {Deployment: "removed"}}},
	} {
		first, err := fleet.Render(cluster, repo, pins, before)
		if err != nil {
			t.Fatal(err)
		}
		again, err := fleet.Render(cluster, repo, pins, &v1alpha1.DeployedPackagesStatus{Revision: 2, Packages: first.Pins})
		if err != nil {
			t.Fatal(err)
		}
		if again.Digest != first.Digest || !cmp.Equal(again.Held, first.Held) {
			t.Errorf("published before %v: rendered again with what it published, digest %s held %v; first %s held %v",
				before, again.Digest, again.Held, first.Digest, first.Held)
		}
	}
}
