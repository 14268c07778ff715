package specialize

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
	allow := ExecPolicy{Allowed: []string{bin}, Timeout: 30 * time.Second}

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
		Name:      "web", Exec: ExecPolicy{Allowed: []string{script}, Timeout: 200 * time.Millisecond},
	})
	if err == nil || !strings.Contains(err.Error(), "timed out after 200ms") {
		t.Fatalf("err = %v, want a timeout", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("the render waited %s for a function with a 200ms timeout", time.Since(start))
	}
}

func TestResolveExec(t *testing.T) {
	// PATH as a table: "sed" is /usr/bin/sed, "busybox" /bin/busybox; "dot" resolves to the
	// working directory, which exec.LookPath reports as an error.
	lookPath := func(name string) (string, error) {
		switch name {
		case "sed":
			return "/usr/bin/sed", nil
		case "busybox":
			return "/bin/busybox", nil
		case "dot":
			return "./dot", exec.ErrDot
		}
		return "", exec.ErrNotFound
	}
	tests := []struct {
		name    string
		allowed []string
		exec    string
		want    string // the file that runs; empty when refused
		wantErr []string
	}{
		{name: "nothing allowed", exec: "/bin/cat", wantErr: []string{"not allowed", "--allow-exec-functions", `adds "/bin/cat"`}},
		{name: "nothing allowed, bare name", exec: "sed", wantErr: []string{"not allowed", `adds "sed" (or "/usr/bin/sed")`}},
		{name: "bare name", allowed: []string{"sed"}, exec: "sed", want: "/usr/bin/sed"},
		{name: "bare name allowed by its path", allowed: []string{"/usr/bin/sed"}, exec: "sed", want: "/usr/bin/sed"},
		{name: "path allowed by the bare name it resolves to", allowed: []string{"sed"}, exec: "/usr/bin/sed", want: "/usr/bin/sed"},
		{name: "path", allowed: []string{"/opt/fns/fn"}, exec: "/opt/fns/fn", want: "/opt/fns/fn"},
		{name: "allowlist entry is cleaned", allowed: []string{"/opt//fns/./fn"}, exec: "/opt/fns/fn", want: "/opt/fns/fn"},
		{name: "dot-dot to the allowed file runs the cleaned path", allowed: []string{"/opt/fns/fn"}, exec: "/opt/fns/v2/../fn", want: "/opt/fns/fn"},
		{name: "dot-dot out of the allowed directory", allowed: []string{"/opt/fns/fn"}, exec: "/opt/fns/../../tmp/fn", wantErr: []string{"not allowed", `"/opt/fns/../../tmp/fn"`}},
		{name: "a bare name allows no other file of that name", allowed: []string{"sed"}, exec: "/tmp/evil/sed", wantErr: []string{"not allowed"}},
		{name: "another file of an allowed directory", allowed: []string{"/opt/fns/fn"}, exec: "/opt/fns/other", wantErr: []string{"not allowed"}},
		{name: "a link to an allowed multi-call binary is not that binary", allowed: []string{"busybox"}, exec: "/bin/sh", wantErr: []string{"not allowed"}},
		{name: "allowed name missing from PATH", allowed: []string{"kubeval"}, exec: "kubeval", wantErr: []string{"allowed, but kubeval is not found on the controller's PATH"}},
		{name: "name resolving to the working directory", allowed: []string{"dot"}, exec: "dot", wantErr: []string{"not found on the controller's PATH"}},
		{name: "relative path", allowed: []string{"/opt/fns/fn"}, exec: "fns/fn", wantErr: []string{`"fns/fn" must be absolute or a command on PATH`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ExecPolicy{Allowed: tt.allowed}.resolveExec(tt.exec, lookPath)
			if len(tt.wantErr) == 0 {
				if err != nil || got != tt.want {
					t.Fatalf("resolveExec(%q) = %q, %v; want %q", tt.exec, got, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("resolveExec(%q) = %q, want an error", tt.exec, got)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestCheckExecAllowlist(t *testing.T) {
	if err := CheckExecAllowlist([]string{"sed", "/usr/local/bin/kubeconform"}); err != nil {
		t.Errorf("valid allowlist: %v", err)
	}
	for entry, want := range map[string]string{
		"":            "empty entry",
		"bin/fn":      "must be absolute",
		"./fn":        "must be absolute",
		"/bin/fn --x": "name only the executable",
		"true":        "not true or false",
	} {
		if err := CheckExecAllowlist([]string{"sed", entry}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckExecAllowlist(%q) = %v, want an error containing %q", entry, err, want)
		}
	}
}

// writeScript writes an executable shell script into a new temporary directory.
func writeScript(t *testing.T, body string) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "fn.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script
}

// The function sees PATH and nothing else of the controller's environment (in a pod: the
// KUBERNETES_* service variables and whatever credentials are set), and runs in an empty
// directory of its own that is removed afterwards.
func TestExecFunctionEnvironment(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
	t.Setenv("KUBERNETES_SERVICE_PORT", "443")
	t.Setenv("FLOTILLA_TEST_TOKEN", "secret-token-value")
	report := t.TempDir()
	script := writeScript(t, "env > "+report+"/env\npwd > "+report+"/pwd\nls -A > "+report+"/ls\nexec cat\n")
	if _, err := Render(context.Background(), Request{
		Blueprint: execPackage("  - exec: " + script + "\n"),
		Name:      "web", Exec: ExecPolicy{Allowed: []string{script}, Timeout: 30 * time.Second},
	}); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(report, name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	env := read("env")
	if !strings.Contains(env, "PATH="+os.Getenv("PATH")) {
		t.Errorf("the function did not get PATH:\n%s", env)
	}
	if strings.Contains(env, "secret-token-value") || strings.Contains(env, "KUBERNETES_") {
		t.Errorf("the controller's environment reached the function:\n%s", env)
	}
	// Besides PATH, only what the shell sets itself.
	for line := range strings.Lines(env) {
		key, _, _ := strings.Cut(line, "=")
		switch key {
		case "PATH", "PWD", "OLDPWD", "SHLVL", "_":
		default:
			t.Errorf("the function sees %s", key)
		}
	}
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir := read("pwd")
	if dir == cwd || dir == "/" {
		t.Errorf("the function ran in %s, want a directory of its own", dir)
	}
	if ls := read("ls"); ls != "" {
		t.Errorf("the function's working directory held files:\n%s", ls)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the function's working directory %s is left behind: %v", dir, err)
	}
}

// A function that writes without end is stopped at the output bound, well before its timeout, and
// what the controller keeps of its output does not grow past the bound.
func TestExecFunctionOutputBound(t *testing.T) {
	const limit = 1 << 20
	for stream, body := range map[string]string{
		"stdout": "exec cat /dev/zero\n",
		"stderr": "exec cat /dev/zero >&2\n",
		"both":   "yes stdout &\nyes stderr >&2\n",
	} {
		t.Run(stream, func(t *testing.T) {
			script := writeScript(t, body)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err := Render(context.Background(), Request{
				Blueprint: execPackage("  - exec: " + script + "\n"),
				Name:      "web", Exec: ExecPolicy{Allowed: []string{script}, Timeout: time.Minute, MaxOutput: limit},
			})
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), "wrote more than 1 MiB to stdout and stderr") || !strings.Contains(err.Error(), script) {
				t.Fatalf("err = %v, want the output bound naming the function", err)
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("the function was stopped after %s, not at its output bound", d)
			}
			// Everything the render allocated, the function's output included: a few copies of
			// the bound at most, where an unbounded buffer would hold gigabytes by now.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16*limit {
				t.Errorf("the render allocated %d MiB for a function bounded at 1 MiB", alloc>>20)
			}
		})
	}
}

func TestBoundedWriter(t *testing.T) {
	stopped := 0
	out := &boundedOutput{limit: 10, stop: func() { stopped++ }}
	stdout, stderr := &boundedWriter{out: out}, &boundedWriter{out: out}
	if n, err := stdout.Write([]byte("123456")); n != 6 || err != nil {
		t.Fatalf("first write = %d, %v", n, err)
	}
	if n, err := stderr.Write([]byte("abcdef")); n != 4 || !errors.Is(err, errOutputLimit) {
		t.Fatalf("write past the shared bound = %d, %v; want 4, errOutputLimit", n, err)
	}
	if n, err := stdout.Write([]byte("x")); n != 0 || !errors.Is(err, errOutputLimit) {
		t.Fatalf("write after the bound = %d, %v; want 0, errOutputLimit", n, err)
	}
	if got := stdout.buf.String() + "|" + stderr.buf.String(); got != "123456|abcd" || stopped != 1 || !out.exceeded() {
		t.Errorf("kept %q, stopped %d times, exceeded %v; want \"123456|abcd\", once, true", got, stopped, out.exceeded())
	}
}

// Exec functions not on the allowlist are refused before anything runs, with a message naming the
// function and the flag that allows it.
func TestExecFunctionNotAllowed(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	script := writeScript(t, "touch "+marker+"\nexec cat\n")
	allowedOther := writeScript(t, "exec cat\n")
	for name, policy := range map[string]ExecPolicy{
		"nothing allowed":       {},
		"another file allowed":  {Allowed: []string{allowedOther}},
		"its directory allowed": {Allowed: []string{filepath.Dir(script)}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Render(context.Background(), Request{Blueprint: execPackage("  - exec: " + script + "\n"), Name: "web", Exec: policy})
			if err == nil || !strings.Contains(err.Error(), `function "`+script+`"`) || !strings.Contains(err.Error(), "--allow-exec-functions") {
				t.Fatalf("err = %v, want a refusal naming the function and the flag", err)
			}
			if _, err := os.Stat(marker); !os.IsNotExist(err) {
				t.Errorf("the refused function ran")
			}
		})
	}
}

// A function that exits but leaves a process running in the background does not leave it behind:
// the rest of its process group is killed once it has exited.
func TestExecFunctionLeavesNothingRunning(t *testing.T) {
	report := t.TempDir()
	script := writeScript(t, "sleep 300 </dev/null >/dev/null 2>&1 &\necho $! > "+report+"/pid\nexec cat\n")
	if _, err := Render(context.Background(), Request{
		Blueprint: execPackage("  - exec: " + script + "\n"),
		Name:      "web", Exec: ExecPolicy{Allowed: []string{script}, Timeout: 30 * time.Second},
	}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(report, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid := strings.TrimSpace(string(b))
	deadline := time.Now().Add(5 * time.Second)
	for {
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		// Gone, or a zombie waiting for init to reap it.
		if err != nil || strings.Contains(string(stat), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the function's background process %s still runs: %s", pid, stat)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
