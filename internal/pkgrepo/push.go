package pkgrepo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
)

// maxAttempts bounds how often a write is rebuilt after losing a race.
const maxAttempts = 10

// plan is what one attempt decided: the refs to push in one atomic push
// and what to report once they are pushed. No refspecs: nothing to push.
type plan struct {
	refspecs []config.RefSpec
	result   PublishResult
}

// update fetches, asks build for a plan against the fresh mirror and pushes
// it. A rejected push is retried only when the remote's refs moved since the
// fetch (someone else pushed): then build runs again on the new state, so
// the other writer's commit becomes the parent of ours. A push that fails
// while nothing moved is returned as is.
func (s *Store) update(ctx context.Context, m *mirror, ep endpoint, build func() (plan, error)) (PublishResult, error) {
	var lastErr error
	var lastDigest string
	for attempt := range maxAttempts {
		if attempt > 0 {
			if err := sleep(ctx, backoff(attempt)); err != nil {
				return PublishResult{}, err
			}
		}
		if err := s.fetch(ctx, m, ep); err != nil {
			return PublishResult{}, err
		}
		digest, err := m.refsDigest()
		if err != nil {
			return PublishResult{}, fmt.Errorf("%s: %w", ep.display, err)
		}
		if attempt > 0 && digest == lastDigest {
			return PublishResult{}, lastErr
		}
		p, err := build()
		if err != nil {
			return PublishResult{}, err
		}
		if len(p.refspecs) == 0 {
			return p.result, nil
		}
		err = m.push(ctx, ep, p.refspecs)
		if err == nil {
			return p.result, nil
		}
		lastErr, lastDigest = wrapTransport("push", ep, err), digest
		if errors.Is(lastErr, ErrAuthentication) || errors.Is(lastErr, ErrUnreachable) || ctx.Err() != nil {
			return PublishResult{}, lastErr
		}
	}
	return PublishResult{}, fmt.Errorf("gave up after %d attempts: %w", maxAttempts, lastErr)
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

// push sends refspecs in one push. Atomic asks the server (git
// receive-pack advertises "atomic") to apply all ref updates or none, so a
// branch never moves without its tag. Non-force refspecs are checked
// against the refs the server advertises, which detects a concurrent push;
// the server checks them again under its ref locks.
func (m *mirror) push(ctx context.Context, ep endpoint, refspecs []config.RefSpec) error {
	defer m.forget() // a push updates the mirror's refs too
	opts, err := m.transportOptions(ep)
	if err != nil {
		return err
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
