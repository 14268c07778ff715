package pkgrepo

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/skeema/knownhosts"
	"golang.org/x/crypto/ssh"
)

func init() {
	// go-git would read ~/.ssh/config and /etc/ssh/ssh_config to rewrite the host and port a URL
	// names: a tenant's URL must not pick up the controller machine's ssh configuration.
	gitssh.DefaultSSHConfig = nil
}

// sshDialTimeout bounds the TCP connect and ssh handshake: go-git's ssh transport does not
// honour the context while dialing.
const sshDialTimeout = 30 * time.Second

// sshAuth is a go-git ssh auth method for one private key whose host keys come only from the
// given known_hosts: never from the controller's ~/.ssh, never trusted blindly.
type sshAuth struct {
	user     string
	signer   ssh.Signer
	hostKeys *knownhosts.HostKeyDB
	hostPort string // as go-git dials it, for choosing host key algorithms
}

var _ gitssh.AuthMethod = (*sshAuth)(nil)

func (a *sshAuth) Name() string { return gitssh.PublicKeysName }

// String names the method and user, never the key.
func (a *sshAuth) String() string { return "ssh public key for user " + a.user }

// ClientConfig asks for the host key algorithms known_hosts has for the host, so a server that
// offers several key types presents the one known_hosts can check.
func (a *sshAuth) ClientConfig() (*ssh.ClientConfig, error) {
	return &ssh.ClientConfig{
		User:              a.user,
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(a.signer)},
		HostKeyCallback:   a.checkHostKey,
		HostKeyAlgorithms: a.hostKeys.HostKeyAlgorithms(a.hostPort),
		Timeout:           sshDialTimeout,
	}, nil
}

// checkHostKey checks the server's key against known_hosts and says what to do when it fails.
func (a *sshAuth) checkHostKey(host string, remote net.Addr, key ssh.PublicKey) error {
	err := a.hostKeys.HostKeyCallback()(host, remote, key)
	switch {
	case err == nil:
		return nil
	case knownhosts.IsHostUnknown(err):
		return fmt.Errorf("%w: known_hosts has no key for %s (the server offered %s %s): add the server's host key line, as `ssh-keyscan` prints it, to known_hosts in the Secret",
			ErrHostKeyUnknown, knownhosts.Normalize(host), key.Type(), ssh.FingerprintSHA256(key))
	case knownhosts.IsHostKeyChanged(err):
		return fmt.Errorf("%w: %s offered %s %s, which known_hosts in the Secret does not list for it: if the server's key really changed, replace its known_hosts line",
			ErrHostKeyMismatch, knownhosts.Normalize(host), key.Type(), ssh.FingerprintSHA256(key))
	default:
		return fmt.Errorf("%w: %w", ErrHostKeyMismatch, err)
	}
}

// newSSHAuth parses the key and known_hosts of a for rawURL (ssh:// or scp-style).
func newSSHAuth(rawURL string, a Auth) (*sshAuth, error) {
	if a.Identity == "" {
		return nil, fmt.Errorf("%w: an ssh URL needs a private key: put it in identity (with known_hosts) in the Secret named by secretRef", ErrCredentials)
	}
	if strings.TrimSpace(a.KnownHosts) == "" {
		return nil, fmt.Errorf("%w: known_hosts is empty: add the server's host key line, as `ssh-keyscan` prints it, to known_hosts in the Secret", ErrHostKeyUnknown)
	}
	te, err := transport.NewEndpoint(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parse ssh URL: %w", err)
	}
	signer, err := ssh.ParsePrivateKey([]byte(a.Identity))
	var missing *ssh.PassphraseMissingError
	if errors.As(err, &missing) {
		if a.Passphrase == "" {
			return nil, fmt.Errorf("%w: identity is encrypted: put its passphrase in password", ErrCredentials)
		}
		signer, err = ssh.ParsePrivateKeyWithPassphrase([]byte(a.Identity), []byte(a.Passphrase))
	}
	if err != nil {
		// x/crypto's message says what is wrong with the key, without its bytes.
		return nil, fmt.Errorf("%w: identity is not a usable private key (or password does not decrypt it): %w", ErrCredentials, err)
	}
	hostKeys, err := parseKnownHosts(a.KnownHosts)
	if err != nil {
		return nil, err
	}
	user := te.User
	if user == "" {
		user = gitssh.DefaultUsername
	}
	// go-git keeps an IPv6 host in brackets: join as it dials, not with net.JoinHostPort.
	port := te.Port
	if port <= 0 {
		port = gitssh.DefaultPort
	}
	return &sshAuth{user: user, signer: signer, hostKeys: hostKeys, hostPort: fmt.Sprintf("%s:%d", te.Host, port)}, nil
}

// parseKnownHosts reads known_hosts content with skeema/knownhosts (x/crypto's parser plus
// host key algorithm lookup), which reads files only: the content goes through a private
// temporary file, removed at once. It holds public keys only.
func parseKnownHosts(content string) (*knownhosts.HostKeyDB, error) {
	f, err := os.CreateTemp("", "flotilla-known-hosts-")
	if err != nil {
		return nil, fmt.Errorf("known_hosts: %w", err)
	}
	defer os.Remove(f.Name())
	_, err = f.WriteString(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("known_hosts: %w", err)
	}
	db, err := knownhosts.NewDB(f.Name())
	if err != nil {
		msg := strings.ReplaceAll(err.Error(), f.Name(), "known_hosts")
		return nil, fmt.Errorf("%w: known_hosts is invalid: %s", ErrCredentials, msg)
	}
	return db, nil
}
