package pkgrepo

import (
	"net/http"

	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// httpIdlePerHost is how many idle connections to one git server are kept for the next request.
// A fleet's repositories are usually on one server (a GitLab, a Gitea, github.com): the
// Repository polls, publishes and resolves that reach it at once each keep theirs, instead of
// net/http's default of 2, past which every request opens (and TLS-handshakes) a new one.
const httpIdlePerHost = 32

// httpTransports is how many HTTP transports go-git keeps for remotes with their own TLS
// settings (a CA bundle): one per distinct bundle, each with its own connection pool.
const httpTransports = 64

// init makes go-git reach http(s) remotes through one client that reuses connections: go-git's
// default keeps no transport for a remote with a CA bundle, so each request to it made a new
// one, with a new connection and TLS handshake, and left it open until it idled out (at 1,000
// Repositories polled every minute, ~17 handshakes a second and ~1,500 open connections).
// Transports are kept per CA bundle (go-git's cache keys them by it), so a remote is only ever
// reached through a connection verified against its own bundle. go-git's protocol table is
// global and not synchronized: it is set here, before anything reads it.
func init() {
	t := http.DefaultTransport.(*http.Transport).Clone() // proxies from the environment, as before
	t.MaxIdleConnsPerHost = httpIdlePerHost
	c := githttp.NewClientWithOptions(&http.Client{Transport: t}, &githttp.ClientOptions{CacheMaxEntries: httpTransports})
	client.InstallProtocol("http", c)
	client.InstallProtocol("https", c)
}
