package remotecluster

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ErrKubeconfigRefused is wrapped by every error about a kubeconfig that asks flotilla to run a
// process or read a file of the controller's machine. A kubeconfig Secret is written by a tenant:
// client-go would run its exec plugin and read its file paths (tokenFile, certificates, keys) as
// the controller, so only embedded data is accepted.
var ErrKubeconfigRefused = errors.New("kubeconfig refused")

// Policy says what a tenant's kubeconfig may ask for beyond embedded data. The zero value refuses
// exec and auth-provider plugins; file references are always refused.
type Policy struct {
	// AllowExec lets exec and auth-provider plugins run (controller flag
	// --insecure-kubeconfig-exec): they run as the controller, with its environment.
	AllowExec bool
}

// RESTConfig parses a kubeconfig held in a Secret and returns the client configuration of its
// current context, after refusing everything the policy does not allow. Nothing in the kubeconfig
// is acted on (no file opened, no plugin started) before every entry passed the check.
func (p Policy) RESTConfig(data []byte) (*rest.Config, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		// The parse error may quote the kubeconfig.
		return nil, errors.New("not a valid kubeconfig")
	}
	if err := p.Check(cfg); err != nil {
		return nil, err
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		// client-go's messages may quote values (a proxy-url with its user info): say only what
		// to fix.
		switch {
		case clientcmd.IsEmptyConfig(err):
			return nil, errors.New("unusable kubeconfig: it is empty")
		case clientcmd.IsContextNotFound(err):
			return nil, errors.New("unusable kubeconfig: its current-context names no context")
		}
		return nil, errors.New("unusable kubeconfig: its current context must name a cluster with a valid server (and proxy-url) and a user with embedded credentials")
	}
	if rc.Timeout <= 0 || rc.Timeout > RequestTimeout {
		// A workload cluster that accepts a connection and never answers must not hold a
		// worker: every request to it (lists, applies, version) is bounded.
		rc.Timeout = RequestTimeout
	}
	return rc, nil
}

// RequestTimeout bounds each request to a workload cluster's API server.
const RequestTimeout = 30 * time.Second

// Check refuses exec and auth-provider plugins (unless AllowExec) and every file reference, in
// every user and cluster entry of cfg, whether or not the current context uses it: entries are
// named in the message, values never (they may be secrets).
func (p Policy) Check(cfg *clientcmdapi.Config) error {
	var refused []string
	for _, name := range slices.Sorted(maps.Keys(cfg.AuthInfos)) {
		a := cfg.AuthInfos[name]
		if a == nil {
			continue
		}
		if a.Exec != nil && !p.AllowExec {
			refused = append(refused, fmt.Sprintf("user %q: exec plugins are not allowed", name))
		}
		if a.AuthProvider != nil && !p.AllowExec {
			refused = append(refused, fmt.Sprintf("user %q: auth-provider plugins are not allowed", name))
		}
		for field, path := range map[string]string{"tokenFile": a.TokenFile, "client-certificate": a.ClientCertificate, "client-key": a.ClientKey} {
			if path != "" {
				refused = append(refused, fmt.Sprintf("user %q: %s (a file path) is not allowed; embed the data instead", name, field))
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Clusters)) {
		if c := cfg.Clusters[name]; c != nil && c.CertificateAuthority != "" {
			refused = append(refused, fmt.Sprintf("cluster %q: certificate-authority (a file path) is not allowed; use certificate-authority-data", name))
		}
	}
	if len(refused) == 0 {
		return nil
	}
	slices.Sort(refused)
	msg := strings.Join(refused, "; ")
	if !p.AllowExec && strings.Contains(msg, "plugins are not allowed") {
		msg += " (the operator may allow plugins with the controller flag --insecure-kubeconfig-exec)"
	}
	return fmt.Errorf("%w: %s", ErrKubeconfigRefused, msg)
}

// Reason is the condition reason for an error from Clients: KubeconfigRefused for a kubeconfig the
// policy refuses, KubeconfigInvalid for a missing or unusable Secret, KindNotServed for a kind the
// cluster does not serve, otherwise fallback (the cluster could not be reached or refused the
// request).
func Reason(err error, fallback string) string {
	switch {
	case errors.Is(err, ErrKubeconfigRefused):
		return "KubeconfigRefused"
	case errors.Is(err, ErrKubeconfig):
		return "KubeconfigInvalid"
	case errors.Is(err, ErrKindNotServed):
		return "KindNotServed"
	}
	return fallback
}
