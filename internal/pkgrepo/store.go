// Package pkgrepo reads and writes kpt packages in git repositories using
// Porch's conventions: a package is a directory with a Kptfile, and published
// revision N of package P is a commit on the branch tagged P/vN.
//
// All git I/O goes through a local bare mirror per remote, so reads are cheap
// and writes build commits directly in the object store (no worktree). The
// remote is always the truth: a write builds on the mirror only while the remote
// advertises exactly its refs (else it fetches first), pushes branch and tag in
// one atomic push that names each ref's old value, and on a lost race fetches
// again and rebuilds on top of the other writer's commit. Tags are never moved,
// deleted or re-created.
package pkgrepo

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// DefaultRefreshInterval is how old a mirror may be before a read fetches.
const DefaultRefreshInterval = 10 * time.Second

// mirrorRefSpecs make the local mirror an exact copy of the remote's
// branches, tags and flotilla refs (forced and pruned: the remote is the truth).
var mirrorRefSpecs = []config.RefSpec{
	"+refs/heads/*:refs/heads/*",
	"+refs/tags/*:refs/tags/*",
	"+refs/flotilla/*:refs/flotilla/*", // flotilla's bookkeeping (PublishRequest.Rendered)
}

// Store keeps one local bare mirror per remote URL and scope (Remote.Scope)
// under a cache directory. It is safe for concurrent use; operations on one
// mirror are serialized. Credentials live only in memory: never in the
// mirror's config, its directory name or a URL.
type Store struct {
	// RefreshInterval is how old a mirror may be before Resolve, Latest and
	// ReadPackage fetch first. Set it before first use; zero means
	// DefaultRefreshInterval.
	RefreshInterval time.Duration
	// AllowLocal lets remotes be file:// URLs or paths on this machine. Off,
	// they fail with ErrLocalRepository: a controller serving tenants must not
	// read its own disk because someone named a path. Set it before first use.
	AllowLocal bool
	// MaxPackBytes bounds what one fetch or push reads from its server besides the ref
	// advertisement (over ssh: with it): a pack, a push's report. Zero means DefaultMaxPackBytes.
	// Set it before first use.
	MaxPackBytes int64
	// maxAdvertisement is MaxAdvertisementBytes, unless a test sets less.
	maxAdvertisement int64

	dir string
	key []byte // HMAC key for credential fingerprints
	now func() time.Time

	mu      sync.Mutex
	mirrors map[string]*mirror
	// endpoints are the Remotes lock has prepared (newEndpoint), by Remote.
	endpoints map[Remote]endpoint
	// objects caches decoded git objects for all mirrors at once (objects are named by their
	// content, so one cache serves every repository), bounding memory at any number of mirrors.
	objects cache.Object
}

// ObjectCacheSize bounds the decoded git objects a Store keeps in memory, all mirrors together.
const ObjectCacheSize = 64 * cache.MiByte

// mirror is the local copy of one remote. mu guards everything in it,
// including the on-disk repository.
type mirror struct {
	mu      sync.Mutex
	dir     string
	repo    *git.Repository
	fetched time.Time // zero: never fetched by this process
	// noAtomicAt is when the server was found to offer no atomic push (zero: not found): for
	// atomicRecheck after it, a publish fetches first and pushes with go-git's push. Otherwise a
	// publish builds on the mirror as this process last fetched or pushed it, without fetching
	// first: pushExact refuses what another writer made stale.
	noAtomicAt time.Time
	credential string // fingerprint of the credentials of the last fetch
	// oversized: the mirror's packs grew past maxMirrorBytes, or are more than maxPacks; the next
	// fetch starts it over.
	oversized bool
	// builds counts the publishes built on the mirror (built), whose objects are written loose.
	builds int

	// opts are the transport options built for the credentials optsFor (an HMAC), kept so a
	// key and known_hosts are parsed once per change, not once per fetch.
	opts    transportOptions
	optsFor string

	// The mirror's refs and resolved revisions, kept in memory until its refs may have changed
	// (a fetch that brought something, a push): reading loose refs from disk for every resolve is
	// most of a resolve's cost, and a fleet resolves the same catalog tag once per deployment.
	refCache map[plumbing.ReferenceName]plumbing.Hash
	resolved map[string]Revision
	// exact keeps the exact revisions (vN) resolved so far across fetches: they answer while the
	// remote is unreachable.
	exact map[string]Revision
}

// forget drops what the mirror keeps in memory about its refs.
func (m *mirror) forget() {
	m.refCache, m.resolved = nil, nil
}

// NewStore returns a Store keeping its mirrors under cacheDir.
func NewStore(cacheDir string) *Store {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	return &Store{dir: cacheDir, key: key, now: time.Now, mirrors: map[string]*mirror{}, objects: cache.NewObjectLRU(ObjectCacheSize)}
}

// Snapshot is the state of a remote after a fetch.
type Snapshot struct {
	// Head is the sha of the remote's branch, "" when it does not exist.
	Head string
	// RefsDigest is a sha256 over all branches and tags; it changes when any
	// of them changes, so a poller can skip work when it is unchanged.
	RefsDigest string
}

// Refresh fetches all branches and tags of r, pruning deleted ones. An empty
// remote repository is not an error.
func (s *Store) Refresh(ctx context.Context, r Remote) (Snapshot, error) {
	m, ep, unlock, err := s.lock(r)
	if err != nil {
		return Snapshot{}, err
	}
	defer unlock()
	if err := s.fetch(ctx, m, ep); err != nil {
		return Snapshot{}, err
	}
	return m.snapshot(r.branch())
}

// RefreshWithin is Refresh, unless the mirror was fetched with r's credentials less than maxAge
// ago and after after (when a refresh was asked for): then it answers from the mirror without a
// request. It returns when the fetch the snapshot reflects was made. A publish's push starts
// with the remote's refs, goes ahead only if they are the mirror's (else it fetches) and updates
// the mirror, so it counts as a fetch: a poll within maxAge of it has nothing to learn, and
// polling from then on still sees another writer's push within maxAge.
func (s *Store) RefreshWithin(ctx context.Context, r Remote, maxAge time.Duration, after time.Time) (Snapshot, time.Time, error) {
	m, ep, unlock, err := s.lock(r)
	if err != nil {
		return Snapshot{}, time.Time{}, err
	}
	defer unlock()
	now := s.now()
	if m.fetched.IsZero() || m.credential != ep.credential || now.Sub(m.fetched) >= maxAge || !m.fetched.After(after) {
		if err := s.fetch(ctx, m, ep); err != nil {
			return Snapshot{}, time.Time{}, err
		}
	}
	snap, err := m.snapshot(r.branch())
	return snap, m.fetched, err
}

// lock returns the mirror for r, locked, and the endpoint to reach r.
func (s *Store) lock(r Remote) (*mirror, endpoint, func(), error) {
	if r.OCI {
		return nil, endpoint{}, nil, fmt.Errorf("%w: %s is an OCI repository", ErrNotGit, r.URL)
	}
	s.mu.Lock()
	ep, ok := s.endpoints[r]
	if !ok {
		var err error
		if ep, err = newEndpoint(r, s.key, s.AllowLocal); err != nil {
			s.mu.Unlock()
			return nil, endpoint{}, nil, err
		}
		// Every poll of every Repository comes here: the parsed endpoint and its credential's
		// fingerprint are kept per Remote. Credentials that rotate leave old entries behind, so
		// the map is started over when it holds far more than there are mirrors.
		if s.endpoints == nil || len(s.endpoints) > 2*len(s.mirrors)+64 {
			s.endpoints = map[Remote]endpoint{}
		}
		s.endpoints[r] = ep
	}
	m, ok := s.mirrors[ep.mirrorKey]
	if !ok {
		// The scope is part of the directory name too: two scopes never share objects on disk.
		sum := sha256.Sum256([]byte(ep.mirrorKey))
		m = &mirror{dir: filepath.Join(s.dir, hex.EncodeToString(sum[:16]))}
		s.mirrors[ep.mirrorKey] = m
	}
	s.mu.Unlock()

	m.mu.Lock()
	if m.repo == nil {
		if err := m.open(s.objects); err != nil {
			m.mu.Unlock()
			return nil, endpoint{}, nil, fmt.Errorf("open mirror of %s: %w", ep.display, err)
		}
	}
	return m, ep, m.mu.Unlock, nil
}

// open opens the mirror's bare repository, creating it (or recreating it
// when it is unreadable: it is only a cache). objects is the Store's shared
// object cache.
func (m *mirror) open(objects cache.Object) error {
	storage := func() *filesystem.Storage { return filesystem.NewStorage(osfs.New(m.dir), objects) }
	if _, err := os.Stat(m.dir); err == nil {
		if repo, err := git.Open(storage(), nil); err == nil && intact(repo) == nil {
			m.repo = repo
			return nil
		}
	}
	if err := os.RemoveAll(m.dir); err != nil {
		return err
	}
	repo, err := git.Init(storage(), nil)
	if err != nil {
		return err
	}
	m.repo = repo
	return nil
}

// intact checks what a process killed in the middle of a write can leave behind in a mirror: a
// ref file truncated to nothing (go-git rewrites loose refs in place), or a ref naming an object
// the mirror does not hold. Either would fail every later fetch of the mirror, so a mirror that is
// not intact is recreated from the remote.
func intact(repo *git.Repository) error {
	iter, err := repo.Storer.IterReferences()
	if err != nil {
		return err
	}
	return iter.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() != plumbing.HashReference {
			return nil
		}
		if err := repo.Storer.HasEncodedObject(ref.Hash()); err != nil {
			return fmt.Errorf("%s: %w", ref.Name(), err)
		}
		return nil
	})
}

// ensureFresh fetches unless the mirror was fetched less than maxAge ago
// with the same credentials (the Store's RefreshInterval when set, else the
// remote's MaxAge, else DefaultRefreshInterval). Re-fetching for other
// credentials means a caller with wrong credentials never reads what another
// caller fetched.
func (s *Store) ensureFresh(ctx context.Context, m *mirror, ep endpoint) error {
	maxAge := s.RefreshInterval
	if maxAge <= 0 {
		maxAge = ep.maxAge
	}
	if maxAge <= 0 {
		maxAge = DefaultRefreshInterval
	}
	if !m.fetched.IsZero() && m.credential == ep.credential && s.now().Sub(m.fetched) < maxAge {
		return nil
	}
	return s.fetch(ctx, m, ep)
}

// fetch makes the mirror an exact copy of the remote's branches and tags.
func (s *Store) fetch(ctx context.Context, m *mirror, ep endpoint) error {
	if m.oversized {
		return s.startOver(ctx, m, ep)
	}
	opts, err := m.transportOptions(ep)
	if err != nil {
		return err
	}
	// A mirror this process has fetched asks for the remote's refs alone first: on an idle fleet
	// nearly every poll finds them as the mirror holds them, and that answer is one request and a
	// comparison in memory. A fetch that finds nothing new makes the same request, then reads every
	// ref and looks up every object it names on disk. The first fetch of a mirror goes straight
	// to a fetch, so a cold start makes no extra request.
	ctx, bound := s.bound(ctx, ep)
	defer bound.release()
	same := false
	if !m.fetched.IsZero() {
		same, err = m.unchanged(ctx, ep, opts)
	}
	if err == nil && !same {
		err = m.remote(ep).FetchContext(ctx, &git.FetchOptions{
			RemoteName:   "origin",
			RefSpecs:     mirrorRefSpecs,
			Tags:         git.NoTags,
			Prune:        true,
			Force:        true,
			Auth:         opts.auth,
			CABundle:     opts.caBundle,
			ProxyOptions: proxyOf(ctx),
		})
		switch {
		case err == nil: // it brought something
			m.forget()
			m.oversized = s.tooManyPacks(m)
		case !errors.Is(err, git.NoErrAlreadyUpToDate):
			m.forget()
			m.removeTempPacks()
		}
	}
	if cut := bound.check("fetch", ep, err); cut != nil {
		return cut
	}
	switch {
	case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		// A repository that never had refs is a new one (a cluster repository before its first
		// publish). One that had them and now advertises none is refused: clearing the mirror
		// would make every package vanish, and every pin with it, on one bad answer.
		had, rerr := m.refs("refs/")
		if rerr != nil {
			return fmt.Errorf("fetch %s: %w", ep.display, rerr)
		}
		if len(had) > 0 {
			return emptied(ep, len(had))
		}
	default:
		return wrapTransport("fetch", ep, err)
	}
	m.fetched, m.credential = s.now(), ep.credential
	return nil
}

// emptied is the error of a remote that advertised nothing although the mirror holds had refs.
func emptied(ep endpoint, had int) error {
	return &RemoteError{Op: "fetch", Target: ep.display, Kind: ErrRemoteEmptied,
		Msg: fmt.Sprintf("the server advertised no branches or tags, though %d were fetched before; flotilla keeps them and retries (to start the repository over, push a branch to it)", had)}
}

// unchanged tells whether the remote advertises exactly the branches, tags and flotilla refs the
// mirror holds, so that a fetch would bring nothing and prune nothing.
// It asks as `git ls-remote` does (what go-git's Remote.List sends), through the endpoint
// prepared once instead of parsing the URL and looking up a transport on every poll.
func (m *mirror) unchanged(ctx context.Context, ep endpoint, opts transportOptions) (bool, error) {
	remote, err := ep.refs(ctx, opts)
	if err != nil {
		return false, err
	}
	return m.holds(remote)
}

// refs asks the remote for its refs, as `git ls-remote` does (one request over HTTP); an empty
// repository is transport.ErrEmptyRemoteRepository.
func (ep endpoint) refs(ctx context.Context, opts transportOptions) (_ map[plumbing.ReferenceName]plumbing.Hash, err error) {
	e, cl, err := ep.client(ctx, opts)
	if err != nil {
		return nil, err
	}
	sess, err := cl.NewUploadPackSession(e, opts.auth)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := sess.Close(); err == nil {
			err = cerr
		}
	}()
	adv, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return nil, err
	}
	return advertisedRefs(adv), nil
}

// holds tells whether the mirror's branches, tags and flotilla refs are exactly those of remote
// (a remote's refs by name; others, such as HEAD, are not compared): nothing new, moved or gone.
func (m *mirror) holds(remote map[plumbing.ReferenceName]plumbing.Hash) (bool, error) {
	held, err := m.refs("refs/")
	if err != nil {
		return false, err
	}
	n := 0
	for name, h := range remote {
		if !mirrored(name) {
			continue
		}
		if held[name] != h {
			return false, nil // new or moved
		}
		n++
	}
	for name := range held {
		if mirrored(name) {
			n--
		}
	}
	return n == 0, nil // else: something a fetch would prune
}

// mirrored tells whether mirrorRefSpecs copy name from the remote.
func mirrored(name plumbing.ReferenceName) bool {
	for _, spec := range mirrorRefSpecs {
		if spec.Match(name) {
			return true
		}
	}
	return false
}

// maxMirrorBytes is how large a mirror's packs may grow before its next fetch starts it over:
// twice the bound of one pack. go-git never repacks, so every fetch that brings something adds a
// pack; a server that sends new objects on every poll (within the pack bound each time) would
// otherwise grow its mirror without end.
func (s *Store) maxMirrorBytes() int64 {
	if s.MaxPackBytes > 0 {
		return 2 * s.MaxPackBytes
	}
	return 2 * DefaultMaxPackBytes
}

// maxPacks is how many packs a mirror may hold before its next fetch starts it over: each fetch
// that brings something adds one, and so does packing a publishes' loose objects, and go-git
// looks an object up in every pack, and never merges them. git merges its packs locally past 50
// (gc.autoPackLimit); a start over fetches the repository whole, so the bound is higher: a
// catalog that others publish to a hundred times a day is fetched whole every two or three days.
var maxPacks = 256

// tooManyPacks tells whether the mirror's packs on disk are more than maxPacks or larger than
// maxMirrorBytes (loose objects are few: packLoose packs them).
func (s *Store) tooManyPacks(m *mirror) bool {
	files, _ := filepath.Glob(filepath.Join(m.dir, "objects", "pack", "*.pack"))
	var n int64
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			n += fi.Size()
		}
	}
	return len(files) > maxPacks || n > s.maxMirrorBytes()
}

// startOver fetches the remote whole into a new mirror beside m and, once that succeeded, puts it
// in m's place: what the remote holds now, in one pack. Until then m stays as it is (an outage
// keeps its revisions readable), and a fetch that fails leaves it oversized for the next one.
func (s *Store) startOver(ctx context.Context, m *mirror, ep endpoint) error {
	fresh := &mirror{dir: m.dir + ".new"}
	if err := os.RemoveAll(fresh.dir); err != nil {
		return fmt.Errorf("start the mirror of %s over: %w", ep.display, err)
	}
	if err := fresh.open(s.objects); err != nil {
		return fmt.Errorf("start the mirror of %s over: %w", ep.display, err)
	}
	err := s.fetch(ctx, fresh, ep)
	if err == nil {
		// A remote that now advertises nothing is refused here as by any fetch.
		had, herr := m.refs("refs/")
		got, gerr := fresh.refs("refs/")
		switch {
		case herr != nil || gerr != nil:
			err = fmt.Errorf("start the mirror of %s over: %w", ep.display, errors.Join(herr, gerr))
		case len(had) > 0 && len(got) == 0:
			err = emptied(ep, len(had))
		}
	}
	if err != nil {
		_ = os.RemoveAll(fresh.dir)
		return err
	}
	// From here on a failure leaves no mirror: the next use makes a new one, and fetches it whole.
	m.repo, m.oversized, m.fetched = nil, false, time.Time{}
	m.forget()
	if err := os.RemoveAll(m.dir); err != nil {
		return fmt.Errorf("start the mirror of %s over: %w", ep.display, err)
	}
	if err := os.Rename(fresh.dir, m.dir); err != nil {
		return fmt.Errorf("start the mirror of %s over: %w", ep.display, err)
	}
	if err := m.open(s.objects); err != nil {
		return fmt.Errorf("start the mirror of %s over: %w", ep.display, err)
	}
	m.fetched, m.credential = fresh.fetched, fresh.credential
	return nil
}

// removeTempPacks removes what a fetch that failed half-way left in the mirror: go-git's pack
// writer keeps its temporary file when the pack it reads ends early (an answer cut at its bound,
// a dropped connection), which would otherwise add up to a pack bound of disk per failed poll.
func (m *mirror) removeTempPacks() {
	files, _ := filepath.Glob(filepath.Join(m.dir, "objects", "pack", "tmp_pack_*"))
	for _, f := range files {
		_ = os.Remove(f)
	}
}

// transportOptions returns the options for ep's credentials, built once per change of them.
func (m *mirror) transportOptions(ep endpoint) (transportOptions, error) {
	if m.optsFor == ep.credential {
		return m.opts, nil
	}
	opts, err := ep.transportOptions()
	if err != nil {
		return transportOptions{}, err
	}
	m.opts, m.optsFor = opts, ep.credential
	return opts, nil
}

// remote is an in-memory remote: its URL is never written to the mirror's
// config. Its fetch refspecs make a successful push update the mirror too.
func (m *mirror) remote(ep endpoint) *git.Remote {
	return git.NewRemote(m.repo.Storer, &config.RemoteConfig{
		Name:  "origin",
		URLs:  []string{ep.url},
		Fetch: mirrorRefSpecs,
	})
}

// refs returns the hash references whose name starts with prefix.
func (m *mirror) refs(prefix string) (map[plumbing.ReferenceName]plumbing.Hash, error) {
	all, err := m.allRefs()
	if err != nil {
		return nil, err
	}
	out := map[plumbing.ReferenceName]plumbing.Hash{}
	for name, h := range all {
		if strings.HasPrefix(name.String(), prefix) {
			out[name] = h
		}
	}
	return out, nil
}

// allRefs returns every hash reference of the mirror, read from disk once and kept until a fetch
// brings something or a push (forget). The map is the mirror's own: callers only read it.
func (m *mirror) allRefs() (map[plumbing.ReferenceName]plumbing.Hash, error) {
	if m.refCache != nil {
		return m.refCache, nil
	}
	iter, err := m.repo.References()
	if err != nil {
		return nil, err
	}
	all := map[plumbing.ReferenceName]plumbing.Hash{}
	err = iter.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() == plumbing.HashReference {
			all[ref.Name()] = ref.Hash()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	m.refCache = all
	return all, nil
}

// head returns the sha of branch, zero when it does not exist (from the refs kept in memory: a
// poll of an unchanged repository reads nothing from disk).
func (m *mirror) head(branch string) (plumbing.Hash, error) {
	all, err := m.allRefs()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return all[plumbing.NewBranchReferenceName(branch)], nil
}

func (m *mirror) snapshot(branch string) (Snapshot, error) {
	head, err := m.head(branch)
	if err != nil {
		return Snapshot{}, err
	}
	digest, err := m.refsDigest()
	if err != nil {
		return Snapshot{}, err
	}
	snap := Snapshot{RefsDigest: digest}
	if !head.IsZero() {
		snap.Head = head.String()
	}
	return snap, nil
}

// refsDigest is a sha256 over the sorted "name sha" lines of all branches
// and tags.
func (m *mirror) refsDigest() (string, error) {
	refs, err := m.refs("refs/")
	if err != nil {
		return "", err
	}
	lines := make([]string, 0, len(refs))
	for name, h := range refs {
		lines = append(lines, name.String()+" "+h.String()+"\n")
	}
	sort.Strings(lines)
	sum := sha256.New()
	for _, l := range lines {
		sum.Write([]byte(l))
	}
	return hex.EncodeToString(sum.Sum(nil)), nil
}
