package pkgrepo

import (
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// A publish writes its new objects into the mirror loose, one file each (a blob, its trees, the
// commit and the tag: about four for a deployed-packages revision), and go-git never packs them:
// a cluster's mirror grew by four files a publish for as long as the controller ran. Every
// looseCheckEvery builds, a mirror holding looseLimit loose objects or more packs them.
var (
	looseLimit      = 1024
	looseCheckEvery = 64
)

// built counts a build on m (the objects of a publish, written loose) and, every looseCheckEvery,
// packs the mirror's loose objects once they are looseLimit or more; a pack too many makes the
// next fetch start the mirror over (tooManyPacks). Packing is the mirror's upkeep, not the
// publish's: a failure leaves the objects loose, as they were, to be packed at a later check.
func (s *Store) built(m *mirror) {
	m.builds++
	if m.builds%looseCheckEvery != 0 {
		return
	}
	switch packed, err := m.packLoose(); {
	case err != nil:
		m.removeTempPacks()
	case packed:
		m.oversized = m.oversized || s.tooManyPacks(m)
	}
}

// packLoose writes every loose object of the mirror (reachable or not: nothing the mirror holds
// is dropped) into new packs, and once each pack is in place removes its objects, when they are
// looseLimit or more; packed says whether it wrote a pack.
func (m *mirror) packLoose() (packed bool, err error) {
	los, ok := m.repo.Storer.(storer.LooseObjectStorer)
	pw, pok := m.repo.Storer.(storer.PackfileWriter)
	if !ok || !pok {
		return false, nil
	}
	var loose []plumbing.Hash
	if err := los.ForEachObjectHash(func(h plumbing.Hash) error {
		loose = append(loose, h)
		return nil
	}); err != nil || len(loose) < looseLimit {
		return false, err
	}
	// go-git's encoder holds the objects of a pack in memory to choose deltas: a pack takes
	// objects up to looseBatchBytes of them (one larger object alone).
	for len(loose) > 0 {
		n, size := 0, int64(0)
		for ; n < len(loose); n++ {
			s, err := m.repo.Storer.EncodedObjectSize(loose[n])
			if err != nil {
				return packed, err
			}
			if n > 0 && size+s > looseBatchBytes {
				break
			}
			size += s
		}
		if err := m.packObjects(pw, los, loose[:n]); err != nil {
			return packed, err
		}
		packed, loose = true, loose[n:]
	}
	return packed, nil
}

// looseBatchBytes bounds the loose objects packLoose puts in one pack.
var looseBatchBytes int64 = 64 << 20

// packObjects writes objects into one new pack and, once it is in place, removes them as loose objects.
func (m *mirror) packObjects(pw storer.PackfileWriter, los storer.LooseObjectStorer, objects []plumbing.Hash) error {
	w, err := pw.PackfileWriter()
	if err != nil {
		return err
	}
	// Deltas between the revisions' trees and sync objects, within git's own window.
	if _, err := packfile.NewEncoder(w, m.repo.Storer, false).Encode(objects, 10); err != nil {
		_ = w.Close()
		return err
	}
	if err := w.Close(); err != nil { // indexes the pack and puts it in place
		return err
	}
	for _, h := range objects {
		if err := los.DeleteLooseObject(h); err != nil {
			return err
		}
	}
	return nil
}
