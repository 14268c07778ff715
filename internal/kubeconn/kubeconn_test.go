package kubeconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// isolate gives the test an empty home, no $KUBECONFIG and no pod around it.
func isolate(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	return home
}

// ClosedPort is an address on 127.0.0.1 nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func writeKubeconfig(t *testing.T, dir, server, namespace string) string {
	t.Helper()
	p := filepath.Join(dir, "config")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: dev
  cluster: {server: %q}
users:
- name: dev
  user: {token: s3cret}
contexts:
- name: dev
  context: {cluster: dev, user: dev, namespace: %q}
current-context: dev
`, server, namespace)
	if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadFails(t *testing.T) {
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T, home string) (path string)
		want   string
		prefix bool
	}{{
		name:  "no kubeconfig at all",
		setup: func(*testing.T, string) string { return "" },
		want:  "no kubeconfig: HOME/.kube/config does not exist, $KUBECONFIG is not set and this is not a pod with a service account; pass --kubeconfig FILE or set KUBECONFIG",
	}, {
		name: "$KUBECONFIG names a missing file",
		setup: func(t *testing.T, home string) string {
			t.Setenv("KUBECONFIG", filepath.Join(home, "nope"))
			return ""
		},
		want: "no kubeconfig: $KUBECONFIG names HOME/nope, which does not exist (and this is not a pod with a service account); pass --kubeconfig FILE or set KUBECONFIG",
	}, {
		name:  "--kubeconfig names a missing file",
		setup: func(_ *testing.T, home string) string { return filepath.Join(home, "nope") },
		want:  "kubeconfig HOME/nope (--kubeconfig) does not exist; pass --kubeconfig FILE naming a kubeconfig",
	}, {
		name: "a kubeconfig without a current context",
		setup: func(t *testing.T, home string) string {
			p := filepath.Join(home, "empty")
			if err := os.WriteFile(p, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		},
		want: "kubeconfig HOME/empty names no cluster (no current-context); run kubectl config use-context NAME, or pass --kubeconfig FILE",
	}, {
		name: "a current context that does not exist",
		setup: func(t *testing.T, home string) string {
			p := filepath.Join(home, "config")
			if err := os.WriteFile(p, []byte("apiVersion: v1\nkind: Config\ncurrent-context: gone\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		},
		want: `kubeconfig HOME/config: its current-context "gone" is not one of its contexts; run kubectl config use-context NAME, or pass --kubeconfig FILE`,
	}, {
		name: "not a kubeconfig",
		setup: func(t *testing.T, home string) string {
			p := filepath.Join(home, "config")
			if err := os.WriteFile(p, []byte("clusters: 3\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		},
		// The decoder's words after the parenthesis are client-go's.
		want:   "kubeconfig HOME/config is not a valid kubeconfig (json: cannot unmarshal number",
		prefix: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			home := isolate(t)
			_, err := Load("--kubeconfig", tc.setup(t, home))
			var kerr *Error
			if !errors.As(err, &kerr) {
				t.Fatalf("err = %v (%T), want *Error", err, err)
			}
			got := strings.ReplaceAll(err.Error(), home, "HOME")
			if tc.prefix && strings.HasPrefix(got, tc.want) && strings.Count(got, "\n") == 0 {
				return
			}
			if got != tc.want {
				t.Errorf("error:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	home := isolate(t)
	if err := os.MkdirAll(filepath.Join(home, ".kube"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeKubeconfig(t, filepath.Join(home, ".kube"), "https://home.example:6443", "fleet")
	other := writeKubeconfig(t, t.TempDir(), "https://other.example:6443", "")

	c, err := Load("--kubeconfig", "")
	if err != nil {
		t.Fatal(err)
	}
	if c.REST.Host != "https://home.example:6443" || c.Namespace != "fleet" || c.Source != filepath.Join(home, ".kube", "config") || c.Context != "dev" {
		t.Errorf("~/.kube/config: host %s, namespace %s, source %s, context %s", c.REST.Host, c.Namespace, c.Source, c.Context)
	}
	t.Setenv("KUBECONFIG", other)
	if c, err = Load("--kubeconfig", ""); err != nil || c.REST.Host != "https://other.example:6443" || c.Namespace != "default" || c.Source != "$KUBECONFIG ("+other+")" {
		t.Errorf("$KUBECONFIG: %+v, %v", c, err)
	}
}

func TestCheck(t *testing.T) {
	status := func(code int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/version" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			if code == http.StatusOK {
				fmt.Fprint(w, `{"major":"1","minor":"37","gitVersion":"v1.37.2"}`)
				return
			}
			fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"nope","code":%d}`, code)
		}
	}
	serve := func(t *testing.T, h http.Handler) string {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv.URL
	}
	tls := httptest.NewUnstartedServer(status(http.StatusOK)) // its certificate is in no kubeconfig
	tls.Config.ErrorLog = log.New(io.Discard, "", 0)
	tls.StartTLS()
	t.Cleanup(tls.Close)
	closed := closedPort(t)
	for _, tc := range []struct {
		name   string
		server func(t *testing.T) string
		want   string // "" for no error
	}{
		{"answers", func(t *testing.T) string { return serve(t, status(http.StatusOK)) }, ""},
		{"/version is not public", func(t *testing.T) string { return serve(t, status(http.StatusForbidden)) }, ""},
		{"closed port", func(*testing.T) string { return "https://" + closed },
			`cannot reach the API server SERVER (context "dev" of KUBECONFIG): connection refused; check that the cluster is running and reachable, or pass --kubeconfig FILE for another cluster`},
		{"credentials refused", func(t *testing.T) string { return serve(t, status(http.StatusUnauthorized)) },
			`the API server SERVER (context "dev" of KUBECONFIG) refuses the kubeconfig's credentials (401 Unauthorized); renew them, or pass --kubeconfig FILE for another cluster`},
		{"unhealthy", func(t *testing.T) string { return serve(t, status(http.StatusServiceUnavailable)) },
			`the API server SERVER (context "dev" of KUBECONFIG) answers GET /version with 503 Service Unavailable; check the cluster's health, or pass --kubeconfig FILE for another cluster`},
		{"certificate not trusted", func(*testing.T) string { return tls.URL },
			`cannot reach the API server SERVER (context "dev" of KUBECONFIG): its certificate is signed by an authority the kubeconfig does not trust (certificate-authority-data); check that the cluster is running and reachable, or pass --kubeconfig FILE for another cluster`},
		{"plain http", func(t *testing.T) string {
			return "https://" + strings.TrimPrefix(serve(t, status(http.StatusOK)), "http://")
		},
			`cannot reach the API server SERVER (context "dev" of KUBECONFIG): http: server gave HTTP response to HTTPS client; check that the cluster is running and reachable, or pass --kubeconfig FILE for another cluster`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolate(t)
			server := tc.server(t)
			path := writeKubeconfig(t, t.TempDir(), server, "")
			c, err := Load("--kubeconfig", path)
			if err != nil {
				t.Fatal(err)
			}
			err = c.Check(context.Background())
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			var kerr *Error
			if !errors.As(err, &kerr) {
				t.Fatalf("err = %v (%T), want *Error", err, err)
			}
			got := strings.NewReplacer(path, "KUBECONFIG", server, "SERVER").Replace(err.Error())
			if got != tc.want {
				t.Errorf("error:\n got %s\nwant %s", got, tc.want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the error shows the token: %s", err)
			}
		})
	}
}

func TestCheckKeepsTheCause(t *testing.T) {
	isolate(t)
	c, err := Load("--target-kubeconfig", writeKubeconfig(t, t.TempDir(), "https://"+closedPort(t), ""))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Check(context.Background())
	if !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), "pass --target-kubeconfig FILE") {
		t.Errorf("err = %v, want ECONNREFUSED and the advice for --target-kubeconfig", err)
	}
}
