package pkgrepo_test

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

const passphrase = "key-Pa55phrase"

// sshRepo is a repository served over ssh, with the credentials that reach it.
type sshRepo struct {
	ssh  *gittest.SSHServer
	dir  string
	auth pkgrepo.Auth
}

func newSSHRepo(t *testing.T) sshRepo {
	t.Helper()
	srv := gittest.NewServer(t)
	srv.CreateRepo(t, "edge01")
	ss := srv.ServeSSH(t)
	return sshRepo{ssh: ss, dir: srv.Dir("edge01"), auth: pkgrepo.Auth{Identity: string(ss.ClientKey), KnownHosts: ss.KnownHosts}}
}

// Publish, resolve and read over ssh:// and scp-style addresses, with the key and known_hosts
// from the Secret.
func TestSSH(t *testing.T) {
	repo := newSSHRepo(t)
	ctx := context.Background()
	for name, url := range map[string]string{"ssh://": repo.ssh.URL("edge01"), "scp-style": repo.ssh.SCPURL("edge01")} {
		t.Run(name, func(t *testing.T) {
			store := pkgrepo.NewStore(t.TempDir())
			remote := pkgrepo.Remote{URL: url, Auth: repo.auth}
			res := publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles(strings.TrimSuffix(name, "://"))})
			if got := gittest.Tags(t, repo.dir)[res.Tag]; got != res.Commit {
				t.Fatalf("tag %s on the server = %q, want %s", res.Tag, got, res.Commit)
			}
			rev, err := store.Resolve(ctx, remote, dp, "latest")
			if err != nil || rev.Commit != res.Commit {
				t.Fatalf("Resolve = %+v, %v; want commit %s", rev, err, res.Commit)
			}
			files, err := pkgrepo.NewStore(t.TempDir()).ReadPackage(ctx, remote, dp, rev.Commit)
			if err != nil || files["Kptfile"] == nil {
				t.Fatalf("ReadPackage from a new mirror = %v, %v", files, err)
			}
		})
	}

	t.Run("encrypted key", func(t *testing.T) {
		srv := gittest.NewServer(t)
		srv.CreateRepo(t, "edge01")
		gittest.Commit(t, srv.Dir("edge01"), "", map[string]string{dp + "/Kptfile": kptfile}, dp+"/v1")
		ss := srv.ServeSSH(t)
		encrypted := encrypt(t, ss.ClientKey, passphrase)
		remote := pkgrepo.Remote{URL: ss.URL("edge01"), Auth: pkgrepo.Auth{Identity: string(encrypted), Passphrase: passphrase, KnownHosts: ss.KnownHosts}}
		if _, err := pkgrepo.NewStore(t.TempDir()).Resolve(ctx, remote, dp, "v1"); err != nil {
			t.Fatalf("Resolve with an encrypted key and its passphrase: %v", err)
		}
		remote.Auth.Passphrase = ""
		_, err := pkgrepo.NewStore(t.TempDir()).Resolve(ctx, remote, dp, "v1")
		checkErr(t, err, pkgrepo.ErrCredentials)
		remote.Auth.Passphrase = "wrong-" + passphrase
		_, err = pkgrepo.NewStore(t.TempDir()).Resolve(ctx, remote, dp, "v1")
		checkErr(t, err, pkgrepo.ErrCredentials)
		assertNoKey(t, err.Error(), encrypted)
	})
}

// A server that advertises an empty repository without capabilities (a bare flush-pkt, not git's
// "capabilities^{}" line) still takes the first publish: with no capabilities there is no atomic
// push to name old values in, so go-git's push sends it; the next publish, to a repository with
// refs, is the exact push again.
func TestSSHPublishToEmptyRepositoryWithoutCapabilities(t *testing.T) {
	repo := newSSHRepo(t)
	repo.ssh.NoCapabilitiesWhenEmpty()
	store := pkgrepo.NewStore(t.TempDir())
	remote := pkgrepo.Remote{URL: repo.ssh.URL("edge01"), Auth: repo.auth}
	for _, content := range []string{"first", "second"} {
		res := publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles(content)})
		if got := gittest.Tags(t, repo.dir)[res.Tag]; got != res.Commit {
			t.Fatalf("%s publish: tag %s on the server = %q, want %s", content, res.Tag, got, res.Commit)
		}
		if got := gittest.Branches(t, repo.dir)["main"]; got != res.Commit {
			t.Fatalf("%s publish: main on the server = %q, want %s", content, got, res.Commit)
		}
	}
}

// Such a server's refusal is not taken for a publish: a push it does not apply (a pre-receive hook
// refuses it) is an error once its refs have not shown the push for a while, and the next
// publish starts from the empty repository again.
func TestSSHUnreportedPushRefused(t *testing.T) {
	pkgrepo.SetConfirmWait(t, time.Second)
	repo := newSSHRepo(t)
	repo.ssh.NoCapabilitiesWhenEmpty()
	hook := filepath.Join(repo.dir, "hooks", "pre-receive")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	store := pkgrepo.NewStore(t.TempDir())
	remote := pkgrepo.Remote{URL: repo.ssh.URL("edge01"), Auth: repo.auth}
	_, err := store.Publish(context.Background(), remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("refused")})
	if err == nil || !strings.Contains(err.Error(), "did not show the push within 1s") {
		t.Fatalf("Publish to a server that refuses without a report: %v, want an error saying the push did not show", err)
	}
	if tags, branches := gittest.Tags(t, repo.dir), gittest.Branches(t, repo.dir); len(tags)+len(branches) != 0 {
		t.Fatalf("server refs after a refused push: tags %v, branches %v", tags, branches)
	}
	if err := os.Remove(hook); err != nil {
		t.Fatal(err)
	}
	res := publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("taken")})
	if res.Revision != 1 || gittest.Tags(t, repo.dir)[res.Tag] != res.Commit {
		t.Fatalf("publish after the hook was removed: %+v, server tags %v; want v1 on the server", res, gittest.Tags(t, repo.dir))
	}
}

// A push the server refused while another writer made the branch (here a pre-receive hook moves
// main to a commit only the server holds, then refuses ours) is forgotten whole: the next publish
// fetches that writer's commit and builds on it, instead of finding the mirror's refs equal to the
// server's and missing its objects.
func TestSSHUnreportedPushRefusedWhileAnotherWriterPushed(t *testing.T) {
	pkgrepo.SetConfirmWait(t, time.Second)
	repo := newSSHRepo(t)
	repo.ssh.NoCapabilitiesWhenEmpty()
	gitOut := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", repo.dir}, args...)...).Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	tree := gitOut("hash-object", "-w", "-t", "tree", os.DevNull)
	theirs := gitOut("-c", "user.name=other", "-c", "user.email=other@example.com", "commit-tree", tree, "-m", "another writer")
	hook := filepath.Join(repo.dir, "hooks", "pre-receive")
	script := "#!/bin/sh\nunset GIT_QUARANTINE_PATH\ngit update-ref refs/heads/main " + theirs + " || exit 2\nexit 1\n"
	if err := os.WriteFile(hook, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	store := pkgrepo.NewStore(t.TempDir())
	remote := pkgrepo.Remote{URL: repo.ssh.URL("edge01"), Auth: repo.auth}
	if _, err := store.Publish(context.Background(), remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("refused")}); err == nil {
		t.Fatal("Publish to a server that refused the push: no error")
	}
	if got := gittest.Branches(t, repo.dir)["main"]; got != theirs {
		t.Fatalf("main on the server = %q, want the other writer's %s (the hook did not run?)", got, theirs)
	}
	if err := os.Remove(hook); err != nil {
		t.Fatal(err)
	}
	res := publish(t, store, remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("taken")})
	if log := gittest.Log(t, repo.dir, "main"); len(log) != 2 || log[0] != res.Commit || log[1] != theirs {
		t.Fatalf("main on the server: %v, want the publish %s on the other writer's %s", log, res.Commit, theirs)
	}
}

// encrypt re-encodes a PEM private key encrypted with passphrase.
func encrypt(t *testing.T, key []byte, passphrase string) []byte {
	t.Helper()
	raw, err := ssh.ParseRawPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKeyWithPassphrase(raw, "", []byte(passphrase))
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(block)
}

// No host key is trusted blindly, and a rejected key or credential is a clear error that names
// what to fix and carries no key.
func TestSSHRefusals(t *testing.T) {
	repo := newSSHRepo(t)
	gittest.Commit(t, repo.dir, "", map[string]string{dp + "/Kptfile": kptfile}, dp+"/v1")
	otherKeyPEM, otherKey := gittest.NewSSHKey(t)
	cache := t.TempDir()
	store := pkgrepo.NewStore(cache)
	ctx := context.Background()
	url := repo.ssh.URL("edge01")
	good := pkgrepo.Remote{URL: url, Auth: repo.auth}
	if _, err := store.Resolve(ctx, good, dp, "v1"); err != nil {
		t.Fatalf("Resolve with the right key: %v", err)
	}

	with := func(mutate func(*pkgrepo.Auth)) pkgrepo.Remote {
		r := good
		mutate(&r.Auth)
		return r
	}
	for _, tc := range []struct {
		name   string
		remote pkgrepo.Remote
		want   error
		say    string // part of the message that tells the user what to do
	}{
		{"no known_hosts", with(func(a *pkgrepo.Auth) { a.KnownHosts = "" }), pkgrepo.ErrHostKeyUnknown, "known_hosts is empty"},
		{"known_hosts for another host", with(func(a *pkgrepo.Auth) {
			a.KnownHosts = knownhosts.Line([]string{"git.example.com"}, repo.ssh.HostKey)
		}), pkgrepo.ErrHostKeyUnknown, "add the server's host key"},
		{"wrong host key", with(func(a *pkgrepo.Auth) {
			a.KnownHosts = knownhosts.Line([]string{knownhosts.Normalize(repo.ssh.Addr)}, otherKey.PublicKey())
		}), pkgrepo.ErrHostKeyMismatch, "does not list"},
		{"invalid known_hosts", with(func(a *pkgrepo.Auth) { a.KnownHosts = "not a known_hosts line" }), pkgrepo.ErrCredentials, "known_hosts is invalid"},
		{"wrong client key", with(func(a *pkgrepo.Auth) { a.Identity = string(otherKeyPEM) }), pkgrepo.ErrAuthentication, ""},
		{"no key", with(func(a *pkgrepo.Auth) { a.Identity = "" }), pkgrepo.ErrCredentials, "identity"},
		{"not a key", with(func(a *pkgrepo.Auth) {
			a.Identity = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + passphrase + "\n-----END OPENSSH PRIVATE KEY-----\n"
		}), pkgrepo.ErrCredentials, "identity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The mirror is fresh from the good fetch, yet other credentials reach the server first.
			_, err := store.Resolve(ctx, tc.remote, dp, "v1")
			checkErr(t, err, tc.want)
			if !strings.Contains(err.Error(), tc.say) {
				t.Errorf("error %q does not say %q", err, tc.say)
			}
			_, err = store.Publish(ctx, tc.remote, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("x")})
			checkErr(t, err, tc.want)
			t.Log(err)
			for _, key := range [][]byte{repo.ssh.ClientKey, otherKeyPEM} {
				assertNoKey(t, err.Error(), key)
				for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
					assertNoKey(t, fmt.Sprintf(verb, tc.remote), key)
				}
			}
			assertNoSecret(t, err.Error())
		})
	}
	if tags := gittest.Tags(t, repo.dir); len(tags) != 1 {
		t.Errorf("a refused publish changed the tags: %v", tags)
	}
	assertNotOnDisk(t, cache, repo.ssh.ClientKey, otherKeyPEM)
}

// HTTPS with a private CA: trusted with the CA bundle, a clear error without it.
func TestCABundle(t *testing.T) {
	srv := gittest.NewServer(t, gittest.WithTLS(), gittest.WithBasicAuth("flotilla", password))
	url := srv.CreateRepo(t, "edge01")
	other := gittest.NewServer(t, gittest.WithTLS())
	ctx := context.Background()
	store := pkgrepo.NewStore(t.TempDir())
	good := pkgrepo.Remote{URL: url, Auth: pkgrepo.Auth{Username: "flotilla", Password: password, CABundle: string(srv.CACert)}}
	res := publish(t, store, good, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a")})
	if rev, err := store.Resolve(ctx, good, dp, "v1"); err != nil || rev.Commit != res.Commit {
		t.Fatalf("Resolve over https with the CA bundle = %+v, %v", rev, err)
	}

	for name, ca := range map[string]string{"no CA bundle": "", "another CA": string(other.CACert)} {
		t.Run(name, func(t *testing.T) {
			r := good
			r.Auth.CABundle = ca
			_, err := pkgrepo.NewStore(t.TempDir()).Resolve(ctx, r, dp, "v1")
			checkErr(t, err, pkgrepo.ErrCertificateUntrusted)
			if !strings.Contains(err.Error(), "ca.crt") {
				t.Errorf("error %q does not say to add the CA to ca.crt", err)
			}
			assertNoSecret(t, err.Error())
			t.Log(err)
		})
	}
	r := good
	r.Auth.CABundle = "not PEM"
	_, err := pkgrepo.NewStore(t.TempDir()).Resolve(ctx, r, dp, "v1")
	checkErr(t, err, pkgrepo.ErrCredentials)
}

// Polls of the repositories of one git server reuse one connection, over https with a private
// CA as over http: a poll is a request, not a new connection and TLS handshake.
func TestConnectionsReused(t *testing.T) {
	for name, opts := range map[string][]gittest.Option{"https with a CA bundle": {gittest.WithTLS()}, "http": nil} {
		t.Run(name, func(t *testing.T) {
			srv := gittest.NewServer(t, opts...)
			store := pkgrepo.NewStore(t.TempDir())
			var remotes []pkgrepo.Remote
			for i := range 3 {
				r := pkgrepo.Remote{URL: srv.CreateRepo(t, fmt.Sprintf("edge%02d", i)), Auth: pkgrepo.Auth{CABundle: string(srv.CACert)}}
				publish(t, store, r, pkgrepo.PublishRequest{Package: dp, Files: dpFiles("a")})
				remotes = append(remotes, r)
			}
			before := srv.Connections()
			for range 10 {
				for _, r := range remotes {
					if _, err := store.Refresh(context.Background(), r); err != nil {
						t.Fatal(err)
					}
				}
			}
			if n := srv.Connections() - before; n > 1 {
				t.Errorf("30 polls of 3 repositories opened %d connections, want at most 1", n)
			}
		})
	}
}

func assertNoKey(t *testing.T, s string, key []byte) {
	t.Helper()
	// Any line of the key's body would be a leak.
	for _, line := range strings.Split(string(key), "\n") {
		if len(line) > 20 && !strings.HasPrefix(line, "-----") && strings.Contains(s, line) {
			t.Fatalf("leaks the private key: %s", s)
		}
	}
	if strings.Contains(s, passphrase) {
		t.Fatalf("leaks the passphrase: %s", s)
	}
}

// assertNotOnDisk fails when a file under dir holds any line of keys.
func assertNotOnDisk(t *testing.T, dir string, keys ...[]byte) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		for _, key := range keys {
			for _, line := range bytes.Split(key, []byte("\n")) {
				if len(line) > 20 && !bytes.HasPrefix(line, []byte("-----")) && bytes.Contains(data, line) {
					t.Errorf("%s holds a private key", p)
				}
			}
		}
		if bytes.Contains(data, []byte(passphrase)) {
			t.Errorf("%s holds the passphrase", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
