package pkgrepo

import (
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// Auth holds the credentials for an http(s) remote: Username+Password (basic
// auth, also the form for most token schemes) or BearerToken. It formats as
// "<redacted>" under every fmt verb, so logging a Remote cannot leak it.
type Auth struct {
	Username    string
	Password    string
	BearerToken string
}

// String prints which fields are set, never their values.
func (a Auth) String() string {
	return fmt.Sprintf("{Username:%s Password:%s BearerToken:%s}",
		redacted(a.Username), redacted(a.Password), redacted(a.BearerToken))
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
	// URL is http(s)://, file:// or a plain path. Userinfo in an http(s) URL
	// is used as basic auth when Auth is empty and never sent as part of
	// the URL.
	URL string
	// Branch packages are published on; default "main".
	Branch string
	Auth   Auth
}

// String prints the URL without userinfo and the redacted Auth.
func (r Remote) String() string {
	return fmt.Sprintf("{URL:%s Branch:%s Auth:%s}", redactURL(r.URL), r.Branch, r.Auth)
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

// endpoint is a Remote prepared for go-git: a URL without credentials, the
// auth method, and what to scrub from error messages.
type endpoint struct {
	url     string // what go-git dials; also the mirror key
	display string // for messages
	auth    transport.AuthMethod
	secrets []string
	// credential identifies the credentials (HMAC with the Store's key) so
	// the Store can tell whether a mirror was last fetched with them.
	credential string
}

func newEndpoint(r Remote, key []byte) (endpoint, error) {
	raw := strings.TrimSpace(r.URL)
	if raw == "" {
		return endpoint{}, fmt.Errorf("repository URL is empty")
	}
	if !strings.Contains(raw, "://") {
		abs, err := filepath.Abs(raw)
		if err != nil {
			return endpoint{}, fmt.Errorf("repository path %s: %w", raw, err)
		}
		return endpoint{url: abs, display: abs, credential: mac(key, "")}, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return endpoint{}, fmt.Errorf("repository URL %s is invalid", redactURL(raw))
	}
	user, pass := "", ""
	if u.User != nil {
		user = u.User.Username()
		pass, _ = u.User.Password()
		u.User = nil
	}
	ep := endpoint{url: u.String(), display: redactURL(u.String())}
	switch u.Scheme {
	case "file":
		ep.credential = mac(key, "")
		return ep, nil
	case "http", "https":
	default:
		return endpoint{}, fmt.Errorf("repository URL %s: scheme %q is not supported (use http, https or file)", ep.display, u.Scheme)
	}
	a := r.Auth
	if a == (Auth{}) {
		a.Username, a.Password = user, pass
	}
	switch {
	case a.BearerToken != "":
		ep.auth = &githttp.TokenAuth{Token: a.BearerToken}
	case a.Username != "" || a.Password != "":
		ep.auth = &githttp.BasicAuth{Username: a.Username, Password: a.Password}
	}
	ep.secrets = []string{a.Password, a.BearerToken, pass}
	ep.credential = mac(key, a.Username+"\x00"+a.Password+"\x00"+a.BearerToken)
	return ep, nil
}

// mac fingerprints credentials with a per-Store random key: comparable in
// memory, useless to anyone who reads it.
func mac(key []byte, s string) string {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(s))
	return string(h.Sum(nil))
}

// redactURL strips userinfo, query and fragment from a URL for messages.
// Plain paths are returned unchanged. An unparseable URL is not echoed at
// all: where its credentials end cannot be known.
func redactURL(raw string) string {
	i := strings.Index(raw, "://")
	if i < 0 {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparseable URL>"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}
