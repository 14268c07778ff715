package pkgrepo

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/flotilla-dev/flotilla/internal/giturl"
)

// Auth holds the credentials for a remote: for http(s), Username+Password (basic auth, also the
// form for most token schemes) or BearerToken, and CABundle; for ssh, Identity and KnownHosts
// (and Passphrase when the key is encrypted). It formats as "<redacted>" under every fmt verb,
// so logging a Remote cannot leak it.
type Auth struct {
	Username    string
	Password    string
	BearerToken string
	// Identity is a PEM (or OpenSSH) private key for ssh remotes.
	Identity string
	// Passphrase decrypts Identity when it is encrypted.
	Passphrase string
	// KnownHosts holds the host keys an ssh server may present, in OpenSSH known_hosts format.
	// ssh remotes need it: a host key is never trusted blindly.
	KnownHosts string
	// CABundle holds PEM certificates trusted for https remotes, besides the system's.
	CABundle string
}

// String prints which fields are set, never their values.
func (a Auth) String() string {
	return fmt.Sprintf("{Username:%s Password:%s BearerToken:%s Identity:%s Passphrase:%s KnownHosts:%s CABundle:%s}",
		redacted(a.Username), redacted(a.Password), redacted(a.BearerToken),
		redacted(a.Identity), redacted(a.Passphrase), redacted(a.KnownHosts), redacted(a.CABundle))
}

// GoString is String for %#v.
func (a Auth) GoString() string { return "pkgrepo.Auth" + a.String() }

// Format makes every verb (%v, %+v, %s, %q, %x, ...) print the redacted form.
func (a Auth) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = io.WriteString(f, a.GoString())
		return
	}
	_, _ = io.WriteString(f, a.String())
}

func redacted(s string) string {
	if s == "" {
		return `""`
	}
	return "<redacted>"
}

// Remote is a git repository flotilla reads and writes.
type Remote struct {
	// URL is http(s)://, ssh://, scp-style (user@host:dir/repo.git), file:// or a plain path.
	// Userinfo in an http(s) URL is used as basic auth when Auth has none and never sent as part
	// of the URL. file:// URLs and paths need Store.AllowLocal.
	URL string
	// Branch packages are published on; default "main".
	Branch string
	Auth   Auth
	// Scope names who holds the credentials (the controller uses "namespace/secret", or
	// "namespace/" without a Secret). Remotes with different scopes never share a mirror, even
	// for the same URL, so one tenant never reads what another tenant's credentials fetched.
	Scope string
	// OCI marks an OCI repository (URL is then REGISTRY/REPO, no scheme): the Store refuses it
	// (ErrNotGit); fleet resolves its packages through a registry client.
	OCI bool
	// Insecure lets an OCI registry be reached over plain HTTP.
	Insecure bool
	// MaxAge is how old the mirror may be before a read (Resolve, Latest, ReadPackage, ...)
	// fetches: the Repository's spec.interval, so an idle fleet asks the git server once per
	// interval. 0: the Store's RefreshInterval. A Store with RefreshInterval set uses that.
	MaxAge time.Duration
}

// String prints the URL without userinfo and the redacted Auth.
func (r Remote) String() string {
	return fmt.Sprintf("{URL:%s Branch:%s Scope:%s Auth:%s}", giturl.Redact(r.URL), r.Branch, r.Scope, r.Auth)
}

// GoString is String for %#v.
func (r Remote) GoString() string { return "pkgrepo.Remote" + r.String() }

// Format makes every verb print the redacted form.
func (r Remote) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = io.WriteString(f, r.GoString())
		return
	}
	_, _ = io.WriteString(f, r.String())
}

func (r Remote) branch() string {
	if r.Branch == "" {
		return "main"
	}
	return r.Branch
}

// protocol is how an endpoint is reached.
type protocol int

const (
	protoLocal protocol = iota
	protoHTTP
	protoSSH
)

// endpoint is a Remote prepared for go-git: a URL without credentials, what to scrub from error
// messages, and the credentials to build the transport options from.
type endpoint struct {
	url     string // what go-git dials
	display string // for messages
	proto   protocol
	// mirrorKey names the mirror: the scope and the URL.
	mirrorKey string
	auth      Auth // with URL userinfo folded in for http(s)
	secrets   []string
	// credential identifies the credentials (HMAC with the Store's key) so the Store can tell
	// whether a mirror was last fetched with them.
	credential string
	maxAge     time.Duration // Remote.MaxAge
	// dial is url parsed by go-git once: every poll and push of the remote opens a session to it.
	dial *transport.Endpoint
}

// newEndpoint prepares r. It refuses local repositories unless allowLocal.
func newEndpoint(r Remote, key []byte, allowLocal bool) (endpoint, error) {
	raw := strings.TrimSpace(r.URL)
	if raw == "" {
		return endpoint{}, fmt.Errorf("repository URL is empty")
	}
	ep, err := parseEndpoint(raw, r.Auth)
	if err != nil {
		return endpoint{}, err
	}
	if ep.proto == protoLocal && !allowLocal {
		return endpoint{}, fmt.Errorf("repository %s: %w: file:// URLs and paths are refused unless the controller runs with --allow-local-repositories", ep.display, ErrLocalRepository)
	}
	a := ep.auth
	ep.secrets = append(ep.secrets, a.Password, a.BearerToken, a.Identity, a.Passphrase)
	ep.credential = mac(key, strings.Join([]string{a.Username, a.Password, a.BearerToken, a.Identity, a.Passphrase, a.KnownHosts, a.CABundle}, "\x00"))
	ep.mirrorKey = r.Scope + "\x00" + ep.url
	ep.maxAge = r.MaxAge
	if ep.dial, err = transport.NewEndpoint(ep.url); err != nil {
		return endpoint{}, fmt.Errorf("repository URL %s is invalid", ep.display)
	}
	return ep, nil
}

// parseEndpoint tells the protocol of raw and strips its credentials. scp-style addresses follow
// git's rule (a ':' before any '/') as go-git parses them.
func parseEndpoint(raw string, a Auth) (endpoint, error) {
	if !strings.Contains(raw, "://") {
		if i := strings.IndexAny(raw, ":/"); i < 0 || raw[i] == '/' {
			abs, err := filepath.Abs(raw)
			if err != nil {
				return endpoint{}, fmt.Errorf("repository path %s: %w", raw, err)
			}
			return endpoint{url: abs, display: abs, proto: protoLocal}, nil
		}
		if user, _ := giturl.SCP(raw); strings.Contains(user, ":") {
			return endpoint{}, fmt.Errorf("repository URL %s must not carry a password; ssh uses the key in the Secret named by secretRef", giturl.Redact(raw))
		}
		te, err := transport.NewEndpoint(raw)
		if err != nil || te.Protocol != "ssh" {
			return endpoint{}, fmt.Errorf("repository URL %s: not a valid scp-style address (user@host:path/repo.git)", giturl.Redact(raw))
		}
		return endpoint{url: raw, display: giturl.Redact(raw), proto: protoSSH, auth: sshOnly(a)}, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return endpoint{}, fmt.Errorf("repository URL %s is invalid", giturl.Redact(raw))
	}
	user, pass := "", ""
	if u.User != nil {
		user = u.User.Username()
		pass, _ = u.User.Password()
		u.User = nil
	}
	ep := endpoint{url: u.String(), display: giturl.Redact(u.String()), secrets: []string{pass}}
	switch u.Scheme {
	case "file":
		ep.proto = protoLocal
	case "http", "https":
		ep.proto = protoHTTP
		ep.auth = a
		ep.auth.Identity, ep.auth.Passphrase, ep.auth.KnownHosts = "", "", ""
		if a.Username == "" && a.Password == "" && a.BearerToken == "" {
			ep.auth.Username, ep.auth.Password = user, pass
		}
	case "ssh":
		// The user name is part of what the server sees, not a secret; a password in an ssh URL
		// is never used (keys only).
		ep.proto = protoSSH
		if user != "" {
			u.User = url.User(user)
		}
		ep.url = u.String()
		ep.auth = sshOnly(a)
	default:
		return endpoint{}, fmt.Errorf("repository URL %s: scheme %q is not supported (use http, https, ssh or file)", ep.display, u.Scheme)
	}
	return ep, nil
}

// sshOnly keeps the fields of a that an ssh remote uses.
func sshOnly(a Auth) Auth {
	return Auth{Identity: a.Identity, Passphrase: a.Passphrase, KnownHosts: a.KnownHosts}
}

// transportOptions are what go-git needs besides the URL to reach an endpoint.
type transportOptions struct {
	auth     transport.AuthMethod
	caBundle []byte
}

// transportOptions builds the auth method (parsing keys and known_hosts) for ep. Errors wrap
// ErrCredentials or ErrHostKeyUnknown and carry no credential.
func (ep endpoint) transportOptions() (transportOptions, error) {
	a := ep.auth
	switch ep.proto {
	case protoHTTP:
		var o transportOptions
		if a.CABundle != "" {
			if !x509.NewCertPool().AppendCertsFromPEM([]byte(a.CABundle)) {
				return o, fmt.Errorf("%s: %w: ca.crt holds no PEM certificate", ep.display, ErrCredentials)
			}
			o.caBundle = []byte(a.CABundle)
		}
		switch {
		case a.BearerToken != "":
			o.auth = &githttp.TokenAuth{Token: a.BearerToken}
		case a.Username != "" || a.Password != "":
			o.auth = &githttp.BasicAuth{Username: a.Username, Password: a.Password}
		}
		return o, nil
	case protoSSH:
		auth, err := newSSHAuth(ep.url, a)
		if err != nil {
			return transportOptions{}, fmt.Errorf("%s: %w", ep.display, err)
		}
		return transportOptions{auth: auth}, nil
	default:
		return transportOptions{}, nil
	}
}

// mac fingerprints credentials with a per-Store random key: comparable in
// memory, useless to anyone who reads it.
func mac(key []byte, s string) string {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(s))
	return string(h.Sum(nil))
}
