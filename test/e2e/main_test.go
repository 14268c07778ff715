// Package e2e runs flotilla end to end: a real API server (envtest), a real smart-HTTP git
// server, the flotilla controller, and Flux's source-controller and kustomize-controller as
// local processes applying what flotilla publishes. Each test is a user story checked on what a
// user would see in the cluster.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/internal/testenv"
)

var (
	// env is the management cluster: flotilla's objects and controller.
	env *testenv.Env
	// workload is the workload cluster: Flux runs against it and applies what flotilla publishes.
	workload *testenv.Workload
	// kubeconfig lets Flux and flotilla (through kubeConfigSecretRef) reach the workload cluster.
	kubeconfig []byte
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if env, err = testenv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	work, err := os.MkdirTemp("", "flotilla-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(work)
	if workload, err = testenv.StartWorkload(work); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = workload.Stop() }()
	kubeconfig = workload.Kubeconfig

	stop, err := env.StartManager(filepath.Join(work, "git-cache"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if code != 0 {
		workload.DumpLogs(os.Stderr, "workload")
	}
	if err := stop(); err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		return 1
	}
	return code
}

// namespace creates a namespace in the management and the workload cluster.
func namespace(ctx context.Context, name string) error {
	for _, e := range []*testenv.Env{env, workload.Env} {
		if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			return err
		}
	}
	return nil
}
