package pkgrepo

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// parseEndpoint follows git's rule for scp-style addresses (a ':' before any '/') and never keeps
// a password in what it dials or prints.
func TestParseEndpoint(t *testing.T) {
	type got struct {
		URL, Display string
		Proto        protocol
		User, Pass   string
	}
	for _, tc := range []struct {
		raw     string
		want    got
		wantErr bool
	}{
		{raw: "git@github.com:org/repo.git", want: got{URL: "git@github.com:org/repo.git", Display: "git@github.com:org/repo.git", Proto: protoSSH}},
		{raw: "gitea.local:repo.git", want: got{URL: "gitea.local:repo.git", Display: "gitea.local:repo.git", Proto: protoSSH}},
		{raw: "ssh://git:s3cr3t-pw@git.example/org/repo.git", want: got{URL: "ssh://git@git.example/org/repo.git", Display: "ssh://git.example/org/repo.git", Proto: protoSSH}},
		{raw: "https://u:s3cr3t-pw@git.example/r.git", want: got{URL: "https://git.example/r.git", Display: "https://git.example/r.git", Proto: protoHTTP, User: "u", Pass: "s3cr3t-pw"}},
		{raw: "file:///srv/git/r.git", want: got{URL: "file:///srv/git/r.git", Display: "file:///srv/git/r.git", Proto: protoLocal}},
		{raw: "/srv/git/a:b.git", want: got{URL: "/srv/git/a:b.git", Display: "/srv/git/a:b.git", Proto: protoLocal}},
		{raw: "git:s3cr3t-pw@git.example:org/repo.git", wantErr: true},
		{raw: "ftp://git.example/r.git", wantErr: true},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			ep, err := parseEndpoint(tc.raw, Auth{})
			if tc.wantErr {
				if err == nil {
					t.Fatalf("want an error, got %+v", ep)
				}
				if strings.Contains(err.Error(), "s3cr3t-pw") {
					t.Errorf("error leaks the password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			g := got{URL: ep.url, Display: ep.display, Proto: ep.proto, User: ep.auth.Username, Pass: ep.auth.Password}
			if diff := cmp.Diff(tc.want, g); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}
