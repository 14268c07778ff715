// Package giturl says what a git repository address carries: whether it is an scp-style address
// (user@host:path), and whether it holds credentials. It is the one implementation behind every
// place flotilla checks, writes or shows a repository URL; the CRD's CEL rules are the admission
// copy of Check. Pure: no I/O.
package giturl

import (
	"errors"
	"net/url"
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
