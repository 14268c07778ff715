package gittest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gliderlabs/ssh"
	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSHServer serves the repositories of a Server over ssh: an in-process ssh server that runs the
// real git-upload-pack and git-receive-pack on the bare repositories, for one authorized client
// key.
type SSHServer struct {
	// Addr is 127.0.0.1:PORT.
	Addr string
	// HostKey is the server's (generated) host key.
	HostKey gossh.PublicKey
	// ClientKey is the PEM private key the server accepts; no other key gets in.
	ClientKey []byte
	// KnownHosts is the known_hosts line for this server's host key.
	KnownHosts string

	root string
	// ctx ends when the server stops: the git commands it runs end with it, not with the client's
	// session (as under sshd, a command goes on after its client hung up).
	ctx context.Context
	// noCapabilities: see NoCapabilitiesWhenEmpty.
	noCapabilities atomic.Bool
	// endless: see EndlessAdvertisement.
	endless atomic.Pointer[endlessFor]
}

// NoCapabilitiesWhenEmpty makes git-receive-pack advertise a repository without refs as a bare
// flush-pkt, without git's "capabilities^{}" line, from the next session on: what some servers
// send for an empty repository.
func (s *SSHServer) NoCapabilitiesWhenEmpty() {
	s.noCapabilities.Store(true)
}

// ServeSSH starts an ssh server for the repositories of s on a free loopback port, with a new
// host key and a new authorized client key; t.Cleanup stops it.
func (s *Server) ServeSSH(t testing.TB) *SSHServer {
	t.Helper()
	_, hostSigner := NewSSHKey(t)
	clientPEM, clientSigner := NewSSHKey(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ss := &SSHServer{
		Addr:       ln.Addr().String(),
		HostKey:    hostSigner.PublicKey(),
		ClientKey:  clientPEM,
		KnownHosts: knownhosts.Line([]string{knownhosts.Normalize(ln.Addr().String())}, hostSigner.PublicKey()),
		root:       s.root,
	}
	ctx, cancel := context.WithCancel(context.Background())
	ss.ctx = ctx
	// Sessions still running when the test ends are waited for: they log to t.
	var (
		mu      sync.Mutex
		closed  bool
		running sync.WaitGroup
	)
	srv := &ssh.Server{
		Handler: func(sess ssh.Session) {
			mu.Lock()
			if closed {
				mu.Unlock()
				return
			}
			running.Add(1)
			mu.Unlock()
			defer running.Done()
			ss.serve(t, sess)
		},
		PublicKeyHandler: func(_ ssh.Context, key ssh.PublicKey) bool {
			return ssh.KeysEqual(key, clientSigner.PublicKey())
		},
	}
	srv.AddHostKey(hostSigner)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, ssh.ErrServerClosed) {
			t.Errorf("ssh server: %v", err)
		}
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		cancel()
		<-done
		mu.Lock()
		closed = true
		mu.Unlock()
		running.Wait()
	})
	return ss
}

// URL is the ssh:// URL of repository name, e.g. ssh://git@127.0.0.1:PORT/name.git.
func (s *SSHServer) URL(name string) string {
	return "ssh://git@" + s.Addr + "/" + name + ".git"
}

// SCPURL is the scp-style address of repository name, git@127.0.0.1:PORT:name.git. scp-style
// addresses have no port in git; go-git reads host:PORT:path as one, which lets a test reach a
// server on a free port. The path is relative, as in git@github.com:org/repo.git.
func (s *SSHServer) SCPURL(name string) string {
	return "git@" + s.Addr + ":" + name + ".git"
}

// serve runs one git command of a session.
func (s *SSHServer) serve(t testing.TB, sess ssh.Session) {
	args := sess.Command()
	if len(args) != 2 || (args[0] != "git-upload-pack" && args[0] != "git-receive-pack") {
		fmt.Fprintf(sess.Stderr(), "gittest: only git-upload-pack and git-receive-pack are served, not %q\n", sess.RawCommand())
		_ = sess.Exit(1)
		return
	}
	dir, ok := s.repoDir(args[1])
	if !ok {
		fmt.Fprintf(sess.Stderr(), "gittest: no repository %q\n", args[1])
		_ = sess.Exit(1)
		return
	}
	if e := s.endless.Load(); e != nil && e.e.On.Load() && args[0] == "git-upload-pack" && filepath.Base(dir) == e.repo {
		e.e.serve(sess, "")
		_ = sess.Exit(0)
		return
	}
	cmd := exec.CommandContext(s.ctx, "git", strings.TrimPrefix(args[0], "git-"), dir)
	cmd.Env = append(os.Environ(), gitEnv...)
	cmd.Stdout, cmd.Stderr = io.Writer(sess), logWriter{t}
	if s.noCapabilities.Load() && args[0] == "git-receive-pack" {
		cmd.Stdout = &capabilitiesDropper{w: sess}
	}
	// Copied by hand rather than cmd.Stdin = sess: Wait would wait for the client to close its
	// side, which it only does after seeing the exit status.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		_ = sess.Exit(1)
		return
	}
	go func() {
		_, _ = io.Copy(stdin, sess)
		_ = stdin.Close()
	}()
	code := 0
	if err := cmd.Run(); err != nil {
		code = 1
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		}
	}
	_ = sess.Exit(code)
}

// repoDir maps the path a client asked for (/name.git, or name.git from an scp-style address)
// to a bare repository of the server, refusing anything outside it.
func (s *SSHServer) repoDir(p string) (string, bool) {
	name := strings.TrimPrefix(path.Clean("/"+p), "/")
	if name == "" || strings.Contains(name, "/") || !strings.HasSuffix(name, ".git") {
		return "", false
	}
	dir := filepath.Join(s.root, name)
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil {
		return "", false
	}
	return dir, true
}

// NewSSHKey generates an ed25519 key and returns it as an OpenSSH PEM private key and as a
// signer.
func NewSSHKey(t testing.TB) ([]byte, gossh.Signer) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := gossh.MarshalPrivateKey(priv, "gittest")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := gossh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(block), signer
}

// capabilitiesDropper passes git-receive-pack's output through, except the advertisement's first
// pkt-line when it is the "capabilities^{}" line of a repository without refs.
type capabilitiesDropper struct {
	w       io.Writer
	head    []byte // the first pkt-line, until it is whole
	decided bool
}

func (d *capabilitiesDropper) Write(p []byte) (int, error) {
	if d.decided {
		return d.w.Write(p)
	}
	d.head = append(d.head, p...)
	if len(d.head) < 4 {
		return len(p), nil
	}
	n, err := strconv.ParseUint(string(d.head[:4]), 16, 16)
	if err != nil || n < 4 {
		n = 4 // a flush-pkt or not a pkt-line: passed on as is
	}
	if uint64(len(d.head)) < n {
		return len(p), nil
	}
	d.decided = true
	line, rest := d.head[:n], d.head[n:]
	if bytes.HasPrefix(line[4:], []byte(strings.Repeat("0", 40)+" capabilities^{}")) {
		line = nil
	}
	if _, err := d.w.Write(append(line, rest...)); err != nil {
		return 0, err
	}
	return len(p), nil
}
