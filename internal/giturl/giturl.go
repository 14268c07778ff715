// Package giturl says what a git repository address carries: whether it is an scp-style address
// (user@host:path), whether it holds credentials, and which repository it names (Normalize). It
// is the one implementation behind every place flotilla checks, writes, shows or compares a
// repository URL; the CRD's CEL rules are the admission
// copy of Check. Pure: no I/O.
package giturl

import (
	"errors"
	"net/url"
	"path"
	"strings"
)

// ErrCredentials is returned by Check for an address that carries credentials.
var ErrCredentials = errors.New("the repository URL carries credentials (a password, a token in its query, or user info in an http(s), git or file URL); put them in a Secret instead")

// SCP reports whether raw is an scp-style address, as git and go-git read it: no "://", and a ':'
// before any '/' (else it is a local path). user is what comes before the first '@' when a ':'
// follows it, "" when the address names no user.
func SCP(raw string) (user string, ok bool) {
	if strings.Contains(raw, "://") {
		return "", false
	}
	i := strings.IndexAny(raw, ":/")
	if i < 0 || raw[i] == '/' {
		return "", false
	}
	if at := strings.Index(raw, "@"); at > 0 && strings.Contains(raw[at+1:], ":") {
		return raw[:at], true
	}
	return "", true
}

// Check refuses an address that carries credentials: a password anywhere, user info in any URL
// but ssh (whose user name is part of the address, not a secret), or a query (where tokens
// travel). Local paths carry none. The error never repeats the address.
func Check(raw string) error {
	if user, ok := SCP(raw); ok {
		if strings.Contains(user, ":") {
			return ErrCredentials
		}
		return nil
	}
	if !strings.Contains(raw, "://") {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("the repository URL is not a valid URL")
	}
	if u.RawQuery != "" || u.ForceQuery {
		return ErrCredentials
	}
	if u.User == nil {
		return nil
	}
	if _, hasPassword := u.User.Password(); hasPassword {
		return ErrCredentials
	}
	switch strings.ToLower(u.Scheme) {
	case "ssh", "git+ssh", "ssh+git":
		return nil
	}
	return ErrCredentials
}

// Redact is raw for messages: without user info (an scp address keeps its user name, never a
// password), query or fragment. An unparseable URL is not echoed at all: where its credentials
// end cannot be known. Local paths are returned unchanged.
func Redact(raw string) string {
	if user, ok := SCP(raw); ok {
		if i := strings.Index(user, ":"); i >= 0 {
			return user[:i] + raw[len(user):]
		}
		return raw
	}
	if !strings.Contains(raw, "://") {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparseable URL>"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment = nil, "", false, ""
	return u.String()
}

// Normalize is the form of raw that two addresses of one repository share, for comparing them
// (never for reaching the repository): scheme and host in lower case, no user info, query,
// fragment or default port, an scp address as ssh://host/path, a local path as file://, and the
// path without trailing slashes or ".git" suffix. The path keeps its case: servers may tell
// Fleet and fleet apart. An unparseable URL is returned unchanged.
func Normalize(raw string) string {
	if _, ok := SCP(raw); ok {
		host, p, _ := strings.Cut(raw, ":")
		if at := strings.LastIndex(host, "@"); at >= 0 {
			host = host[at+1:]
		}
		return "ssh://" + strings.ToLower(host) + cleanPath("/"+strings.TrimPrefix(p, "/"))
	}
	if !strings.Contains(raw, "://") {
		return "file://" + cleanPath(raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	scheme := strings.ToLower(u.Scheme)
	switch scheme {
	case "git+ssh", "ssh+git":
		scheme = "ssh"
	}
	host := strings.ToLower(u.Hostname())
	if strings.Contains(host, ":") {
		host = "[" + host + "]" // IPv6
	}
	if port := u.Port(); port != "" && port != defaultPorts[scheme] {
		host += ":" + port
	}
	return scheme + "://" + host + cleanPath(u.Path)
}

var defaultPorts = map[string]string{"http": "80", "https": "443", "ssh": "22", "git": "9418"}

// cleanPath drops repeated and trailing slashes and one ".git" suffix.
func cleanPath(p string) string {
	if p == "" {
		return ""
	}
	p = path.Clean(p)
	p = strings.TrimSuffix(p, ".git")
	p = strings.TrimRight(p, "/")
	return p
}
