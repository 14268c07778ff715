// Package kubeconn connects flotilla's commands and its controller to a Kubernetes API server: it
// loads the kubeconfig as kubectl does, checks that the server answers, and turns each way that
// fails into one line that says which kubeconfig was tried and what to do, never a client
// library's internal message.
package kubeconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/homedir"
)

// CheckTimeout bounds Check: a server that accepts connections and never answers is unreachable.
const CheckTimeout = 15 * time.Second

// Error is a kubeconfig that cannot be used, or an API server that does not answer. Its message
// is one line for the user; the cause is kept for errors.Is and errors.As.
type Error struct {
	msg string
	err error
}

func (e *Error) Error() string { return e.msg }
func (e *Error) Unwrap() error { return e.err }

// Config is a kubeconfig loaded for one API server.
type Config struct {
	// REST is the client configuration.
	REST *rest.Config
	// Namespace is the context's namespace ("default" when it names none).
	Namespace string
	// Source says where the configuration came from: the file(s), or the pod's service account.
	Source string
	// Context is the kubeconfig context in use ("" in a pod).
	Context string
	// flag is the command-line flag that names a kubeconfig, for the advice in messages.
	flag string
}

// Load reads the kubeconfig at path, which flag (e.g. "--kubeconfig") names on the command line.
// Without a path it reads $KUBECONFIG, else ~/.kube/config, else, in a pod, its service account:
// kubectl's order.
func Load(flag, path string) (*Config, error) {
	rules, source := loadingRules(path)
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	cfg, err := cc.ClientConfig()
	if err != nil {
		current := ""
		if raw, rerr := cc.RawConfig(); rerr == nil {
			current = raw.CurrentContext
		}
		return nil, loadError(flag, path, rules, source, current, err)
	}
	c := &Config{REST: cfg, Source: source, flag: flag}
	if raw, err := cc.RawConfig(); err == nil {
		c.Context = raw.CurrentContext
	}
	if len(existing(rules.Precedence)) == 0 && path == "" {
		c.Source, c.Context = "the pod's service account", ""
	}
	if c.Namespace, _, err = cc.Namespace(); err != nil {
		return nil, &Error{msg: fmt.Sprintf("%s: no namespace: %s; pass -n NAMESPACE", c.Source, cause(err)), err: err}
	}
	return c, nil
}

// loadingRules are kubectl's default rules read now (client-go's defaults read $HOME once, when
// the program starts) and without their warnings: Load reports what went wrong itself.
func loadingRules(path string) (*clientcmd.ClientConfigLoadingRules, string) {
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: path, Warner: func(error) {}}
	switch env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); {
	case path != "":
		return rules, path
	case env != "":
		rules.Precedence = filepath.SplitList(env)
		return rules, "$KUBECONFIG (" + env + ")"
	default:
		home := filepath.Join(homedir.HomeDir(), clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)
		rules.Precedence = []string{home}
		return rules, home
	}
}

func loadError(flag, path string, rules *clientcmd.ClientConfigLoadingRules, source, current string, err error) error {
	fix := fmt.Sprintf("pass %s FILE", flag)
	if path == "" {
		fix += " or set KUBECONFIG"
	}
	var msg string
	switch {
	case path != "" && errors.Is(err, os.ErrNotExist):
		msg = fmt.Sprintf("kubeconfig %s (%s) does not exist; %s naming a kubeconfig", path, flag, fix)
	case clientcmd.IsEmptyConfig(err) && len(existing(rules.Precedence)) == 0 && path == "":
		if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
			msg = fmt.Sprintf("no kubeconfig: $KUBECONFIG names %s, which does not exist (and this is not a pod with a service account); %s", env, fix)
		} else {
			msg = fmt.Sprintf("no kubeconfig: %s does not exist, $KUBECONFIG is not set and this is not a pod with a service account; %s", source, fix)
		}
	case clientcmd.IsEmptyConfig(err):
		msg = fmt.Sprintf("kubeconfig %s names no cluster (no current-context); run kubectl config use-context NAME, or %s", source, fix)
	case clientcmd.IsContextNotFound(err):
		msg = fmt.Sprintf("kubeconfig %s: its current-context %q is not one of its contexts; run kubectl config use-context NAME, or %s", source, current, fix)
	case strings.HasPrefix(err.Error(), "error loading config file "):
		// client-go's wording (an fmt.Errorf with %v: nothing to unwrap), a file it cannot decode.
		file, detail, _ := strings.Cut(strings.TrimPrefix(err.Error(), "error loading config file "), ": ")
		msg = fmt.Sprintf("kubeconfig %s is not a valid kubeconfig (%s); fix it, or %s", strings.Trim(file, `"`), detail, fix)
	default:
		msg = fmt.Sprintf("kubeconfig %s cannot be used: %s; fix it, or %s", source, cause(err), fix)
	}
	return &Error{msg: msg, err: err}
}

// existing are the files that exist among paths.
func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// Check asks the API server for its version, within CheckTimeout: a server that cannot be
// reached, whose certificate is not trusted, or that refuses the kubeconfig's credentials is an
// *Error. A server that answers 403 (its /version is not public) is reachable.
func (c *Config) Check(ctx context.Context) error {
	cfg := rest.CopyConfig(c.REST)
	cfg.Timeout = CheckTimeout
	d, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return c.serverError(err)
	}
	ctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	err = d.RESTClient().Get().AbsPath("/version").Do(ctx).Error()
	if err == nil || apierrors.IsForbidden(err) {
		return nil
	}
	return c.serverError(err)
}

func (c *Config) serverError(err error) error {
	where := c.Source
	if c.Context != "" {
		where = fmt.Sprintf("context %q of %s", c.Context, c.Source)
	}
	fix := fmt.Sprintf("pass %s FILE for another cluster", c.flag)
	var status apierrors.APIStatus
	var msg string
	switch {
	case apierrors.IsUnauthorized(err):
		msg = fmt.Sprintf("the API server %s (%s) refuses the kubeconfig's credentials (401 Unauthorized); renew them, or %s", c.REST.Host, where, fix)
	case errors.As(err, &status):
		code := int(status.Status().Code)
		msg = fmt.Sprintf("the API server %s (%s) answers GET /version with %d %s; check the cluster's health, or %s", c.REST.Host, where, code, http.StatusText(code), fix)
	default:
		msg = fmt.Sprintf("cannot reach the API server %s (%s): %s; check that the cluster is running and reachable, or %s", c.REST.Host, where, cause(err), fix)
	}
	return &Error{msg: msg, err: err}
}

// cause is the part of a client error a user can act on: "connection refused", not the URL and
// the dial that were attempted.
func cause(err error) string {
	var (
		dns       *net.DNSError
		errno     syscall.Errno
		authority x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		record    tls.RecordHeaderError
		netErr    net.Error
		urlErr    *url.Error
		agg       utilerrors.Aggregate
	)
	switch {
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return "no such host " + dns.Name
		}
		return "cannot resolve " + dns.Name
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Sprintf("no answer within %s", CheckTimeout)
	case errors.As(err, &errno):
		return errno.Error() // connection refused, no route to host, ...
	case errors.As(err, &authority):
		return "its certificate is signed by an authority the kubeconfig does not trust (certificate-authority-data)"
	case errors.As(err, &hostname):
		return "its certificate is not valid for " + hostname.Host
	case errors.As(err, &invalid):
		if invalid.Reason == x509.Expired {
			return "its certificate has expired or is not yet valid"
		}
		return "its certificate is invalid"
	case errors.As(err, &record):
		return "it does not speak TLS (a plain http:// server?)"
	case errors.As(err, &agg):
		msgs := make([]string, 0, len(agg.Errors()))
		for _, e := range agg.Errors() {
			msgs = append(msgs, cause(e))
		}
		return strings.Join(msgs, "; ")
	case errors.As(err, &urlErr):
		return cause(urlErr.Err)
	}
	return err.Error()
}
