package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla-dev/flotilla/internal/buildinfo"
)

// flotilla runs the command line args as main does, returning stdout, stderr and the exit status.
func flotilla(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), code
}

// noCluster gives the test an empty home, no $KUBECONFIG and no pod around it.
func noCluster(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	return home
}

// unreachableKubeconfig writes a kubeconfig whose server is a closed port on 127.0.0.1 and
// returns its path and the server.
func unreachableKubeconfig(t *testing.T) (string, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server := "https://" + l.Addr().String()
	l.Close()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	kc := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: mgmt\n  cluster: {server: %q}\nusers:\n- name: admin\n  user: {token: s3cret}\ncontexts:\n- name: mgmt\n  context: {cluster: mgmt, user: admin}\ncurrent-context: mgmt\n", server)
	if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p, server
}

// clusterFiles is a directory with a WorkloadCluster edge01 and its Repository, for bootstrap -f.
func clusterFiles(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	objs := `apiVersion: flotilla.dev/v1alpha1
kind: Repository
metadata: {name: edge01}
spec:
  git: {url: https://git.example.com/fleet/edge01.git}
---
apiVersion: flotilla.dev/v1alpha1
kind: WorkloadCluster
metadata: {name: edge01}
spec:
  repository: {name: edge01}
`
	if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(objs), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// clusterCommands are the command lines that need an API server, and the flag that names its
// kubeconfig.
func clusterCommands(t *testing.T) map[string]struct {
	args []string
	flag string
} {
	files := clusterFiles(t)
	type cmd = struct {
		args []string
		flag string
	}
	return map[string]cmd{
		"dashboard":         {[]string{"dashboard"}, "--kubeconfig"},
		"status":            {[]string{"status"}, "--kubeconfig"},
		"status -A -o yaml": {[]string{"status", "-A", "-o", "yaml"}, "--kubeconfig"},
		"rollout resume":    {[]string{"rollout", "resume", "upf"}, "--kubeconfig"},
		"rollout undo":      {[]string{"rollout", "undo", "upf"}, "--kubeconfig"},
		"approve":           {[]string{"approve", "edge01"}, "--kubeconfig"},
		"bootstrap":         {[]string{"bootstrap", "edge01"}, "--kubeconfig"},
		"bootstrap --apply": {[]string{"bootstrap", "edge01", "-f", files, "--apply"}, "--target-kubeconfig"},
		"diff --live":       {[]string{"diff", "-f", files, "--live"}, "--kubeconfig"},
		"controller":        {[]string{"controller", "--metrics-bind-address=0", "--health-probe-bind-address=0"}, "--kubeconfig"},
	}
}

// assertOneLine checks that a command ended with exit status 2 and exactly one line on stderr,
// the error with its prefix.
func assertOneLine(t *testing.T, stderr string, code int, want string) {
	t.Helper()
	if code != exitCannotRun {
		t.Errorf("exit status %d, want %d", code, exitCannotRun)
	}
	if strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
		t.Errorf("stderr is not one line:\n%s", stderr)
	}
	if !strings.HasPrefix(stderr, want) {
		t.Errorf("stderr:\n got %s\nwant %s...", stderr, want)
	}
}

func TestNoKubeconfig(t *testing.T) {
	home := noCluster(t)
	for name, c := range clusterCommands(t) {
		t.Run(name, func(t *testing.T) {
			out, stderr, code := flotilla(t, c.args...)
			want := "error: no kubeconfig: " + filepath.Join(home, ".kube", "config") +
				" does not exist, $KUBECONFIG is not set and this is not a pod with a service account; pass " + c.flag + " FILE or set KUBECONFIG\n"
			assertOneLine(t, stderr, code, want)
			if out != "" {
				t.Errorf("stdout: %q", out)
			}
		})
	}
}

func TestUnreachableAPIServer(t *testing.T) {
	noCluster(t)
	kubeconfig, server := unreachableKubeconfig(t)
	for name, c := range clusterCommands(t) {
		t.Run(name, func(t *testing.T) {
			args := append(c.args, c.flag, kubeconfig)
			_, stderr, code := flotilla(t, args...)
			assertOneLine(t, stderr, code, fmt.Sprintf(`error: cannot reach the API server %s (context "mgmt" of %s): connection refused; check that the cluster is running and reachable, or pass %s FILE for another cluster`+"\n", server, kubeconfig, c.flag))
		})
	}
	t.Run("from $KUBECONFIG", func(t *testing.T) {
		t.Setenv("KUBECONFIG", kubeconfig)
		_, stderr, code := flotilla(t, "status")
		assertOneLine(t, stderr, code, fmt.Sprintf(`error: cannot reach the API server %s (context "mgmt" of $KUBECONFIG (%s)): connection refused;`, server, kubeconfig))
	})
	t.Run("missing --kubeconfig", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "nope")
		_, stderr, code := flotilla(t, "approve", "edge01", "--kubeconfig", missing)
		assertOneLine(t, stderr, code, "error: kubeconfig "+missing+" (--kubeconfig) does not exist; pass --kubeconfig FILE naming a kubeconfig\n")
	})
}

func TestUsageErrors(t *testing.T) {
	noCluster(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"statuz"}, `error: unknown command "statuz" for "flotilla"; did you mean status (see flotilla --help)` + "\n"},
		{[]string{"status", "--bogus"}, "error: unknown flag: --bogus (see flotilla status --help)\n"},
		{[]string{"approve"}, "error: accepts 1 arg(s), received 0 (see flotilla approve --help)\n"},
		{[]string{"publish", "dir"}, `error: required flag(s) "oci" not set (see flotilla publish --help)` + "\n"},
		{[]string{"status", "-o", "wide"}, `error: -o "wide": write table, yaml or json` + "\n"},
		{[]string{"version", "extra"}, `error: unknown command "extra" for "flotilla version" (see flotilla version --help)` + "\n"},
		{[]string{"controller", "--watch-label-selector", "a b c"}, "error: --watch-label-selector: "},
		{[]string{"controller", "--git-max-pack-size", "lots"}, `error: --git-max-pack-size: "lots" is not a quantity (such as 512Mi or 2Gi): `},
		{[]string{"controller", "--git-max-pack-size", "0"}, `error: --git-max-pack-size: "0" is not a positive whole number of bytes` + "\n"},
		{[]string{"controller", "--starlark-max-memory", "lots"}, `error: --starlark-max-memory: "lots" is not a quantity (such as 512Mi or 2Gi): `},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, stderr, code := flotilla(t, tc.args...)
			assertOneLine(t, stderr, code, tc.want)
		})
	}
}

func TestVersion(t *testing.T) {
	out, stderr, code := flotilla(t, "version")
	info := buildinfo.Get()
	want := fmt.Sprintf("flotilla %s\ncommit    %s\ndate      %s\ngo        %s %s\n", info.Version, info.Commit, info.Date, info.GoVersion, info.Platform)
	if code != exitOK || stderr != "" || out != want {
		t.Errorf("flotilla version: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, out, want)
	}
}

// TestVersionStamped builds flotilla with the Makefile's -ldflags and checks what version prints.
func TestVersionStamped(t *testing.T) {
	if testing.Short() {
		t.Skip("builds flotilla")
	}
	want := buildinfo.Info{Version: "v1.2.3-4-gabcdef0-dirty", Commit: "abcdef0123456789abcdef0123456789abcdef01", Date: "2026-01-02T03:04:05Z"}
	bin := filepath.Join(t.TempDir(), "flotilla")
	const pkg = "github.com/flotilla-dev/flotilla/internal/buildinfo"
	ldflags := fmt.Sprintf("-X %s.version=%s -X %s.commit=%s -X %s.date=%s", pkg, want.Version, pkg, want.Commit, pkg, want.Date)
	if out, err := exec.Command("go", "build", "-ldflags", ldflags, "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version", "-o", "json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var got buildinfo.Info
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want.GoVersion, want.Platform = got.GoVersion, got.Platform
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("version -o json (-want +got):\n%s", diff)
	}
	text, err := exec.Command(bin, "version").Output()
	if err != nil || !strings.HasPrefix(string(text), "flotilla "+want.Version+"\ncommit    "+want.Commit+"\n") {
		t.Errorf("version = %q, %v", text, err)
	}
}
