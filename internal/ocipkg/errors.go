package ocipkg

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"regexp"
	"strings"
	"syscall"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// wrap turns an error of the registry library into a pkgrepo.RemoteError for op on ref (which
// never carries userinfo: checkName refused it).
func (c client) wrap(op, ref string, err error) error {
	msg := scrub(err.Error(), c.secrets)
	e := &pkgrepo.RemoteError{Op: op, Target: ref, Kind: classify(err), Msg: strings.TrimSpace(msg)}
	switch {
	case errors.Is(e.Kind, pkgrepo.ErrCertificateUntrusted):
		e.Msg += "; if the registry uses a private CA, give its certificate (PEM) as the CA bundle"
	case errors.Is(e.Kind, pkgrepo.ErrAuthentication):
		e.Msg += "; check the username and password (or token) and that they may access this repository"
	}
	if msg == err.Error() {
		e.Cause = err
	} else {
		for _, ctxErr := range []error{context.Canceled, context.DeadlineExceeded, errPlainHTTP} {
			if errors.Is(err, ctxErr) {
				e.Cause = ctxErr
			}
		}
	}
	return e
}

// isNotFound: the registry has no such manifest (or repository).
func isNotFound(err error) bool {
	var terr *transport.Error
	if !errors.As(err, &terr) {
		return false
	}
	if terr.StatusCode == http.StatusNotFound {
		return true
	}
	for _, d := range terr.Errors {
		if d.Code == transport.ManifestUnknownErrorCode || d.Code == transport.NameUnknownErrorCode {
			return true
		}
	}
	return false
}

// classify maps a registry error to the sentinel a user can act on, or nil when it is none.
func classify(err error) error {
	if errors.Is(err, pkgrepo.ErrAnswerTooLarge) {
		return pkgrepo.ErrAnswerTooLarge
	}
	var terr *transport.Error
	if errors.As(err, &terr) {
		switch {
		case terr.StatusCode == http.StatusUnauthorized || terr.StatusCode == http.StatusForbidden:
			return pkgrepo.ErrAuthentication
		case isNotFound(err):
			return pkgrepo.ErrRevisionNotFound
		case terr.StatusCode >= 500 || terr.StatusCode == http.StatusTooManyRequests:
			return pkgrepo.ErrUnreachable
		}
		for _, d := range terr.Errors {
			if d.Code == transport.UnauthorizedErrorCode || d.Code == transport.DeniedErrorCode {
				return pkgrepo.ErrAuthentication
			}
		}
		return nil
	}
	var tlsErr *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var badHost x509.HostnameError
	var badCert x509.CertificateInvalidError
	switch {
	case errors.As(err, &tlsErr), errors.As(err, &unknownCA), errors.As(err, &badHost), errors.As(err, &badCert):
		return pkgrepo.ErrCertificateUntrusted
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, errPlainHTTP):
		return nil
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return pkgrepo.ErrUnreachable
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return pkgrepo.ErrUnreachable
	}
	return nil
}

var (
	// An Authorization value a registry echoed back (a token, not a word of prose).
	authHeader = regexp.MustCompile(`\b(Basic|Bearer) [A-Za-z0-9._~+/-]{8,}=*`)
	// userinfo in a URL.
	userinfo = regexp.MustCompile(`://[^/\s@"']*@`)
	// A URL's query: pre-signed blob URLs carry their signature there.
	urlQuery = regexp.MustCompile(`(https?://[^\s?"']*)\?[^\s"']*[^\s"':]`)
)

// scrub removes every credential from msg: the ones the caller gave, and what looks like one.
// Belt and braces: credentials never go into a URL, but a registry may echo what it was sent.
func scrub(msg string, secrets []string) string {
	msg = pkgrepo.Scrub(msg, secrets)
	msg = authHeader.ReplaceAllString(msg, "$1 <redacted>")
	msg = userinfo.ReplaceAllString(msg, "://<redacted>@")
	return urlQuery.ReplaceAllString(msg, "$1?<redacted>")
}
