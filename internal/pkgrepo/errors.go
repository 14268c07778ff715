package pkgrepo

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// Sentinel errors. Every error this package returns for one of these
// situations wraps the matching sentinel, so callers can map it to a
// condition reason with errors.Is.
var (
	// ErrPackageNotFound: the package has no published revision, or the
	// revision has no <package>/Kptfile.
	ErrPackageNotFound = errors.New("package not found")
	// ErrRevisionNotFound: the package exists but not at that revision.
	ErrRevisionNotFound = errors.New("revision not found")
	// ErrAuthentication: the server rejected the credentials (HTTP 401/403).
	ErrAuthentication = errors.New("authentication failed")
	// ErrUnreachable: the repository could not be reached (connection
	// refused, DNS, HTTP 5xx) or does not exist.
	ErrUnreachable = errors.New("repository unreachable")
	// ErrProposalNotFound: there is no branch proposed/<package>/v<N>.
	ErrProposalNotFound = errors.New("proposal not found")
	// ErrProposalChanged: the proposal branch no longer points at the commit
	// that was approved.
	ErrProposalChanged = errors.New("proposal changed")
	// ErrTagMoved: a tag resolved before now names another commit. Tags are
	// immutable to flotilla: the caller keeps what it resolved first.
	ErrTagMoved = errors.New("tag moved")
	// ErrTagExists: the revision a proposal would publish is already taken.
	ErrTagExists = errors.New("tag already exists")
	// ErrInvalidPackage: a package holds something flotilla refuses to read
	// (a symlink, an oversized file, too many files).
	ErrInvalidPackage = errors.New("invalid package")
	// ErrPackageChanged: the package changed on the branch since the commit
	// the caller computed its content from (PublishRequest.PackageBase).
	ErrPackageChanged = errors.New("package changed on the branch")
	// ErrLocalRepository: a file:// URL or path, and the Store does not allow
	// local repositories.
	ErrLocalRepository = errors.New("local repository refused")
	// ErrCredentials: the credentials cannot be used as given (an ssh URL
	// without a key, a key that does not parse, a CA bundle without a
	// certificate).
	ErrCredentials = errors.New("credentials unusable")
	// ErrHostKeyUnknown: known_hosts has no key for the ssh server.
	ErrHostKeyUnknown = errors.New("ssh host key unknown")
	// ErrNotGit: the remote is an OCI repository, where only git will do.
	ErrNotGit = errors.New("not a git repository")
	// ErrHostKeyMismatch: the ssh server presented a key known_hosts does not
	// list for it.
	ErrHostKeyMismatch = errors.New("ssh host key mismatch")
	// ErrRemoteEmptied: the remote advertised no branches or tags although the
	// mirror fetched some before. An empty answer is taken for a server fault
	// (a proxy that gives up with an empty 200, a server being restored), not
	// as every package and revision deleted at once: the mirror keeps its refs.
	ErrRemoteEmptied = errors.New("remote advertised no refs")
	// ErrAnswerTooLarge: the server sent more than flotilla reads from one answer (a ref
	// advertisement, a pack): MaxAdvertisementBytes, Store.MaxPackBytes.
	ErrAnswerTooLarge = errors.New("git server's answer too large")
	// ErrCertificateUntrusted: the https server's certificate does not verify
	// against the system's CAs and the CA bundle given.
	ErrCertificateUntrusted = errors.New("server certificate not trusted")
)

// RemoteError reports a failed exchange with a remote: a git server (fetch, push) or an OCI
// registry (ocipkg). Its message names the remote without userinfo and has every credential
// scrubbed out; the library error it came from is only reachable through Unwrap when its text
// contains no credential (Cause is then that error, else at most a context error).
type RemoteError struct {
	Op     string // "fetch", "push", "resolve", ...
	Target string // the remote, without credentials
	Kind   error  // one of the sentinels, or nil
	Msg    string
	Cause  error
}

func (e *RemoteError) Error() string {
	if e.Kind != nil {
		return fmt.Sprintf("%s %s: %v: %s", e.Op, e.Target, e.Kind, e.Msg)
	}
	return fmt.Sprintf("%s %s: %s", e.Op, e.Target, e.Msg)
}

func (e *RemoteError) Unwrap() []error {
	var errs []error
	for _, err := range []error{e.Kind, e.Cause} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// wrapTransport turns an error from go-git's transport into a RemoteError for op against ep.
func wrapTransport(op string, ep endpoint, err error) error {
	msg := Scrub(err.Error(), ep.secrets)
	e := &RemoteError{Op: op, Target: ep.display, Kind: classify(err), Msg: strings.TrimRight(msg, " \n:")}
	if e.Kind != nil {
		// The host key check's own message already starts with the sentinel.
		e.Msg = strings.TrimPrefix(strings.TrimPrefix(e.Msg, "ssh: handshake failed: "), e.Kind.Error()+": ")
	}
	if errors.Is(e.Kind, ErrCertificateUntrusted) {
		e.Msg += "; if the server uses a private CA, put its certificate (PEM) in ca.crt of the Secret"
	}
	if msg == err.Error() {
		e.Cause = err
	} else if ctxErr := contextError(err); ctxErr != nil {
		e.Cause = ctxErr
	}
	return e
}

// classify maps a transport error to the sentinel a user can act on, or nil
// when it is none of them.
func classify(err error) error {
	// go-git wraps some errors in a plumbing.UnexpectedError, which has no Unwrap.
	var unexpected *plumbing.UnexpectedError
	if errors.As(err, &unexpected) && unexpected.Err != nil {
		if kind := classify(unexpected.Err); kind != nil {
			return kind
		}
	}
	var tlsErr *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var badHost x509.HostnameError
	var badCert x509.CertificateInvalidError
	switch {
	case errors.Is(err, ErrAnswerTooLarge):
		return ErrAnswerTooLarge
	case errors.Is(err, ErrHostKeyUnknown):
		return ErrHostKeyUnknown
	case errors.Is(err, ErrHostKeyMismatch):
		return ErrHostKeyMismatch
	case errors.As(err, &tlsErr), errors.As(err, &unknownCA), errors.As(err, &badHost), errors.As(err, &badCert):
		return ErrCertificateUntrusted
	case errors.Is(err, transport.ErrAuthenticationRequired),
		errors.Is(err, transport.ErrAuthorizationFailed),
		// x/crypto/ssh has no error type for a rejected key.
		strings.Contains(err.Error(), "ssh: unable to authenticate"):
		return ErrAuthentication
	case errors.Is(err, transport.ErrRepositoryNotFound),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH):
		return ErrUnreachable
	}
	if contextError(err) != nil {
		return nil
	}
	var dnsErr *net.DNSError
	var opErr *net.OpError
	if errors.As(err, &dnsErr) || errors.As(err, &opErr) {
		return ErrUnreachable
	}
	// go-git reports other HTTP statuses as an *http.Err inside a
	// plumbing.UnexpectedError, which has no Unwrap.
	if unexpected != nil {
		var httpErr *githttp.Err
		if errors.As(unexpected.Err, &httpErr) && httpErr.StatusCode() >= 500 {
			return ErrUnreachable
		}
		var netErr net.Error
		if errors.As(unexpected.Err, &netErr) {
			return ErrUnreachable
		}
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return ErrUnreachable
	}
	return nil
}

func contextError(err error) error {
	for _, ctxErr := range []error{context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, ctxErr) {
			return ctxErr
		}
	}
	return nil
}

// Scrub replaces every occurrence of a secret in msg. Belt and braces: the URL handed to go-git
// (or a registry client) never carries credentials, but a server may echo what it was sent.
func Scrub(msg string, secrets []string) string {
	for _, s := range secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "<redacted>")
		}
	}
	return msg
}
