package offline

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/internal/fleet"
	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/internal/ocipkg"
	"github.com/flotilla-dev/flotilla/internal/ocitest"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// flotilla render resolves OCI packages with the controller's code: an artifact pushed to a
// registry is pinned by digest in the cluster's deployed-packages, beside a git package; an OCI
// Repository named as a cluster's repository fails that cluster.
func TestRunPinsOCIPackages(t *testing.T) {
	host := ocitest.NewRegistry(t, nil)
	art, err := ocipkg.Push(context.Background(), host+"/catalog/upf:v1",
		map[string][]byte{"Kptfile": []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: upf}\n")}, ocipkg.Options{Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := fleetServer(t)
	dir := t.TempDir()
	writeFleet(t, dir, srv.URL, strings.ReplaceAll(`---
apiVersion: flotilla.dev/v1alpha1
kind: Repository
metadata: {name: oci, namespace: fleet}
spec: {oci: {url: HOST/catalog, insecure: true}}
---
apiVersion: flotilla.dev/v1alpha1
kind: PackageDeployment
metadata: {name: edge01-upf, namespace: fleet}
spec: {cluster: {name: edge01}, package: {repository: {name: oci}, name: upf, revision: latest}}
---
apiVersion: flotilla.dev/v1alpha1
kind: WorkloadCluster
metadata: {name: edge03, namespace: fleet}
spec: {repository: {name: oci}}
`, "HOST", host))
	f, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	results := Run(context.Background(), fleet.Sources{Store: pkgrepo.NewStore(t.TempDir()), Registry: &ocipkg.Cache{}}, f)
	got := table(t, results)
	for _, want := range []string{"+edge01-upf upf:v1", "+edge01-app app/v1", "fleet/edge03  error", "is an OCI repository"} {
		if !strings.Contains(got, want) {
			t.Errorf("table misses %q:\n%s", want, got)
		}
	}
	out, err := exec.Command("git", "-C", srv.Dir("edge01"), "ls-tree", "--name-only", "main:deployed-packages").Output()
	if err != nil {
		t.Fatal(err)
	}
	rootSync := ""
	for _, name := range strings.Fields(string(out)) {
		if strings.HasPrefix(name, "edge01-upf") {
			rootSync = gittest.ReadFile(t, srv.Dir("edge01"), "main", "deployed-packages/"+name)
		}
	}
	for _, want := range []string{"sourceType: oci", "image: " + host + "/catalog/upf@" + art.Digest, "flotilla.dev/pinned-tag: upf:v1"} {
		if !strings.Contains(rootSync, want) {
			t.Errorf("the RootSync of edge01-upf misses %q:\n%s", want, rootSync)
		}
	}
}
