package pkgrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/revlist"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
)

// maxAttempts bounds how often a write is rebuilt after losing a race.
const maxAttempts = 10

// plan is what one attempt decided: the refs to push in one atomic push
// and what to report once they are pushed. No refspecs: nothing to push.
type plan struct {
	refspecs []config.RefSpec
	result   PublishResult
}

// update asks build for a plan against the mirror and pushes it. The mirror is fetched first,
// unless fetchFirst is false and this process fetched or pushed it with the same credentials
// before and the server was not found to lack atomic pushes: then the push (pushExact) is the
// check. It starts from the server's advertisement, goes ahead only if the remote's refs are
// exactly the mirror's, and names as each ref's old value what the mirror holds, so the server
// refuses it, all of it, if a ref moved after all. A push found stale, or refused while the remote's refs moved (someone else
// pushed), is retried with a fetch: build runs again on the new state, so the other writer's
// commit becomes the parent of ours. A push that fails while nothing moved is returned as is.
func (s *Store) update(ctx context.Context, m *mirror, ep endpoint, fetchFirst bool, build func() (plan, error)) (PublishResult, error) {
	var lastErr error
	var lastDigest string
	for attempt := range maxAttempts {
		if attempt > 0 {
			if err := sleep(ctx, backoff(attempt)); err != nil {
				return PublishResult{}, err
			}
		}
		fetch := attempt > 0 || fetchFirst || m.fetched.IsZero() || m.credential != ep.credential || m.atomicRefused(s.now())
		p, digest, err := s.prepare(ctx, m, ep, fetch, build)
		if err == nil && !fetch && len(p.refspecs) == 0 {
			// Nothing to write, by the mirror: the remote may say otherwise (a publish that
			// writes nothing is how a cluster's repository is checked for edits by hand).
			fetch = true
			p, digest, err = s.prepare(ctx, m, ep, fetch, build)
		}
		if err != nil {
			return PublishResult{}, err
		}
		if attempt > 0 && digest == lastDigest {
			return PublishResult{}, lastErr
		}
		if len(p.refspecs) == 0 {
			return p.result, nil
		}
		err = s.pushBounded(ctx, m, ep, p.refspecs, fetch)
		if err == nil {
			m.fetched, m.credential = s.now(), ep.credential // the push saw the remote as the mirror is now
			return p.result, nil
		}
		if errors.Is(err, errStale) || errors.Is(err, errNoAtomic) {
			lastErr, lastDigest = err, "" // fetch and build again
			continue
		}
		if errors.Is(err, ErrAnswerTooLarge) {
			return PublishResult{}, err // pushBounded's RemoteError: the same server would answer the same
		}
		lastErr, lastDigest = wrapTransport("push", ep, err), digest
		if errors.Is(lastErr, ErrAuthentication) || errors.Is(lastErr, ErrUnreachable) || ctx.Err() != nil {
			return PublishResult{}, lastErr
		}
	}
	return PublishResult{}, fmt.Errorf("gave up after %d attempts: %w", maxAttempts, lastErr)
}

// pushBounded is m.push with the server's answers bounded (Store.bound).
func (s *Store) pushBounded(ctx context.Context, m *mirror, ep endpoint, refspecs []config.RefSpec, fetched bool) error {
	ctx, bound := s.bound(ctx, ep)
	defer bound.release()
	err := m.push(ctx, ep, refspecs, fetched, s.now())
	if cut := bound.check("push", ep, err); cut != nil {
		return cut
	}
	return err
}

// prepare fetches (if fetch) and asks build for a plan; it returns the plan and the digest of the
// refs it was built on.
func (s *Store) prepare(ctx context.Context, m *mirror, ep endpoint, fetch bool, build func() (plan, error)) (plan, string, error) {
	if fetch {
		if err := s.fetch(ctx, m, ep); err != nil {
			return plan{}, "", err
		}
	}
	digest, err := m.refsDigest()
	if err != nil {
		return plan{}, "", fmt.Errorf("%s: %w", ep.display, err)
	}
	p, err := build()
	s.built(m)
	return p, digest, err
}

// dryRun fetches and asks build for a plan, as update does, and reports it without pushing.
func (s *Store) dryRun(ctx context.Context, m *mirror, ep endpoint, build func() (plan, error)) (PublishResult, error) {
	if err := s.fetch(ctx, m, ep); err != nil {
		return PublishResult{}, err
	}
	p, err := build()
	s.built(m)
	if err != nil {
		return PublishResult{}, err
	}
	return p.result, nil
}

// push sends refspecs in one atomic push: the server applies all ref updates or none, so a
// branch never moves without its tag. Where the server offers atomic pushes, it is pushExact;
// else, on a mirror fetched for this plan (fetched), go-git's push, whose non-force refspecs are
// checked against the refs the server advertises (which detects most concurrent pushes; the
// server checks them again under its ref locks), and for atomicRecheck after now every publish
// fetches first and pushes so.
func (m *mirror) push(ctx context.Context, ep endpoint, refspecs []config.RefSpec, fetched bool, now time.Time) error {
	defer m.forget() // a push updates the mirror's refs too
	opts, err := m.transportOptions(ep)
	if err != nil {
		return err
	}
	unreported := false
	if !m.atomicRefused(now) {
		err = m.pushExact(ctx, ep, opts, refspecs)
		switch {
		case errors.Is(err, errNoAtomic):
			m.noAtomicAt = now
		case errors.Is(err, errNoCapabilities):
			// An empty repository whose server advertises no capabilities for it (the mirror is
			// empty too): go-git's push, this once, which no report of the outcome follows.
			unreported = true
		default:
			return err
		}
	}
	if !fetched {
		return errNoAtomic // built on the mirror unfetched: only an exact push may carry that
	}
	err = m.remote(ep).PushContext(ctx, &git.PushOptions{
		RemoteName:   "origin",
		RefSpecs:     refspecs,
		Auth:         opts.auth,
		CABundle:     opts.caBundle,
		Atomic:       true,
		ProxyOptions: proxyOf(ctx),
	})
	switch {
	case errors.Is(err, git.NoErrAlreadyUpToDate):
		return nil
	case unreported && err == nil:
		return m.confirm(ctx, ep, opts, refspecs)
	case unreported:
		return errors.Join(err, m.forgetPush(refspecs))
	}
	return err
}

// confirmWait is how long a push that no report follows waits for the server to show it.
var confirmWait = 5 * time.Second

// confirm waits, confirmWait at most, until the remote advertises every ref of refspecs as pushed
// (a delete: gone). A server that advertised no capabilities reports nothing of a push (go-git's
// push returns once the pack is sent, and the server may still refuse it or not have applied it):
// what it advertises after is the only word on it. go-git's push has already written the refs to
// the mirror; a push the server does not show is forgotten (forgetPush).
func (m *mirror) confirm(parent context.Context, ep endpoint, opts transportOptions, refspecs []config.RefSpec) error {
	ctx, cancel := context.WithTimeout(parent, confirmWait)
	defer cancel()
	unconfirmed := func(err error) error {
		switch {
		case parent.Err() != nil:
			err = parent.Err()
		case ctx.Err() != nil:
			err = fmt.Errorf("its refs did not show the push within %s", confirmWait)
		}
		return errors.Join(fmt.Errorf("push %s: the server advertised no capabilities, so it reports no outcome of a push: %w", ep.display, err), m.forgetPush(refspecs))
	}
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		remote, err := ep.refs(ctx, opts)
		if err != nil && !errors.Is(err, transport.ErrEmptyRemoteRepository) {
			return unconfirmed(err)
		}
		if shows(remote, refspecs) {
			return nil
		}
		if err := sleep(ctx, wait); err != nil {
			return unconfirmed(err)
		}
	}
}

// shows reports whether remote holds every ref of refspecs as pushed (a delete: gone).
func shows(remote map[plumbing.ReferenceName]plumbing.Hash, refspecs []config.RefSpec) bool {
	for _, rs := range refspecs {
		if h, ok := remote[rs.Dst("")]; rs.IsDelete() == ok || (!rs.IsDelete() && h != plumbing.NewHash(rs.Src())) {
			return false
		}
	}
	return true
}

// forgetPush takes back what go-git's push wrote to the mirror for a push the server did not
// confirm: the mirror was empty before it (an unreported push is one to an empty repository), so
// the pushed refs are removed, and the next fetch is a full one (a fetch that finds the remote's
// refs equal to the mirror's skips the objects, and the remote may now hold another writer's).
func (m *mirror) forgetPush(refspecs []config.RefSpec) error {
	m.fetched = time.Time{}
	var errs []error
	for _, rs := range refspecs {
		errs = append(errs, m.repo.Storer.RemoveReference(rs.Dst("")))
	}
	if err := errors.Join(errs...); err != nil {
		return &forgetError{err}
	}
	return nil
}

// forgetError: the mirror could not take back a push it wrote (forgetPush).
type forgetError struct{ err error }

func (e *forgetError) Error() string { return "the mirror could not forget the push: " + e.err.Error() }
func (e *forgetError) Unwrap() error { return e.err }

// record sets the mirror's ref name to what a push wrote: h, or gone (deleted).
func (m *mirror) record(name plumbing.ReferenceName, deleted bool, h plumbing.Hash) error {
	if deleted {
		return m.repo.Storer.RemoveReference(name)
	}
	return m.repo.Storer.SetReference(plumbing.NewHashReference(name, h))
}

// client returns go-git's endpoint and transport for ep with opts' CA bundle, for a session of
// the operation ctx carries (its bound: proxyOf).
func (ep endpoint) client(ctx context.Context, opts transportOptions) (*transport.Endpoint, transport.Transport, error) {
	if ep.dial == nil {
		return nil, nil, fmt.Errorf("repository %s: no endpoint", ep.display)
	}
	e := *ep.dial
	e.CaBundle = opts.caBundle
	e.Proxy = proxyOf(ctx)
	cl, err := client.NewClient(&e)
	return &e, cl, err
}

// advertisedRefs is adv's refs by name (not peeled, not HEAD's symbolic ref), as holds compares.
func advertisedRefs(adv *packp.AdvRefs) map[plumbing.ReferenceName]plumbing.Hash {
	out := make(map[plumbing.ReferenceName]plumbing.Hash, len(adv.References))
	for name, h := range adv.References {
		out[plumbing.ReferenceName(name)] = h
	}
	return out
}

// errNoAtomic: the server does not offer atomic pushes.
var errNoAtomic = errors.New("the server does not offer atomic pushes")

// atomicRecheck is how long a mirror whose server offered no atomic push fetches before every
// publish and pushes with go-git's push, before it tries the exact push again (a server upgraded,
// or a load balancer in front of mixed servers).
const atomicRecheck = time.Hour

// atomicRefused reports whether the mirror's server was found to offer no atomic push less than
// atomicRecheck before now.
func (m *mirror) atomicRefused(now time.Time) bool {
	return !m.noAtomicAt.IsZero() && now.Sub(m.noAtomicAt) < atomicRecheck
}

// errNoCapabilities: the server advertised nothing, not even its capabilities, for an empty
// repository the mirror holds nothing of.
var errNoCapabilities = errors.New("the server advertised no capabilities")

// errStale: the remote's refs are not the mirror's; nothing was pushed.
var errStale = errors.New("the remote's refs changed since the mirror was fetched")

// pushExact pushes refspecs (exact hashes, or deletes) in one atomic push, if the remote
// advertises exactly the mirror's branches, tags and flotilla refs (errStale, and nothing
// pushed, if not: a plan reads more refs than it writes, such as the branch a tag names or the
// tags that set the next number). Every command's old value is what the mirror holds for the ref,
// zero where it holds none, and the server compares each with the ref under its lock, refusing
// the whole push if one differs: the same check again, for a push that came in meanwhile. This
// is git's own compare-and-swap (what `git push --atomic --force-with-lease` sends); go-git's
// push takes the old values from the advertisement instead, and so checks only that the new
// commit descends from them. The mirror's refs are set to what was pushed.
func (m *mirror) pushExact(ctx context.Context, ep endpoint, opts transportOptions, refspecs []config.RefSpec) (err error) {
	held, err := m.refs("refs/")
	if err != nil {
		return err
	}
	e, cl, err := ep.client(ctx, opts)
	if err != nil {
		return err
	}
	sess, err := cl.NewReceivePackSession(e, opts.auth)
	if err != nil {
		return err
	}
	accepted := false
	defer func() {
		// Once the server said it took the push, a failure to close the session changes nothing.
		if cerr := sess.Close(); err == nil && !accepted {
			err = cerr
		}
	}()
	adv, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil && !errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return err
	}
	if adv == nil || (adv.IsEmpty() && adv.Capabilities.IsEmpty()) {
		// Nothing advertised, not even capabilities: an empty repository, on some servers (go-git
		// gives no advertisement at all over HTTP). Where the mirror holds refs, the remote lost
		// them: a fetch finds out (ErrRemoteEmptied), nothing is pushed.
		if len(held) > 0 {
			return errStale
		}
		return errNoCapabilities
	}
	if !adv.Capabilities.Supports(capability.Atomic) {
		return errNoAtomic
	}
	remote := advertisedRefs(adv)
	if same, err := m.holds(remote); err != nil || !same {
		if err == nil {
			err = errStale
		}
		return err
	}
	req := packp.NewReferenceUpdateRequestFromCapabilities(adv.Capabilities)
	if err := req.Capabilities.Set(capability.Atomic); err != nil {
		return err
	}
	var news []plumbing.Hash
	for _, rs := range refspecs {
		if rs.IsWildcard() || (!rs.IsDelete() && !rs.IsExactSHA1()) {
			return fmt.Errorf("push %s: refspec %s names no exact commit", ep.display, rs)
		}
		cmd := &packp.Command{Name: rs.Dst(""), Old: held[rs.Dst("")]}
		if !rs.IsDelete() {
			cmd.New = plumbing.NewHash(rs.Src())
			news = append(news, cmd.New)
		}
		if cmd.Old != cmd.New {
			req.Commands = append(req.Commands, cmd)
		}
	}
	if len(req.Commands) == 0 {
		return nil
	}
	if len(news) > 0 {
		haves := make([]plumbing.Hash, 0, len(remote)) // what the server has: it is sent none of it
		for _, h := range remote {
			haves = append(haves, h)
		}
		pack, err := m.pack(news, haves, !adv.Capabilities.Supports(capability.OFSDelta))
		if err != nil {
			return err
		}
		req.Packfile = io.NopCloser(bytes.NewReader(pack))
	}
	report, err := sess.ReceivePack(ctx, req)
	if err != nil {
		return err
	}
	switch {
	case report != nil:
		if err := report.Error(); err != nil {
			return err
		}
	case req.Capabilities.Supports(capability.ReportStatus):
		return fmt.Errorf("push %s: the server did not report the push's outcome", ep.display)
	}
	accepted = true
	for _, cmd := range req.Commands {
		if err := m.record(cmd.Name, cmd.New.IsZero(), cmd.New); err != nil {
			return fmt.Errorf("pushed, but the mirror of %s could not record %s: %w", ep.display, cmd.Name, err)
		}
	}
	return nil
}

// pack encodes the objects reachable from news and not from haves. It is encoded whole before
// the push starts (a publish's pack is a few trees and blobs): an encoding that fails half-way
// cannot leave the server waiting for the rest.
func (m *mirror) pack(news, haves []plumbing.Hash, refDeltas bool) ([]byte, error) {
	objects, err := revlist.Objects(m.repo.Storer, news, haves)
	if err != nil {
		return nil, err
	}
	cfg, err := m.repo.Storer.Config()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := packfile.NewEncoder(&buf, m.repo.Storer, refDeltas).Encode(objects, cfg.Pack.Window); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func backoff(attempt int) time.Duration {
	d := time.Duration(attempt) * 50 * time.Millisecond
	return d + rand.N(50*time.Millisecond)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
