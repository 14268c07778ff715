package specialize

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// buildKRMFunction builds testdata/krmfn, a real KRM function written with
// the krm-functions-sdk, into a temporary directory.
func buildKRMFunction(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the exec tests build a KRM function and need the go command: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "krmfn")
	cmd := exec.Command(goBin, "build", "-o", bin, "./testdata/krmfn")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./testdata/krmfn: %v\n%s", err, out)
	}
	return bin
}

func execPackage(mutator string) map[string][]byte {
	return map[string][]byte{
		"Kptfile": []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: bp\npipeline:\n  mutators:\n" + mutator),
		"deployment.yaml": []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web # keep this comment
spec:
  replicas: 1
`),
	}
}

func TestExecFunction(t *testing.T) {
	bin := buildKRMFunction(t)
	allow := ExecPolicy{Allow: true, Timeout: 30 * time.Second}

	t.Run("runs and keeps comments", func(t *testing.T) {
		got, err := Render(context.Background(), Request{
			Blueprint: execPackage("  - exec: " + bin + "\n    configMap:\n      value: krmfn\n"),
			Name:      "web", Exec: allow,
		})
		if err != nil {
			t.Fatal(err)
		}
		want := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web # keep this comment
  annotations:
    example.com/touched-by: krmfn
spec:
  replicas: 1
`
		if got := string(got["deployment.yaml"]); got != want {
			t.Errorf("deployment.yaml:\n%s\nwant:\n%s", got, want)
		}
		if !strings.Contains(string(got["package-context.yaml"]), "example.com/touched-by: krmfn") {
			t.Errorf("package-context.yaml was not passed to the function:\n%s", got["package-context.yaml"])
		}
	})

	t.Run("error result fails the render", func(t *testing.T) {
		_, err := Render(context.Background(), Request{
			Blueprint: execPackage("  - exec: " + bin + "\n    configMap:\n      fail: replicas must be set\n"),
			Name:      "web", Exec: allow,
		})
		if err == nil || !strings.Contains(err.Error(), "replicas must be set") || !strings.Contains(err.Error(), bin) {
			t.Fatalf("err = %v, want the function's error result naming the function", err)
		}
	})
}

func TestExecFunctionTimeout(t *testing.T) {
	script := filepath.Join(t.TempDir(), "slow.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nsleep 10\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := Render(context.Background(), Request{
		Blueprint: execPackage("  - exec: " + script + "\n"),
		Name:      "web", Exec: ExecPolicy{Allow: true, Timeout: 200 * time.Millisecond},
	})
	if err == nil || !strings.Contains(err.Error(), "timed out after 200ms") {
		t.Fatalf("err = %v, want a timeout", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("the render waited %s for a function with a 200ms timeout", time.Since(start))
	}
}
