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
