package ocipkg

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/flotilla-dev/flotilla/internal/bounded"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// client is what one call needs to talk to a registry: the library's options and the secrets
// to scrub from any error it returns.
type client struct {
	ctx     context.Context
	remote  []remote.Option
	secrets []string
}

func newClient(ctx context.Context, opts Options) (client, error) {
	rt, err := roundTripper(opts)
	if err != nil {
		return client{}, err
	}
	auth := authn.Anonymous
	var secrets []string
	if opts.Username != "" || opts.Password != "" {
		auth = &authn.Basic{Username: opts.Username, Password: opts.Password}
		// The password alone, and as it travels in a Basic header.
		secrets = append(secrets, opts.Password, base64.StdEncoding.EncodeToString([]byte(opts.Username+":"+opts.Password)))
	}
	return client{
		ctx: ctx,
		remote: []remote.Option{
			remote.WithContext(ctx),
			remote.WithTransport(rt),
			remote.WithAuth(auth),
			remote.WithUserAgent("flotilla"),
		},
		secrets: secrets,
	}, nil
}

func roundTripper(opts Options) (http.RoundTripper, error) {
	rt := opts.Transport
	switch {
	case rt != nil && len(opts.CABundle) > 0:
		return nil, errors.New("options: CABundle applies to the default transport only; with a Transport of your own, configure its TLS there")
	case rt == nil:
		t := remote.DefaultTransport.(*http.Transport).Clone()
		if len(opts.CABundle) > 0 {
			pool, err := x509.SystemCertPool()
			if err != nil {
				pool = x509.NewCertPool()
			}
			if !pool.AppendCertsFromPEM(opts.CABundle) {
				return nil, fmt.Errorf("%w: the CA bundle holds no PEM certificate", pkgrepo.ErrCredentials)
			}
			t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		}
		rt = t
	}
	return httpsOnly{next: rt, allowHTTP: opts.Insecure}, nil
}

// errPlainHTTP: a request would have gone out over plain http without Options.Insecure.
var errPlainHTTP = errors.New("plain http refused")

// httpsOnly refuses plain http unless allowed. The registry library tries http by itself for
// registries on loopback and private addresses, and follows redirects (blob storage) wherever
// they point: without this, credentials could cross the network in clear text although the
// caller never asked for http. It bounds the registry's answers too: one that is not a success
// at maxErrorBytes (a blob's as well), every other but a blob at maxAnswerBytes.
type httpsOnly struct {
	next      http.RoundTripper
	allowHTTP bool
}

func (t httpsOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" && !t.allowHTTP {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, fmt.Errorf("%w to %s: the registry must serve https, or set insecure (flotilla publish --insecure) for one without TLS", errPlainHTTP, req.URL.Host)
	}
	res, err := t.next.RoundTrip(req)
	if err != nil || bounded.ErrorPage(res, maxErrorBytes) || isBlob(req) {
		return res, err
	}
	limit := int64(maxAnswerBytes)
	if strings.HasSuffix(req.URL.Path, "/tags/list") {
		limit = maxTagPageBytes
	}
	// The library does not close a body whose decoding failed: closed here, or the connection (and
	// the server sending) would stay until the process ends.
	body := res.Body
	res.Body = bounded.Body(body, limit, func() error {
		_ = body.Close()
		return fmt.Errorf("%w: the registry's answer was larger than %d MiB, the most flotilla reads; flotilla stopped reading it", pkgrepo.ErrAnswerTooLarge, limit>>20)
	})
	return res, nil
}

// maxErrorBytes bounds an answer that is not a success: the registry library puts it in its
// error, which reaches a status tenants read, and reads the error codes in it (DENIED,
// MANIFEST_UNKNOWN) that say what failed. A registry's JSON error, details included, fits; a page
// of some other service is cut (bounded.ErrorPageBytes, a git server's, is too short for the
// codes of a registry whose details are long).
const maxErrorBytes = 4 << 10

// maxAnswerBytes bounds every answer of a registry but a blob's (a manifest, a page of tags, a
// token): registries are a tenant's input, and the library reads these whole into memory. A
// blob is bounded by its size in the manifest, which the library checks as it reads.
const maxAnswerBytes = 32 << 20

// maxTagPageBytes bounds a page of tags, decoded into a string per tag: 100,000 tags (maxTags) of
// 64 characters fit.
const maxTagPageBytes = 8 << 20

// blobPath is the path of a blob by digest (/v2/NAME/blobs/ALGORITHM:HEX), at its end: NAME may
// hold a "blobs" component of its own.
var blobPath = regexp.MustCompile(`/blobs/[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$`)

// isBlob tells whether req fetches a blob by digest, or follows a redirect of one (to blob
// storage).
func isBlob(req *http.Request) bool {
	for req.Response != nil && req.Response.Request != nil {
		req = req.Response.Request
	}
	return blobPath.MatchString(req.URL.Path)
}
