package pkgrepo

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"sync"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"k8s.io/utils/lru"
)

// httpIdlePerHost is how many idle connections to one git server are kept for the next request.
// A fleet's repositories are usually on one server (a GitLab, a Gitea, github.com): the
// Repository polls, publishes and resolves that reach it at once each keep theirs, instead of
// net/http's default of 2, past which every request opens (and TLS-handshakes) a new one.
const httpIdlePerHost = 32

// httpTransports is how many HTTP transports are kept for remotes with their own TLS settings
// (a CA bundle): one per distinct bundle, each with its own connection pool.
const httpTransports = 64

// init makes go-git reach http(s) remotes through httpClients: connections are reused (go-git's
// default keeps no transport for a remote with a CA bundle, so each request to it made a new
// one, with a new connection and TLS handshake, and left it open until it idled out: at 1,000
// Repositories polled every minute, ~17 handshakes a second and ~1,500 open connections), every
// answer is bounded (boundedTransport), and a remote is only ever reached through a connection
// verified against its own CA bundle. go-git's protocol table is global and not synchronized: it
// is set here, before anything reads it.
func init() {
	base := http.DefaultTransport.(*http.Transport).Clone() // proxies from the environment, as before
	base.MaxIdleConnsPerHost = httpIdlePerHost
	c := &httpClients{base: base, plain: newHTTPClient(base)}
	c.byBundle = lru.NewWithEvictionFunc(httpTransports, func(_ lru.Key, v any) {
		v.(*bundleClient).transport.CloseIdleConnections()
	})
	client.InstallProtocol("http", c)
	client.InstallProtocol("https", c)
}

// httpClients is go-git's transport for http(s): a go-git client per CA bundle, each over its own
// net/http transport wrapped in boundedTransport. (go-git's own cache of transports per bundle
// needs its client's transport to be a bare *http.Transport, which leaves no place to bound an
// answer.)
type httpClients struct {
	base  *http.Transport
	plain transport.Transport

	mu       sync.Mutex
	byBundle *lru.Cache // sha256 of the bundle → *bundleClient
}

type bundleClient struct {
	transport *http.Transport
	client    transport.Transport
}

var _ transport.Transport = (*httpClients)(nil)

func newHTTPClient(t *http.Transport) transport.Transport {
	return githttp.NewClient(&http.Client{Transport: boundedTransport{base: t}})
}

func (c *httpClients) NewUploadPackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.UploadPackSession, error) {
	cl, e, err := c.clientFor(ep)
	if err != nil {
		return nil, err
	}
	return cl.NewUploadPackSession(e, auth)
}

func (c *httpClients) NewReceivePackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.ReceivePackSession, error) {
	cl, e, err := c.clientFor(ep)
	if err != nil {
		return nil, err
	}
	return cl.NewReceivePackSession(e, auth)
}

// clientFor returns the client for ep's CA bundle, and ep without it (the client's transport
// holds it).
func (c *httpClients) clientFor(ep *transport.Endpoint) (transport.Transport, *transport.Endpoint, error) {
	if len(ep.ClientCert) > 0 || len(ep.ClientKey) > 0 || ep.InsecureSkipTLS || ep.Proxy.URL != "" {
		return nil, nil, errors.New("http(s) remotes take no client certificate, proxy option or skipped TLS check here") // flotilla sets none
	}
	if len(ep.CaBundle) == 0 {
		return c.plain, ep, nil
	}
	e := *ep
	e.CaBundle = nil
	key := sha256.Sum256(ep.CaBundle)
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.byBundle.Get(key); ok {
		return v.(*bundleClient).client, &e, nil
	}
	// As go-git does: the system's roots and the bundle's.
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	roots.AppendCertsFromPEM(ep.CaBundle)
	t := c.base.Clone()
	if t.TLSClientConfig == nil {
		t.TLSClientConfig = &tls.Config{}
	}
	t.TLSClientConfig.RootCAs = roots
	bc := &bundleClient{transport: t, client: newHTTPClient(t)}
	c.byBundle.Add(key, bc)
	return bc.client, &e, nil
}
