package pkgrepo

import (
	"testing"
	"time"
)

// SetClock makes s read the time from now (set it before s is used concurrently).
func SetClock(s *Store, now func() time.Time) { s.now = now }

// AtomicRecheck is how long a server found to offer no atomic push is taken at its word.
const AtomicRecheck = atomicRecheck

// SetConfirmWait sets how long a push no report follows waits for the server to show it, until t
// ends (not for tests in parallel).
func SetConfirmWait(t testing.TB, d time.Duration) {
	saved := confirmWait
	confirmWait = d
	t.Cleanup(func() { confirmWait = saved })
}

// SetMaxAdvertisement bounds the ref advertisements s reads over http(s) at n bytes instead of
// MaxAdvertisementBytes (over ssh, a connection reads MaxPackBytes and n).
func SetMaxAdvertisement(s *Store, n int64) { s.maxAdvertisement = n }

// SetLooseLimits makes mirrors pack their loose objects once they are limit or more, checked
// every every builds, batch bytes of objects a pack, until t ends (not for tests in parallel).
func SetLooseLimits(t testing.TB, limit, every int, batch int64) {
	savedLimit, savedEvery, savedBatch := looseLimit, looseCheckEvery, looseBatchBytes
	looseLimit, looseCheckEvery, looseBatchBytes = limit, every, batch
	t.Cleanup(func() { looseLimit, looseCheckEvery, looseBatchBytes = savedLimit, savedEvery, savedBatch })
}

// SetMaxPacks makes a mirror start over past n packs instead of maxPacks, until t ends (not for
// tests in parallel).
func SetMaxPacks(t testing.TB, n int) {
	saved := maxPacks
	maxPacks = n
	t.Cleanup(func() { maxPacks = saved })
}
