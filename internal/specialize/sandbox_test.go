package specialize

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestMain lets the test binary serve "fn starlark" as the flotilla binary does, so the sandbox
// runs here as in the controller: a child process of the binary that runs it.
func TestMain(m *testing.M) {
	if len(os.Args) == 5 && os.Args[1] == "fn" && os.Args[2] == "starlark" && os.Args[3] == "--max-memory" {
		limit, err := strconv.ParseInt(os.Args[4], 10, 64)
		if err != nil {
			os.Exit(2)
		}
		os.Exit(ServeStarlark(context.Background(), os.Stdin, os.Stdout, os.Stderr, limit))
	}
	os.Exit(m.Run())
}

// sandbox is an ExecPolicy running starlark in a child process of this test binary.
func sandbox(t *testing.T, memory int64) ExecPolicy {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return ExecPolicy{Sandbox: self, SandboxMemory: memory}
}

// A script in the sandbox renders exactly what it renders in process (comments and field order
// kept), fails as it does, and is stopped at its memory bound, which the process that runs it
// survives.
func TestSandboxedStarlark(t *testing.T) {
	script := func(lines ...string) map[string][]byte {
		return map[string][]byte{
			"Kptfile": []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: bp\npipeline:\n  mutators:\n" + starlarkFn(lines...)),
			"deploy.yaml": []byte("# the upf\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: upf # its name\n" +
				"spec:\n  replicas: 1 # set by the script\n  selector: {}\n"),
		}
	}
	ctx := context.Background()
	scale := script(`for r in ctx.resource_list["items"]:`, `  if r["kind"] == "Deployment":`, `    r["spec"]["replicas"] = 3`)
	inProcess, err := Render(ctx, Request{Blueprint: scale, Name: "pkg"})
	if err != nil {
		t.Fatal(err)
	}
	sandboxed, err := Render(ctx, Request{Blueprint: scale, Name: "pkg", Exec: sandbox(t, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(inProcess["deploy.yaml"], sandboxed["deploy.yaml"]) || !strings.Contains(string(sandboxed["deploy.yaml"]), "replicas: 3 # set by the script") {
		t.Fatalf("sandboxed:\n%s\nin process:\n%s", sandboxed["deploy.yaml"], inProcess["deploy.yaml"])
	}

	_, err = Render(ctx, Request{Blueprint: script(`fail("no replicas set")`), Name: "pkg", Exec: sandbox(t, 0)})
	if err == nil || !strings.Contains(err.Error(), "no replicas set") {
		t.Fatalf("a failing script in the sandbox: %v", err)
	}

	// 100 strings of 16 MiB: 1.6 GB, within starlark's steps and its 1 GiB per operation.
	_, err = Render(ctx, Request{Blueprint: script("l = []", "for i in range(100):", `  l.append("x" * (1 << 24) + str(i))`), Name: "pkg", Exec: sandbox(t, 64<<20)})
	if err == nil || !strings.Contains(err.Error(), "used more than 64 MiB of memory") {
		t.Fatalf("a script past its memory in the sandbox: %v", err)
	}

	// A recursion without end grows the stack, not the heap; the child's memory counts it.
	_, err = Render(ctx, Request{Blueprint: script("def f(n):", "  return f(n + 1)", "f(0)"), Name: "pkg", Exec: sandbox(t, 0)})
	if err == nil || !strings.Contains(err.Error(), "used more than 128 MiB") {
		t.Fatalf("a script past its stack in the sandbox: %.3000v", err)
	}
}

// What a script prints reaches its error up to a bound, cut between characters.
func TestStarlarkPrintsCutOnACharacter(t *testing.T) {
	blueprint := map[string][]byte{"Kptfile": []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: bp\npipeline:\n  mutators:\n" +
		starlarkFn(`print("x" + "é" * 5000)`, `fail("stop")`))}
	_, err := Render(context.Background(), Request{Blueprint: blueprint, Name: "pkg"})
	if err == nil || !utf8.ValidString(err.Error()) || !strings.Contains(err.Error(), "bytes more)") {
		t.Fatalf("Render = %.200q…; want the print cut between characters", err)
	}
}
