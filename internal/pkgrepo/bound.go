package pkgrepo

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"golang.org/x/net/proxy"
	"k8s.io/apimachinery/pkg/api/resource"
)

// A git server is a tenant's input: a Repository may name any server, and what the server
// answers is read into the controller's memory (a ref advertisement) and onto its disk (a pack).
// Each exchange is bounded in bytes, so one hostile or broken server cannot exhaust what every
// tenant shares; the reconcile timeout bounds it in time.

// MaxAdvertisementBytes bounds one ref advertisement over http(s) (the answer to info/refs), read
// whole into memory. A kpt catalog of 1,000 packages with 50 revisions each advertises ≈ 4 MB.
const MaxAdvertisementBytes = 32 << 20

// DefaultMaxPackBytes is Store.MaxPackBytes when unset.
const DefaultMaxPackBytes = 1 << 30

// boundScheme is the proxy scheme an ssh endpoint is dialed through: go-git's ssh transport has
// no hook for its connection but its proxy, so a bounded operation names a proxy of this scheme,
// whose dialer dials as go-git would (proxy.Dial: the environment's ALL_PROXY) and bounds what the
// connection reads.
const boundScheme = "flotilla-bounded"

func init() {
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
// stream ended.
func (b *answerBound) check(op string, ep endpoint, err error) error {
	msg := b.exceeded.Load()
	if msg == nil || err == nil {
		return nil
	}
	return &RemoteError{Op: op, Target: ep.display, Kind: ErrAnswerTooLarge, Msg: *msg}
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

// boundedTransport bounds the body of every answer: an advertisement (GET) at
// MaxAdvertisementBytes, anything else (a pack, a push's report) at the operation's pack bound.
// Bodies are counted as read, after net/http took any gzip off.
type boundedTransport struct{ base http.RoundTripper }

func (t boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	b := boundOf(req.Context())
	advert := req.Method == http.MethodGet
	limit := b.pack
	if advert {
		limit = b.advert
	}
	res.Body = &boundedBody{ReadCloser: res.Body, budget: budget{left: limit, cut: func() error {
		if advert {
			return b.cut(fmt.Sprintf("the server's ref advertisement was larger than %s, the most flotilla reads; flotilla stopped reading it", size(limit)))
		}
		return b.cut(fmt.Sprintf("the server's answer was larger than %s, the controller's --git-max-pack-size; flotilla stopped reading it", size(limit)))
	}}}
	return res, nil
}

// budget is how much more a reader may read before it is cut.
type budget struct {
	left int64
	cut  func() error // called once, when a read goes past left; its error is every read's after
	err  error
}

// read reads from r into p within the budget.
func (b *budget) read(r io.Reader, p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // one byte more than allowed tells an answer at the bound from one past it
	}
	n, err := r.Read(p)
	if int64(n) > b.left {
		b.err = b.cut()
		return int(b.left), b.err
	}
	b.left -= int64(n)
	return n, err
}

type boundedBody struct {
	io.ReadCloser
	budget budget
}

func (r *boundedBody) Read(p []byte) (int, error) { return r.budget.read(r.ReadCloser, p) }

// sshDialer dials as go-git's ssh transport does without a proxy, and bounds the connection.
type sshDialer struct{ b *answerBound }

func (d sshDialer) Dial(network, addr string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, addr)
}

func (d sshDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := proxy.Dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	// One connection carries one command: its advertisement and its pack, bounded together.
	limit := d.b.pack + d.b.advert
	cut := func() error {
		_ = c.Close()
		return d.b.cut(fmt.Sprintf("the server sent more than %s over one ssh connection (the controller's --git-max-pack-size, %s, and %s for the ref advertisement); flotilla stopped reading it",
			size(limit), size(d.b.pack), size(d.b.advert)))
	}
	return &boundedConn{Conn: c, budget: budget{left: limit, cut: cut}}, nil
}

// boundedConn is read by one goroutine (x/crypto's ssh transport reads in one loop).
type boundedConn struct {
	net.Conn
	budget budget
}

func (c *boundedConn) Read(p []byte) (int, error) { return c.budget.read(c.Conn, p) }
