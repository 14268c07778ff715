package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/internal/ocipkg"
	"github.com/flotilla-dev/flotilla/internal/ocitest"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// runPublish runs flotilla publish with args and stdin, returning stdout and the error.
func runPublish(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := publishCmd()
	cmd.SetArgs(args)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

func writePackage(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestPublish(t *testing.T) {
	const user, password = "ci", "s3cret-token"
	reg := ocitest.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != password {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")

	dir := writePackage(t, map[string]string{
		"Kptfile":     "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: web\n",
		"deploy.yaml": "kind: Deployment\n",
		".git/HEAD":   "ref: refs/heads/main\n",
	})
	ref := host + "/team/web:v1"

	out, _, err := runPublish(t, password+"\n", dir, "--oci", ref, "--insecure", "--username", user, "--password-stdin")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^` + regexp.QuoteMeta(host+"/team/web") + `@sha256:[0-9a-f]{64}\n$`).MatchString(out) {
		t.Fatalf("output %q is not IMAGE@DIGEST", out)
	}
	digest := strings.TrimSpace(strings.TrimPrefix(out, host+"/team/web@"))
	opts := ocipkg.Options{Username: user, Password: password, Insecure: true}
	files, err := ocipkg.Fetch(context.Background(), host+"/team/web", digest, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[".git/HEAD"] != nil {
		t.Errorf("published %d files: %v", len(files), files)
	}

	// Credentials from the environment, the same files again: nothing to do, same digest.
	t.Setenv(envOCIUsername, user)
	t.Setenv(envOCIPassword, password)
	again, stderr, err := runPublish(t, "", dir, "--oci", ref, "--insecure")
	if err != nil || again != out || !strings.Contains(stderr, "nothing pushed") {
		t.Errorf("publish again = %q, %q, %v; want %q, nothing pushed", again, stderr, err, out)
	}

	// Other files for a published revision: refused, v1 unchanged.
	if err := os.WriteFile(filepath.Join(dir, "deploy.yaml"), []byte("kind: Deployment # changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = runPublish(t, "", dir, "--oci", ref, "--insecure")
	if !errors.Is(err, pkgrepo.ErrTagExists) || !strings.Contains(err.Error(), digest) || !strings.Contains(err.Error(), "publish a new revision") {
		t.Errorf("publish over v1: err = %v, want ErrTagExists naming %s", err, digest)
	}
	if rev, err := ocipkg.Resolve(context.Background(), host+"/team", "web", "v1", opts); err != nil || rev.Digest != digest {
		t.Errorf("v1 = %+v, %v; want %s", rev, err, digest)
	}

	t.Setenv(envOCIPassword, "wrong-password")
	_, _, err = runPublish(t, "", dir, "--oci", host+"/team/web:v2", "--insecure")
	if !errors.Is(err, pkgrepo.ErrAuthentication) || strings.Contains(err.Error(), "wrong-password") {
		t.Errorf("wrong password: err = %v", err)
	}
}

func TestPublishRefuses(t *testing.T) {
	pkg := writePackage(t, map[string]string{"Kptfile": "kind: Kptfile\n"})
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
		env   map[string]string
		want  string
	}{
		{"no Kptfile", []string{writePackage(t, map[string]string{"a.yaml": "x"}), "--oci", "localhost:5000/team/web:v1"}, "", nil, "has no Kptfile"},
		{"no --oci", []string{pkg}, "", nil, `required flag(s) "oci" not set`},
		{"not a revision", []string{pkg, "--oci", "localhost:5000/team/web:latest"}, "", nil, "is not a revision"},
		{"username without password", []string{pkg, "--oci", "localhost:5000/team/web:v1", "--username", "u"}, "", nil, "--password-stdin"},
		{"password without username", []string{pkg, "--oci", "localhost:5000/team/web:v1"}, "", map[string]string{envOCIPassword: "p"}, "--username"},
		{"empty stdin", []string{pkg, "--oci", "localhost:5000/team/web:v1", "--username", "u", "--password-stdin"}, "", nil, "standard input is empty"},
		{"missing dir", []string{filepath.Join(pkg, "nope"), "--oci", "localhost:5000/team/web:v1"}, "", nil, "no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(envOCIUsername, "")
			t.Setenv(envOCIPassword, "")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, _, err := runPublish(t, tc.stdin, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
}
