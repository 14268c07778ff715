package giturl

import (
	"errors"
	"strings"
	"testing"
)

func TestAddresses(t *testing.T) {
	const secret = "hunter2"
	cases := []struct {
		raw      string
		scp      bool
		user     string
		refused  bool
		redacted string
	}{
		{raw: "https://git.example/catalog.git", redacted: "https://git.example/catalog.git"},
		{raw: "https://git.example/a@b.git", redacted: "https://git.example/a@b.git"},
		{raw: "https://bob:" + secret + "@git.example/c.git", refused: true, redacted: "https://git.example/c.git"},
		{raw: "https://" + secret + "@git.example/c.git", refused: true, redacted: "https://git.example/c.git"},
		{raw: "https://git.example/c.git?private_token=" + secret, refused: true, redacted: "https://git.example/c.git"},
		{raw: "https://git.example/c.git?", refused: true, redacted: "https://git.example/c.git"},
		{raw: "http://x:" + secret + "@git.example/c.git", refused: true, redacted: "http://git.example/c.git"},
		{raw: "file://bob:" + secret + "@/srv/c.git", refused: true, redacted: "file:///srv/c.git"},
		{raw: "git://git.example/c.git", redacted: "git://git.example/c.git"},
		{raw: "ssh://git@git.example/c.git", redacted: "ssh://git.example/c.git"},
		{raw: "ssh://git:" + secret + "@git.example/c.git", refused: true, redacted: "ssh://git.example/c.git"},
		{raw: "git@git.example:fleet/c.git", scp: true, user: "git", redacted: "git@git.example:fleet/c.git"},
		{raw: "git@git.example:team/repo@2.git", scp: true, user: "git", redacted: "git@git.example:team/repo@2.git"},
		{raw: "git.example:team/repo@2.git", scp: true, redacted: "git.example:team/repo@2.git"},
		{raw: "git:" + secret + "@git.example:fleet/c.git", scp: true, user: "git:" + secret, refused: true, redacted: "git@git.example:fleet/c.git"},
		{raw: "/srv/git/c.git", redacted: "/srv/git/c.git"},
		{raw: "./c.git", redacted: "./c.git"},
		{raw: "c.git", redacted: "c.git"},
	}
	for _, tc := range cases {
		user, scp := SCP(tc.raw)
		if scp != tc.scp || user != tc.user {
			t.Errorf("SCP(%q) = %q, %v; want %q, %v", tc.raw, user, scp, tc.user, tc.scp)
		}
		err := Check(tc.raw)
		if tc.refused != errors.Is(err, ErrCredentials) {
			t.Errorf("Check(%q) = %v; want refused %v", tc.raw, err, tc.refused)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("Check(%q) repeats the credential: %v", tc.raw, err)
		}
		if got := Redact(tc.raw); got != tc.redacted {
			t.Errorf("Redact(%q) = %q; want %q", tc.raw, got, tc.redacted)
		}
	}
	if got := Redact("https://bob:" + secret + "@[::1"); strings.Contains(got, secret) {
		t.Errorf("an unparseable URL is echoed: %q", got)
	}
}

// TestNormalize: the addresses of one repository normalize alike, different repositories never.
func TestNormalize(t *testing.T) {
	cases := []struct{ raw, want string }{
		{"https://git.example/fleet/edge01.git", "https://git.example/fleet/edge01"},
		{"https://git.example/fleet/edge01", "https://git.example/fleet/edge01"},
		{"https://git.example/fleet/edge01/", "https://git.example/fleet/edge01"},
		{"https://git.example/fleet/edge01.git/", "https://git.example/fleet/edge01"},
		{"HTTPS://Git.Example/fleet/edge01.git", "https://git.example/fleet/edge01"},
		{"https://git.example:443/fleet/edge01.git", "https://git.example/fleet/edge01"},
		{"https://git.example//fleet//edge01.git", "https://git.example/fleet/edge01"},
		{"https://bob@git.example/fleet/edge01.git?x=1#y", "https://git.example/fleet/edge01"},
		{"https://git.example:8443/fleet/edge01.git", "https://git.example:8443/fleet/edge01"},
		{"http://git.example/fleet/edge01.git", "http://git.example/fleet/edge01"},
		{"https://git.example/Fleet/edge01.git", "https://git.example/Fleet/edge01"},
		{"https://git.example/fleet/edge01.git.git", "https://git.example/fleet/edge01.git"},
		{"ssh://git@git.example/fleet/edge01.git", "ssh://git.example/fleet/edge01"},
		{"ssh://git@git.example:22/fleet/edge01.git", "ssh://git.example/fleet/edge01"},
		{"git+ssh://git@git.example/fleet/edge01.git", "ssh://git.example/fleet/edge01"},
		{"git@Git.Example:fleet/edge01.git", "ssh://git.example/fleet/edge01"},
		{"git.example:/fleet/edge01.git/", "ssh://git.example/fleet/edge01"},
		{"ssh://git@[::1]:22/fleet/edge01.git", "ssh://[::1]/fleet/edge01"},
		{"ssh://git@[::1]:2222/fleet/edge01.git", "ssh://[::1]:2222/fleet/edge01"},
		{"file:///srv/git/edge01.git", "file:///srv/git/edge01"},
		{"/srv/git/edge01.git/", "file:///srv/git/edge01"},
		{"/srv/git//edge01", "file:///srv/git/edge01"},
	}
	for _, tc := range cases {
		if got := Normalize(tc.raw); got != tc.want {
			t.Errorf("Normalize(%q) = %q; want %q", tc.raw, got, tc.want)
		}
	}
}
