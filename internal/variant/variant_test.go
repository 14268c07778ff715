package variant

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
	"github.com/flotilla-dev/flotilla/internal/specialize"
)

const kptfile = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: upf\n"

func deployment(port string) string {
	return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: upf\n  labels:\n    region: none # kpt-set: ${region}\nspec:\n  replicas: 1 # kpt-set: ${replicas}\n  template:\n    spec:\n      containers:\n      - name: upf\n        image: upf:1.0 # kpt-set: ${image}\n        ports:\n        - containerPort: " + port + "\n"
}

// A hand edit in the variant survives a re-render and a blueprint bump; an edit of a field the
// blueprint also changes is a conflict that publishes nothing.
func TestPublishKeepsEditsAndReportsConflicts(t *testing.T) {
	srv := gittest.NewServer(t)
	srv.CreateRepo(t, "catalog")
	srv.CreateRepo(t, "edge")
	v1 := gittest.Commit(t, srv.Dir("catalog"), "upf", map[string]string{"upf/Kptfile": kptfile, "upf/deployment.yaml": deployment("8805")}, "upf/v1")
	store := pkgrepo.NewStore(t.TempDir())
	store.RefreshInterval = 1
	ctx := context.Background()
	req := Request{
		Blueprint: pkgrepo.Remote{URL: srv.URL + "/catalog.git"}, BlueprintPath: "upf",
		Upstream: specialize.Upstream{Repo: srv.URL + "/catalog.git", Directory: "/upf", Ref: "upf/v1", Commit: v1},
		Target:   pkgrepo.Remote{URL: srv.URL + "/edge.git"}, PackagePath: "upf",
		Values: map[string]string{"replicas": "3", "region": "none", "image": "upf:1.1"},
	}
	res, err := Publish(ctx, store, req)
	if err != nil || res.Revision.Number != 1 {
		t.Fatalf("first publish: %+v, %v", res, err)
	}
	edge := srv.Dir("edge")
	file := func(rev string) string { return gittest.ReadFile(t, edge, rev, "upf/deployment.yaml") }
	gittest.Commit(t, edge, "", map[string]string{"upf/deployment.yaml": strings.Replace(file("main"), "  labels:\n", "  labels:\n    team: core\n", 1)})

	// Same inputs again: the edit is kept.
	if _, err := Publish(ctx, store, req); err != nil {
		t.Fatal(err)
	}
	if got := file("main"); !strings.Contains(got, "team: core") {
		t.Fatalf("re-render dropped the hand edit:\n%s", got)
	}
	// Blueprint bump: the edit is kept and the new port arrives.
	v2 := gittest.Commit(t, srv.Dir("catalog"), "upf", map[string]string{"upf/Kptfile": kptfile, "upf/deployment.yaml": deployment("8806")}, "upf/v2")
	req.Upstream.Ref, req.Upstream.Commit = "upf/v2", v2
	res, err = Publish(ctx, store, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := file(res.Revision.Tag); !strings.Contains(got, "team: core") || !strings.Contains(got, "8806") || !strings.Contains(got, "replicas: 3") {
		t.Fatalf("bump lost something:\n%s", got)
	}
}

// Publishing content computed from an old copy of the package fails instead of overwriting an
// edit made since (the caller then merges again).
func TestPublishRefusesToOverwriteAConcurrentEdit(t *testing.T) {
	srv := gittest.NewServer(t)
	srv.CreateRepo(t, "edge")
	store := pkgrepo.NewStore(t.TempDir())
	ctx := context.Background()
	remote := pkgrepo.Remote{URL: srv.URL + "/edge.git"}
	files := map[string][]byte{"Kptfile": []byte(kptfile), "deployment.yaml": []byte(deployment("1"))}
	first, err := store.Publish(ctx, remote, pkgrepo.PublishRequest{Package: "upf", Files: files})
	if err != nil {
		t.Fatal(err)
	}
	gittest.Commit(t, srv.Dir("edge"), "", map[string]string{"upf/deployment.yaml": deployment("2")})
	tags := gittest.Tags(t, srv.Dir("edge"))
	files["deployment.yaml"] = []byte(deployment("3"))
	_, err = store.Publish(ctx, remote, pkgrepo.PublishRequest{Package: "upf", Files: files, PackageBase: first.Commit})
	if !errors.Is(err, pkgrepo.ErrPackageChanged) {
		t.Fatalf("want ErrPackageChanged, got %v", err)
	}
	if got := gittest.Tags(t, srv.Dir("edge")); len(got) != len(tags) {
		t.Errorf("tags changed: %v", got)
	}
	if got := gittest.ReadFile(t, srv.Dir("edge"), "main", "upf/deployment.yaml"); !strings.Contains(got, "containerPort: 2") {
		t.Errorf("the edit was overwritten:\n%s", got)
	}
}

// A change of an injected object or of a function's configuration reaches an existing variant,
// whose direct edits are kept: the merge base is what was rendered for the copy (kept with it in
// git), not a render of the old blueprint with today's injections and functions.
func TestInjectionAndPipelineChangesReachTheVariant(t *testing.T) {
	srv := gittest.NewServer(t)
	srv.CreateRepo(t, "catalog")
	srv.CreateRepo(t, "edge")
	endpoints := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: endpoints\n  annotations:\n    kpt.dev/config-injection: required\ndata:\n  db: db.default.example\n"
	v1 := gittest.Commit(t, srv.Dir("catalog"), "upf", map[string]string{
		"upf/Kptfile": kptfile, "upf/deployment.yaml": deployment("8805"), "upf/endpoints.yaml": endpoints,
	}, "upf/v1")
	store := pkgrepo.NewStore(t.TempDir())
	store.RefreshInterval = 1
	ctx := context.Background()
	inject := func(db string) []specialize.Injection {
		return []specialize.Injection{{Kind: "ConfigMap", Name: "edge-endpoints", Object: map[string]any{"apiVersion": "v1", "data": map[string]any{"db": db}}}}
	}
	labels := func(tier string) []specialize.Function {
		return []specialize.Function{{Image: "gcr.io/kpt-fn/set-labels:v0.2", ConfigMap: map[string]string{"tier": tier}}}
	}
	req := Request{
		Blueprint: pkgrepo.Remote{URL: srv.URL + "/catalog.git"}, BlueprintPath: "upf",
		Upstream: specialize.Upstream{Repo: srv.URL + "/catalog.git", Directory: "/upf", Ref: "upf/v1", Commit: v1},
		Target:   pkgrepo.Remote{URL: srv.URL + "/edge.git"}, PackagePath: "upf",
		Values:     map[string]string{"replicas": "3", "region": "none", "image": "upf:1.1"},
		Injections: inject("db.edge-a.example"),
		Pipeline:   labels("gold"),
	}
	if _, err := Publish(ctx, store, req); err != nil {
		t.Fatal(err)
	}
	edge := srv.Dir("edge")
	file := func(rev, name string) string { return gittest.ReadFile(t, edge, rev, "upf/"+name) }
	if got := file("main", "endpoints.yaml"); !strings.Contains(got, "db.edge-a.example") {
		t.Fatalf("first render misses the injection:\n%s", got)
	}
	// A direct edit of the variant.
	gittest.Commit(t, edge, "", map[string]string{"upf/deployment.yaml": strings.Replace(file("main", "deployment.yaml"), "replicas: 3", "replicas: 5", 1)})

	req.Injections, req.Pipeline = inject("db.edge-b.example"), labels("silver")
	res, err := Publish(ctx, store, req)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed {
		t.Fatal("the new injection and function configuration published nothing")
	}
	if got := file(res.Revision.Tag, "endpoints.yaml"); !strings.Contains(got, "db.edge-b.example") || strings.Contains(got, "edge-a") {
		t.Errorf("the injection change did not reach the variant:\n%s", got)
	}
	got := file(res.Revision.Tag, "deployment.yaml")
	if !strings.Contains(got, "tier: silver") || strings.Contains(got, "tier: gold") {
		t.Errorf("the function's new configuration did not reach the variant:\n%s", got)
	}
	if !strings.Contains(got, "replicas: 5") {
		t.Errorf("the direct edit was lost:\n%s", got)
	}
}
