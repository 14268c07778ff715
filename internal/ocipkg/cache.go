package ocipkg

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"

	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// Cache resolves package revisions of OCI repositories for the controller (it is a
// fleet.Registry): each revision is asked of the registry at most once per TTL, per remote scope
// and credentials, so deployments re-reconciled for health every few seconds do not turn into
// registry requests. A tag re-pushed to another digest is seen within the TTL (and then reported
// as moved, never followed).
type Cache struct {
	// TTL is how long a resolved revision is reused; zero asks the registry every time.
	TTL time.Duration

	mu      sync.Mutex
	entries map[cacheKey]cacheEntry
	sweepAt int // size at which expired entries are dropped next
}

type cacheKey struct{ scope, credential, url, pkg, revision string }

type cacheEntry struct {
	rev pkgrepo.Revision
	at  time.Time
}

// Resolve resolves revision of pkg in the OCI repository r.URL (REGISTRY/REPO): its Tag is vN and
// its Commit the manifest digest.
func (c *Cache) Resolve(ctx context.Context, r pkgrepo.Remote, pkg, revision string) (pkgrepo.Revision, error) {
	opts := RemoteOptions(r)
	key := cacheKey{scope: r.Scope, credential: credential(opts), url: r.URL, pkg: pkg, revision: revision}
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && time.Since(e.at) < c.TTL {
		return e.rev, nil
	}
	rev, err := Resolve(ctx, r.URL, pkg, revision, opts)
	if err != nil {
		return pkgrepo.Revision{}, err
	}
	out := pkgrepo.Revision{Package: pkg, Number: rev.Number, Tag: rev.Tag, Commit: rev.Digest}
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[cacheKey]cacheEntry{}
	}
	c.entries[key] = cacheEntry{rev: out, at: time.Now()}
	if len(c.entries) >= max(c.sweepAt, 1024) {
		// Expired entries go when the cache has doubled since the last sweep: a controller
		// whose deployments come and go keeps only what it still resolves.
		for k, e := range c.entries {
			if time.Since(e.at) >= c.TTL {
				delete(c.entries, k)
			}
		}
		c.sweepAt = 2 * len(c.entries)
	}
	c.mu.Unlock()
	return out, nil
}

// RemoteOptions are the registry options of an OCI remote: its credentials (a bearer token is
// sent as the password, as registries take tokens), CA bundle and plain-HTTP permission.
func RemoteOptions(r pkgrepo.Remote) Options {
	password := r.Auth.Password
	if r.Auth.BearerToken != "" {
		password = r.Auth.BearerToken
	}
	opts := Options{Username: r.Auth.Username, Password: password, Insecure: r.Insecure}
	if r.Auth.CABundle != "" {
		opts.CABundle = []byte(r.Auth.CABundle)
	}
	return opts
}

// credential fingerprints the credentials, so a changed Secret is a new cache entry.
func credential(o Options) string {
	sum := sha256.Sum256([]byte(o.Username + "\x00" + o.Password + "\x00" + string(o.CABundle)))
	return hex.EncodeToString(sum[:8])
}
