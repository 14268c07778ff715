package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

func TestDashboardWithoutKubeconfig(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	cmd := dashboardCmd()
	cmd.SetArgs(nil)
	cmd.SetOut(io.Discard)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no kubeconfig:") || !strings.Contains(err.Error(), "pass --kubeconfig FILE") {
		t.Fatalf("flotilla dashboard without a kubeconfig: %v", err)
	}
}

// TestDashboardCommand runs flotilla dashboard against a real API server: it prints the URL of a
// loopback address, serves the namespace's fleet from its watch, and stops with its context.
func TestDashboardCommand(t *testing.T) {
	env := startAPIServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}},
		&v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Name: "edge01", Namespace: "fleet"}, Spec: v1alpha1.WorkloadClusterSpec{Repository: v1alpha1.LocalObjectReference{Name: "edge01"}}},
	} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	kubeconfig := adminKubeconfigFile(t, env, "dashboard")

	pr, pw := io.Pipe()
	cmd := dashboardCmd()
	cmd.SetArgs([]string{"--kubeconfig", kubeconfig, "-n", "fleet", "--bind-address", "127.0.0.1:0"})
	cmd.SetOut(pw)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- cmd.ExecuteContext(runCtx)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("read the URL: %v (command: %v)", err, <-done)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	url := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).FindString(line)
	if url == "" || !strings.Contains(line, "namespace fleet") {
		t.Fatalf("flotilla dashboard printed %q, want the URL of namespace fleet on 127.0.0.1", line)
	}
	resp, err := http.Get(url + "api/fleet")
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		Total int `json:"total"`
		Rows  []struct {
			Name string `json:"name"`
		} `json:"rows"`
	}
	err = json.NewDecoder(resp.Body).Decode(&page)
	resp.Body.Close()
	if err != nil || page.Total != 1 || page.Rows[0].Name != "edge01" {
		t.Errorf("GET /api/fleet: %+v, %v; want edge01", page, err)
	}
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("flotilla dashboard stopped with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("flotilla dashboard did not stop with its context")
	}
}
