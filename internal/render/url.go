package render

import (
	"errors"
	"net/url"
	"strings"
)

// ErrCredentialsInURL is returned for a repository URL that carries credentials: the URL would be
// written into git, where every reader of the cluster repository sees it.
var ErrCredentialsInURL = errors.New("the repository URL carries credentials; give the agent its credentials through spec.sync.git.secretRef and remove them from the URL")

// checkURL refuses URLs that carry credentials before they are written into a sync object: any
// user info in http(s), git and file URLs, and a password in any URL (ssh URLs may name the
// user). The URL itself is never part of the error.
func checkURL(raw string) error {
	i := strings.Index(raw, "://")
	if i < 0 {
		// scp-style user@host:path: a user is fine, "user:password@" is not.
		if at := strings.Index(raw, "@"); at >= 0 && strings.Contains(raw[:at], ":") {
			return ErrCredentialsInURL
		}
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("the repository URL is not a valid URL")
	}
	if u.User == nil {
		return nil
	}
	if _, hasPassword := u.User.Password(); hasPassword {
		return ErrCredentialsInURL
	}
	switch strings.ToLower(u.Scheme) {
	case "ssh", "git+ssh", "ssh+git":
		return nil
	}
	return ErrCredentialsInURL
}
