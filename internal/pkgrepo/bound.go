package pkgrepo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/net/proxy"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/flotilla-dev/flotilla/internal/bounded"
)

// A git server is a tenant's input: a Repository may name any server, and what the server
// answers is read into the controller's memory (a ref advertisement) and onto its disk (a pack).
// Each exchange is bounded in bytes, so one hostile or broken server cannot exhaust what every
// tenant shares; the reconcile timeout bounds it in time.

// MaxAdvertisementBytes bounds one ref advertisement (over http(s) the answer to info/refs, over
// ssh what a connection reads up to it, handshake included), read whole into memory. A kpt
// catalog of 1,000 packages with 50 revisions each advertises ≈ 4 MB.
const MaxAdvertisementBytes = 32 << 20

// DefaultMaxPackBytes is Store.MaxPackBytes when unset.
const DefaultMaxPackBytes = 1 << 30

// boundScheme is the proxy scheme an ssh endpoint is dialed through: go-git's ssh transport has
// no hook for its connection but its proxy, so a bounded operation names a proxy of this scheme,
// whose dialer dials as go-git would (proxy.Dial: the environment's ALL_PROXY) and bounds what the
// connection reads (sshDialer, sshClient).
const boundScheme = "flotilla-bounded"

func init() {
	client.InstallProtocol("ssh", sshClient{gitssh.DefaultClient})
	proxy.RegisterDialerType(boundScheme, func(u *url.URL, _ proxy.Dialer) (proxy.Dialer, error) {
		b, ok := sshBounds.Load(u.Host)
		if !ok {
			return nil, fmt.Errorf("ssh: no bound %q (the operation ended)", u.Host)
		}
		return sshDialer{b.(*answerBound)}, nil
	})
}

// answerBound is what one git operation (a fetch, a push) may read from its server, and what it
// found when it read more.
type answerBound struct {
	pack   int64 // Store.MaxPackBytes
	advert int64 // MaxAdvertisementBytes, less in tests
	// exceeded is the message of the first answer cut, nil while none was.
	exceeded atomic.Pointer[string]
	token    string // the ssh proxy's host, "" until registered
	// conn is the operation's latest ssh connection.
	conn atomic.Pointer[boundedConn]
}

// cut records that an answer went past its bound (msg says which), and returns the error its
// reader gets.
func (b *answerBound) cut(msg string) error {
	b.exceeded.CompareAndSwap(nil, &msg)
	return fmt.Errorf("%w: %s", ErrAnswerTooLarge, msg)
}

// size formats a bound as the controller's flags take it: 1Gi, 32Mi.
func size(n int64) string { return resource.NewQuantity(n, resource.BinarySI).String() }

// sshBounds are the bounds of running ssh operations, by token.
var (
	sshBounds sync.Map
	sshTokens atomic.Uint64
)

type boundKey struct{}

// bound returns ctx carrying a new bound for one operation against ep (a fetch, a push), and the
// bound. Over ssh, the operation's sessions must be dialed with proxyOf(ctx); release ends it.
func (s *Store) bound(ctx context.Context, ep endpoint) (context.Context, *answerBound) {
	b := &answerBound{pack: s.MaxPackBytes, advert: s.maxAdvertisement}
	if b.pack <= 0 {
		b.pack = DefaultMaxPackBytes
	}
	if b.advert <= 0 {
		b.advert = MaxAdvertisementBytes
	}
	if ep.proto == protoSSH {
		b.token = strconv.FormatUint(sshTokens.Add(1), 10)
		sshBounds.Store(b.token, b)
	}
	return context.WithValue(ctx, boundKey{}, b), b
}

// release ends the operation: its ssh connections can no longer be dialed.
func (b *answerBound) release() {
	if b.token != "" {
		sshBounds.Delete(b.token)
	}
}

// check returns an ErrAnswerTooLarge RemoteError for op against ep when the operation failed
// (err) after an answer was cut, else nil. go-git's own error then says little more than that a
// stream ended; a mirror that could not take back a push it wrote (forgetError) is said too.
func (b *answerBound) check(op string, ep endpoint, err error) error {
	msg := b.exceeded.Load()
	if msg == nil || err == nil {
		return nil
	}
	e := &RemoteError{Op: op, Target: ep.display, Kind: ErrAnswerTooLarge, Msg: *msg}
	var fe *forgetError
	if errors.As(err, &fe) {
		e.Msg += "; " + fe.Error()
		e.Cause = fe
	}
	return e
}

// proxyOf is the proxy option that bounds an ssh session of the operation ctx carries: zero when
// it carries none, or is not over ssh.
func proxyOf(ctx context.Context) transport.ProxyOptions {
	if b, ok := ctx.Value(boundKey{}).(*answerBound); ok && b.token != "" {
		return transport.ProxyOptions{URL: boundScheme + "://" + b.token}
	}
	return transport.ProxyOptions{}
}

// boundOf is the bound ctx carries, or one with the defaults.
func boundOf(ctx context.Context) *answerBound {
	if b, ok := ctx.Value(boundKey{}).(*answerBound); ok {
		return b
	}
	return &answerBound{pack: DefaultMaxPackBytes, advert: MaxAdvertisementBytes}
}

// boundedTransport bounds the body of every answer: an advertisement (GET) at the operation's
// advert bound, anything else (a pack, a push's report) at its pack bound, and one that is not a
// success at bounded.ErrorPageBytes (quietly: the status is the error). Bodies are counted as read, after
// net/http took any gzip off.
type boundedTransport struct{ base http.RoundTripper }

func (t boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if bounded.ErrorPage(res, bounded.ErrorPageBytes) {
		return res, nil
	}
	b := boundOf(req.Context())
	if req.Method == http.MethodGet {
		res.Body = bounded.Body(res.Body, b.advert, b.cutAdvert)
	} else {
		res.Body = bounded.Body(res.Body, b.pack, b.cutPack)
	}
	return res, nil
}

// cutAdvert and cutPack record that an advertisement or a pack went past its bound and return the
// error its reader gets.
func (b *answerBound) cutAdvert() error {
	return b.cut(fmt.Sprintf("the server's ref advertisement was larger than %s, the most flotilla reads; flotilla stopped reading it", size(b.advert)))
}

func (b *answerBound) cutPack() error {
	return b.cut(fmt.Sprintf("the server's answer (a pack) was larger than %s, the controller's --git-max-pack-size; flotilla stopped reading it", size(b.pack)))
}

// sshHandshakeBytes is what an ssh connection may read besides the ref advertisement before it
// (the version, key exchange, host key, authentication and session replies: a few KB).
const sshHandshakeBytes = 64 << 10

// sshDialer dials as go-git's ssh transport does without a proxy, and bounds the connection: at
// first to the handshake and the advertisement, then (sshClient, once the advertisement is read)
// with the pack bound added.
type sshDialer struct{ b *answerBound }

func (d sshDialer) Dial(network, addr string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, addr)
}

func (d sshDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := proxy.Dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	bc := &boundedConn{Conn: c}
	bc.r = bounded.NewReader(c, sshHandshakeBytes+d.b.advert, func() error {
		_ = c.Close()
		if bc.packPhase.Load() {
			return d.b.cutPack()
		}
		return d.b.cutAdvert()
	})
	d.b.conn.Store(bc)
	return bc, nil
}

// boundedConn is an ssh connection within its bound. x/crypto's ssh transport reads it in one
// goroutine; sshClient raises its bound from another.
type boundedConn struct {
	net.Conn
	r         *bounded.Reader
	packPhase atomic.Bool
}

func (c *boundedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// advertised ends the advertisement phase of the operation's connection (its latest: an
// operation's ssh sessions run one after another): the pack bound is added to its bound.
func (b *answerBound) advertised() {
	if c := b.conn.Load(); c != nil && !c.packPhase.Swap(true) {
		c.r.Raise(b.pack)
	}
}

// sshClient is go-git's ssh transport with sessions that end their connection's advertisement
// phase once the advertisement is read.
type sshClient struct{ transport.Transport }

// sshBoundOf is the bound an endpoint's proxy option names, nil when it names none.
func sshBoundOf(ep *transport.Endpoint) *answerBound {
	host, ok := strings.CutPrefix(ep.Proxy.URL, boundScheme+"://")
	if !ok {
		return nil
	}
	if b, ok := sshBounds.Load(host); ok {
		return b.(*answerBound)
	}
	return nil
}

func (c sshClient) NewUploadPackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.UploadPackSession, error) {
	s, err := c.Transport.NewUploadPackSession(ep, auth)
	if err != nil {
		return nil, err
	}
	if b := sshBoundOf(ep); b != nil {
		return uploadSession{advertPhase{s, b}, s}, nil
	}
	return s, nil
}

func (c sshClient) NewReceivePackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.ReceivePackSession, error) {
	s, err := c.Transport.NewReceivePackSession(ep, auth)
	if err != nil {
		return nil, err
	}
	if b := sshBoundOf(ep); b != nil {
		return receiveSession{advertPhase{s, b}, s}, nil
	}
	return s, nil
}

// advertPhase is a session whose advertisement, once read, ends its connection's advertisement
// phase.
type advertPhase struct {
	transport.Session
	b *answerBound
}

func (s advertPhase) AdvertisedReferences() (*packp.AdvRefs, error) {
	return s.AdvertisedReferencesContext(context.Background())
}

func (s advertPhase) AdvertisedReferencesContext(ctx context.Context) (*packp.AdvRefs, error) {
	defer s.b.advertised()
	return s.Session.AdvertisedReferencesContext(ctx)
}

// uploadSession reads the advertisement (within its bound) before the pack: go-git's session
// would read it itself if it has not yet.
type uploadSession struct {
	advertPhase
	up transport.UploadPackSession
}

func (s uploadSession) UploadPack(ctx context.Context, req *packp.UploadPackRequest) (*packp.UploadPackResponse, error) {
	if _, err := s.AdvertisedReferencesContext(ctx); err != nil {
		return nil, err
	}
	return s.up.UploadPack(ctx, req)
}

// receiveSession reads the advertisement (within its bound) before it pushes.
type receiveSession struct {
	advertPhase
	rp transport.ReceivePackSession
}

func (s receiveSession) ReceivePack(ctx context.Context, req *packp.ReferenceUpdateRequest) (*packp.ReportStatus, error) {
	if _, err := s.AdvertisedReferencesContext(ctx); err != nil {
		return nil, err
	}
	return s.rp.ReceivePack(ctx, req)
}
