// Package demo builds a sandbox fleet on local git repositories and runs flotilla's offline
// publishing on it, step by step, showing what a user would see: publish is not deploy, and
// undeploy removes the sync object.
package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/gitremote"
	"github.com/flotilla-dev/flotilla/internal/offline"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// Run creates the sandbox under dir and prints each step to w.
func Run(ctx context.Context, w io.Writer, dir string) error {
	store := pkgrepo.NewStore(filepath.Join(dir, "cache"))
	store.AllowLocal = true // the sandbox's repositories are local directories
	d := &sandbox{dir: dir, w: w, store: store}
	steps := []struct {
		title string
		do    func(context.Context) error
	}{
		{"Create a catalog with published package revisions and three empty cluster repositories", d.setup},
		{"Deploy: edge01 gets nginx-hello v1 and free5gc-upf latest, edge02 nginx-hello v2 (Orphan), core01 (Manual approval) nginx-hello v1", d.render},
		{"Publish nginx-hello/v3 and free5gc-upf/v2 in the catalog: only the deployment that follows latest moves", d.publishNewRevisions},
		{"Undeploy edge02-nginx (delete its PackageDeployment): its sync object leaves deployed-packages", d.undeploy},
	}
	for i, s := range steps {
		fmt.Fprintf(w, "\n== Step %d: %s\n", i+1, s.title)
		if err := s.do(ctx); err != nil {
			return fmt.Errorf("step %d: %w", i+1, err)
		}
	}
	fmt.Fprintf(w, "\n== Tags in edge01's repository\n")
	if err := d.printTags("edge01"); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n== The RootSync for edge01-nginx in edge01's deployed-packages/v2\n")
	return d.printSyncObject(ctx, "edge01", "deployed-packages", "edge01-nginx")
}

type sandbox struct {
	dir   string
	w     io.Writer
	store *pkgrepo.Store
}

func (d *sandbox) repoURL(name string) string {
	return "file://" + filepath.Join(d.dir, "git", name+".git")
}

// remote is repository name as the offline run reads it (the sandbox's Repository objects are in
// namespace fleet, without a Secret), so what the demo publishes through the same mirror is seen
// at once.
func (d *sandbox) remote(name string) pkgrepo.Remote {
	repo := &v1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "fleet"}}
	return pkgrepo.Remote{URL: d.repoURL(name), Scope: gitremote.Scope(repo)}
}

func (d *sandbox) setup(ctx context.Context) error {
	for _, name := range []string{"catalog", "edge01", "edge02", "core01"} {
		if _, err := git.PlainInit(filepath.Join(d.dir, "git", name+".git"), true); err != nil {
			return err
		}
	}
	for _, p := range []struct {
		name  string
		image string
	}{{"nginx-hello", "nginx:1.27"}, {"nginx-hello", "nginx:1.28"}, {"free5gc-upf", "free5gc/upf:v3.4.4"}} {
		if err := d.publishPackage(ctx, p.name, p.image); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(d.dir, "fleet"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(d.dir, "fleet", "fleet.yaml"), []byte(fleetYAML(d)), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(d.w, "catalog: %s\nobjects: %s\n", d.repoURL("catalog"), filepath.Join(d.dir, "fleet"))
	return d.printTags("catalog")
}

// PublishPackage publishes the next revision of a sample catalog package, as Porch would: a
// Kptfile and one Deployment running image.
func PublishPackage(ctx context.Context, store *pkgrepo.Store, catalog pkgrepo.Remote, name, image string) (pkgrepo.PublishResult, error) {
	return store.Publish(ctx, catalog, pkgrepo.PublishRequest{
		Package: name,
		Files: map[string][]byte{
			"Kptfile":         []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: " + name + "\n"),
			"deployment.yaml": []byte(deploymentYAML(name, image)),
		},
		Message: "publish " + name + " with " + image,
	})
}

// publishPackage publishes the next revision of a catalog package and says so.
func (d *sandbox) publishPackage(ctx context.Context, name, image string) error {
	res, err := PublishPackage(ctx, d.store, d.remote("catalog"), name, image)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.w, "published %s (%s)\n", res.Tag, image)
	return nil
}

func (d *sandbox) render(ctx context.Context) error {
	f, err := offline.Load(filepath.Join(d.dir, "fleet"))
	if err != nil {
		return err
	}
	results := offline.Run(ctx, d.store, f)
	if err := offline.PrintTable(d.w, results); err != nil {
		return err
	}
	if n := offline.Failed(results); n > 0 {
		return fmt.Errorf("%d clusters failed", n)
	}
	return nil
}

func (d *sandbox) publishNewRevisions(ctx context.Context) error {
	if err := d.publishPackage(ctx, "nginx-hello", "nginx:1.29"); err != nil {
		return err
	}
	if err := d.publishPackage(ctx, "free5gc-upf", "free5gc/upf:v3.4.5"); err != nil {
		return err
	}
	return d.render(ctx)
}

func (d *sandbox) undeploy(ctx context.Context) error {
	if err := os.Remove(filepath.Join(d.dir, "fleet", "edge02-nginx.yaml")); err != nil {
		return err
	}
	return d.render(ctx)
}

func (d *sandbox) printTags(repo string) error {
	r, err := git.PlainOpen(filepath.Join(d.dir, "git", repo+".git"))
	if err != nil {
		return err
	}
	iter, err := r.Tags()
	if err != nil {
		return err
	}
	var tags []string
	err = iter.ForEach(func(ref *plumbing.Reference) error {
		tags = append(tags, fmt.Sprintf("  %s -> %s", ref.Name().Short(), ref.Hash().String()[:12]))
		return nil
	})
	sort.Strings(tags)
	fmt.Fprintln(d.w, strings.Join(tags, "\n"))
	return err
}

func (d *sandbox) printSyncObject(ctx context.Context, cluster, pkg, deployment string) error {
	remote := d.remote(cluster)
	rev, err := d.store.Resolve(ctx, remote, pkg, "v2")
	if err != nil {
		return err
	}
	files, err := d.store.ReadPackage(ctx, remote, pkg, rev.Commit)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if strings.HasPrefix(n, deployment+"-") {
			fmt.Fprintf(d.w, "# %s/%s\n%s", pkg, n, files[n])
			return nil
		}
	}
	return fmt.Errorf("no sync object for %s in %s", deployment, rev.Tag)
}
