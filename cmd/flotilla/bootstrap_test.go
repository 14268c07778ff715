package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/internal/testenv"
)

// TestBootstrapApply runs flotilla bootstrap --apply against a real API server: the RootSync is
// server-side applied by flotilla's field manager, and applying again takes back a field another
// manager changed.
func TestBootstrapApply(t *testing.T) {
	env := startAPIServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kubeconfig := adminKubeconfigFile(t, env, "bootstrap")
	files := clusterFiles(t)
	apply := func() string {
		t.Helper()
		var out bytes.Buffer
		cmd := bootstrapCmd()
		cmd.SetArgs([]string{"edge01", "-f", files, "--apply", "--target-kubeconfig", kubeconfig})
		cmd.SetOut(&out)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		if err := cmd.ExecuteContext(ctx); err != nil {
			t.Fatalf("flotilla bootstrap --apply: %v", err)
		}
		return out.String()
	}
	const want = "RootSync config-management-system/flotilla-deployed-packages applied\n"
	if got := apply(); got != want {
		t.Fatalf("flotilla bootstrap --apply printed %q, want %q", got, want)
	}
	rs := &unstructured.Unstructured{}
	rs.SetAPIVersion("configsync.gke.io/v1beta1")
	rs.SetKind("RootSync")
	key := client.ObjectKey{Namespace: "config-management-system", Name: "flotilla-deployed-packages"}
	if err := env.Client.Get(ctx, key, rs); err != nil {
		t.Fatal(err)
	}
	if repo, _, _ := unstructured.NestedString(rs.Object, "spec", "git", "repo"); repo != "https://git.example.com/fleet/edge01.git" {
		t.Errorf("spec.git.repo = %q, want the cluster repository's URL", repo)
	}
	managers := map[string]string{}
	for _, m := range rs.GetManagedFields() {
		managers[m.Manager] = string(m.Operation)
	}
	if managers["flotilla"] != "Apply" {
		t.Errorf("managed fields %v, want flotilla's Apply", managers)
	}

	// Another writer changes a field flotilla applies; the next apply takes it back.
	patch := []byte(`{"spec":{"git":{"branch":"other"}}}`)
	if err := env.Client.Patch(ctx, rs, client.RawPatch(types.MergePatchType, patch), client.FieldOwner("someone")); err != nil {
		t.Fatal(err)
	}
	if got := apply(); got != want {
		t.Fatalf("flotilla bootstrap --apply printed %q, want %q", got, want)
	}
	if err := env.Client.Get(ctx, key, rs); err != nil {
		t.Fatal(err)
	}
	if branch, _, _ := unstructured.NestedString(rs.Object, "spec", "git", "branch"); branch != "main" {
		t.Errorf("spec.git.branch = %q after applying again, want main", branch)
	}
}

// startAPIServer starts a test API server for one test, stopped when it ends.
func startAPIServer(t *testing.T) *testenv.Env {
	t.Helper()
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	return env
}

// adminKubeconfigFile writes a kubeconfig of a new admin user of env to a file and returns its
// path.
func adminKubeconfigFile(t *testing.T, env *testenv.Env, user string) string {
	t.Helper()
	kc, err := env.AdminKubeconfig(user)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
