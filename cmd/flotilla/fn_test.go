package main

import (
	"context"
	"math"
	"os"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/internal/specialize"
)

// TestMain makes the test binary the flotilla binary when it is asked to serve "fn": the
// controller's starlark sandbox runs through the command line a real controller's child gets.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "fn" {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// The controller runs a pipeline's starlark in a child process of its own binary ("flotilla fn
// starlark", as --starlark-max-memory sets it): a script renders there, and one past its memory
// is stopped with a message that says so.
func TestFnStarlark(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	blueprint := func(source string) map[string][]byte {
		return map[string][]byte{
			"Kptfile": []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: bp\npipeline:\n  mutators:\n" +
				"  - image: ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5\n    configMap:\n      source: |\n        " + strings.ReplaceAll(source, "\n", "\n        ") + "\n"),
			"cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: \"1\"\n"),
		}
	}
	policy := specialize.ExecPolicy{Sandbox: self, SandboxMemory: 64 << 20}
	ctx := context.Background()
	files, err := specialize.Render(ctx, specialize.Request{Name: "pkg", Exec: policy,
		Blueprint: blueprint("for r in ctx.resource_list[\"items\"]:\n  r[\"data\"][\"a\"] = \"2\"")})
	if err != nil || !strings.Contains(string(files["cm.yaml"]), `a: "2"`) {
		t.Fatalf("Render = %s, %v; want a: \"2\"", files["cm.yaml"], err)
	}
	_, err = specialize.Render(ctx, specialize.Request{Name: "pkg", Exec: policy,
		Blueprint: blueprint("l = []\nfor i in range(100):\n  l.append(\"x\" * (1 << 24) + str(i))")})
	if err == nil || !strings.Contains(err.Error(), "used more than 64 MiB of memory") {
		t.Fatalf("Render of a script past its memory = %v", err)
	}
}

// The controller keeps --starlark-max-memory of its GOMEMLIMIT free for the sandboxed script,
// whose child process counts in the same container; without a limit there is nothing to keep.
func TestReserveMemory(t *testing.T) {
	saved := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(saved) })
	debug.SetMemoryLimit(math.MaxInt64)
	if err := reserveMemory(128 << 20); err != nil || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Fatalf("without a limit: %v, limit %d", err, debug.SetMemoryLimit(-1))
	}
	debug.SetMemoryLimit(512 << 20)
	if err := reserveMemory(128 << 20); err != nil || debug.SetMemoryLimit(-1) != 384<<20 {
		t.Fatalf("512Mi less 128Mi: %v, limit %d", err, debug.SetMemoryLimit(-1))
	}
	debug.SetMemoryLimit(512 << 20)
	if err := reserveMemory(256 << 20); err == nil || !strings.Contains(err.Error(), "half the controller's GOMEMLIMIT") {
		t.Fatalf("half the limit: %v", err)
	}
}
