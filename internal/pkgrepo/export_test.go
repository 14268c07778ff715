package pkgrepo

import "time"

// SetClock makes s read the time from now (set it before s is used concurrently).
func SetClock(s *Store, now func() time.Time) { s.now = now }

// AtomicRecheck is how long a server found to offer no atomic push is taken at its word.
const AtomicRecheck = atomicRecheck
