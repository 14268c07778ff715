package main

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/internal/kubeconn"
	"github.com/flotilla-dev/flotilla/internal/scheme"
)

// apiServer loads the kubeconfig that flag names (path; empty: kubectl's default) and checks that
// its API server answers. Every command that needs a cluster starts here, so each says the same
// one line when there is none (which kubeconfig it tried, and the flag to pass), with exit
// status 2.
func apiServer(ctx context.Context, flag, path string) (*kubeconn.Config, error) {
	cfg, err := kubeconn.Load(flag, path)
	if err == nil {
		err = cfg.Check(ctx)
	}
	if err != nil {
		return nil, cannotRun(err)
	}
	return cfg, nil
}

// kubeClient is a client of the management cluster of the kubeconfig --kubeconfig names (path),
// and the namespace to work in: namespace, else the kubeconfig context's.
func kubeClient(ctx context.Context, path, namespace string) (client.Client, string, error) {
	cfg, err := apiServer(ctx, "--kubeconfig", path)
	if err != nil {
		return nil, "", err
	}
	if namespace == "" {
		namespace = cfg.Namespace
	}
	c, err := client.New(cfg.REST, client.Options{Scheme: scheme.New()})
	return c, namespace, err
}
