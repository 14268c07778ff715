package pkgrepo

import (
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
	"github.com/go-git/go-git/v5/utils/ioutil"
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
// unless fetchFirst is false and this process fetched it with the same credentials before
// (since then it holds what the remote held at that fetch, or at this process's pushes after
// it): the push itself is then the check, for it names as each ref's old value what the mirror
// holds (pushExact) and the server refuses it, all of it, if any ref is not that any more. A
// rejected push is retried only when the remote's refs moved since the mirror last learnt them
// (someone else pushed): the retry fetches, and build runs again on the new state, so the other
// writer's commit becomes the parent of ours. A push that fails while nothing moved is returned
// as is.
func (s *Store) update(ctx context.Context, m *mirror, ep endpoint, fetchFirst bool, build func() (plan, error)) (PublishResult, error) {
	var lastErr error
	var lastDigest string
	for attempt := range maxAttempts {
		if attempt > 0 {
			if err := sleep(ctx, backoff(attempt)); err != nil {
				return PublishResult{}, err
			}
		}
		skip := attempt == 0 && !fetchFirst && !m.fetched.IsZero() && m.credential == ep.credential && m.exactPush
		p, digest, err := s.prepare(ctx, m, ep, !skip, build)
		if err == nil && skip && len(p.refspecs) == 0 {
			// Nothing to write, by the mirror: the remote may say otherwise (a publish that
			// writes nothing is how a cluster's repository is checked for edits by hand).
			p, digest, err = s.prepare(ctx, m, ep, true, build)
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
		err = m.push(ctx, ep, p.refspecs, !skip)
		if err == nil {
			return p.result, nil
		}
		if errors.Is(err, errNoAtomic) {
			lastErr, lastDigest = err, "" // the server stopped offering atomic pushes: fetch, build again
			continue
		}
		lastErr, lastDigest = wrapTransport("push", ep, err), digest
		if errors.Is(lastErr, ErrAuthentication) || errors.Is(lastErr, ErrUnreachable) || ctx.Err() != nil {
			return PublishResult{}, lastErr
		}
	}
	return PublishResult{}, fmt.Errorf("gave up after %d attempts: %w", maxAttempts, lastErr)
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
	return p, digest, err
}

// dryRun fetches and asks build for a plan, as update does, and reports it without pushing.
func (s *Store) dryRun(ctx context.Context, m *mirror, ep endpoint, build func() (plan, error)) (PublishResult, error) {
	if err := s.fetch(ctx, m, ep); err != nil {
		return PublishResult{}, err
	}
	p, err := build()
	if err != nil {
		return PublishResult{}, err
	}
	return p.result, nil
}

// push sends refspecs in one atomic push: the server applies all ref updates or none, so a
// branch never moves without its tag. Where the server offers atomic pushes, it is pushExact;
// else go-git's push, whose non-force refspecs are checked against the refs the server
// advertises (which detects most concurrent pushes; the server checks them again under its ref
// locks), and the mirror is fetched before every publish (mirror.exactPush).
func (m *mirror) push(ctx context.Context, ep endpoint, refspecs []config.RefSpec, fetched bool) error {
	defer m.forget() // a push updates the mirror's refs too
	opts, err := m.transportOptions(ep)
	if err != nil {
		return err
	}
	err = m.pushExact(ctx, ep, opts, refspecs)
	if !errors.Is(err, errNoAtomic) {
		m.exactPush = err == nil || m.exactPush
		return err
	}
	m.exactPush = false
	if !fetched {
		return err // built on the mirror unfetched: only an exact push may carry that
	}
	err = m.remote(ep).PushContext(ctx, &git.PushOptions{
		RemoteName: "origin",
		RefSpecs:   refspecs,
		Auth:       opts.auth,
		CABundle:   opts.caBundle,
		Atomic:     true,
	})
	if errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil
	}
	return err
}

// errNoAtomic: the server does not offer atomic pushes.
var errNoAtomic = errors.New("the server does not offer atomic pushes")

// pushExact pushes refspecs (exact hashes, or deletes) in one atomic push in which every
// command's old value is what the mirror holds for the ref, zero where it holds none. The
// server compares each with the ref under its lock and refuses the whole push if one differs:
// a branch someone moved or rewound, a tag someone created, a ref someone deleted, a remote
// that was emptied. This is git's own compare-and-swap (what `git push --atomic
// --force-with-lease` sends), where go-git's push takes the old values from the server's
// advertisement and so checks only that the new commit descends from them. The mirror's refs
// are set to what was pushed.
func (m *mirror) pushExact(ctx context.Context, ep endpoint, opts transportOptions, refspecs []config.RefSpec) (err error) {
	held, err := m.refs("refs/")
	if err != nil {
		return err
	}
	e, err := transport.NewEndpoint(ep.url)
	if err != nil {
		return err
	}
	e.CaBundle = opts.caBundle
	cl, err := client.NewClient(e)
	if err != nil {
		return err
	}
	sess, err := cl.NewReceivePackSession(e, opts.auth)
	if err != nil {
		return err
	}
	defer ioutil.CheckClose(sess, &err)
	adv, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil && !errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return err
	}
	if adv == nil || !adv.Capabilities.Supports(capability.Atomic) {
		return errNoAtomic
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
		var haves []plumbing.Hash // what the server has: it is sent none of it
		for _, ref := range adv.References {
			haves = append(haves, ref)
		}
		pack, wait, perr := m.pack(news, haves, !adv.Capabilities.Supports(capability.OFSDelta))
		if perr != nil {
			return perr
		}
		req.Packfile = pack
		defer func() {
			_ = pack.Close() // unblocks the encoder when the server stopped reading
			if werr := wait(); err == nil {
				err = werr
			}
		}()
	}
	report, err := sess.ReceivePack(ctx, req)
	if err != nil {
		return err
	}
	if report != nil {
		if err := report.Error(); err != nil {
			return err
		}
	}
	for _, cmd := range req.Commands {
		if cmd.New.IsZero() {
			err = m.repo.Storer.RemoveReference(cmd.Name)
		} else {
			err = m.repo.Storer.SetReference(plumbing.NewHashReference(cmd.Name, cmd.New))
		}
		if err != nil {
			return fmt.Errorf("pushed, but the mirror of %s could not record %s: %w", ep.display, cmd.Name, err)
		}
	}
	return nil
}

// pack streams a pack of the objects reachable from news and not from haves; wait returns how
// the encoding ended.
func (m *mirror) pack(news, haves []plumbing.Hash, refDeltas bool) (io.ReadCloser, func() error, error) {
	objects, err := revlist.Objects(m.repo.Storer, news, haves)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := m.repo.Storer.Config()
	if err != nil {
		return nil, nil, err
	}
	pr, pw := io.Pipe()
	encoded := make(chan error, 1)
	go func() {
		_, err := packfile.NewEncoder(pw, m.repo.Storer, refDeltas).Encode(objects, cfg.Pack.Window)
		encoded <- pw.CloseWithError(err)
	}()
	return pr, func() error { return <-encoded }, nil
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
