package connlimit

import (
	"sync/atomic"

	"github.com/paduraksa/paduraksa/internal/ipaddr"
)

// Entry layout: [40-bit tag | 24-bit count]. A word of 0 has never been
// used; a word with a tag and a count of 0 is idle: its address keeps the
// place until another address needs it.
const (
	countBits = 24
	countMask = 1<<countBits - 1
	// window is the probe window: the 8 entries (one 64-byte cache line) of
	// the bucket a key hashes to.
	window = 8
)

// acquireResult says what acquire did.
type acquireResult uint8

const (
	acquired acquireResult = iota // counted: the slot holds one more
	overCap                       // the key is at its cap
	full                          // no room in the key's window
)

// table is a fixed, open-addressed table of per-key connection counts,
// changed only by compare-and-swap of whole entries. It is safe for
// concurrent use and allocates nothing after newTable. Its keys and their
// seeded hash are internal/ipaddr's, which the gate's rate limit shares;
// the slots are its own (one word each: a tag and a count).
//
// Accepted race: two goroutines that both miss a new key may claim two
// entries for it, so the key can briefly hold up to twice its cap. Every
// release goes to the entry its acquire counted in, so counts stay exact
// and end at zero.
type table struct {
	slots []atomic.Uint64
	mask  uint64
	seed  ipaddr.Seed
}

func newTable(size int) *table {
	return &table{
		slots: make([]atomic.Uint64, size),
		mask:  uint64(size - 1),
		seed:  ipaddr.NewSeed(),
	}
}

// locate returns the tag of k (never 0) and the first slot to probe. The
// seed is random per table, so nobody can choose addresses that share a
// window with someone else's.
func (t *table) locate(k ipaddr.Key) (tag, start uint64) {
	h := t.seed.Hash(k, 0)
	tag = h >> countBits
	if tag == 0 {
		tag = 1
	}
	return tag, h & t.mask
}

// acquire counts one connection for k if its count is below limit. It
// returns the slot counted in. A count at the field's maximum is over any
// limit.
func (t *table) acquire(k ipaddr.Key, limit uint64) (uint32, uint64, acquireResult) {
	tag, start := t.locate(k)
	base := start &^ (window - 1)
scan:
	for {
		empty, idle := -1, -1
		var emptyW, idleW uint64
		for p := uint64(0); p < window; p++ {
			j := base | (start+p)&(window-1)
			w := t.slots[j].Load()
			if w>>countBits == tag {
				c := w & countMask
				if c >= limit || c == countMask {
					return 0, 0, overCap
				}
				if t.slots[j].CompareAndSwap(w, w+1) {
					return uint32(j), tag, acquired
				}
				continue scan // the entry changed under us
			}
			switch {
			case w == 0:
				if empty < 0 {
					empty, emptyW = int(j), w
				}
			case w&countMask == 0:
				if idle < 0 {
					idle, idleW = int(j), w
				}
			}
		}
		// The key has no entry in its window: claim a never-used entry
		// first, so idle addresses keep their places while there is room.
		if empty < 0 {
			if idle < 0 {
				return 0, 0, full
			}
			empty, emptyW = idle, idleW
		}
		if limit == 0 {
			return 0, 0, overCap
		}
		if t.slots[empty].CompareAndSwap(emptyW, tag<<countBits|1) {
			return uint32(empty), tag, acquired
		}
	}
}

// release takes one connection from slot, which must hold tag. It reports
// false, and changes nothing, when the slot holds another tag or no
// connection (a release without its acquire).
func (t *table) release(slot uint32, tag uint64) bool {
	s := &t.slots[slot]
	for {
		w := s.Load()
		if w>>countBits != tag || w&countMask == 0 {
			return false
		}
		if s.CompareAndSwap(w, w-1) {
			return true
		}
	}
}

// count returns the count of k summed over its window (a racing pair of
// acquires can give a key two entries).
func (t *table) count(k ipaddr.Key) uint64 {
	tag, start := t.locate(k)
	base := start &^ (window - 1)
	var n uint64
	for p := uint64(0); p < window; p++ {
		if w := t.slots[base|p].Load(); w>>countBits == tag {
			n += w & countMask
		}
	}
	return n
}

// total returns the sum of all counts. It reads every entry once: O(table
// size), meant for scrapes, not for the connection path.
func (t *table) total() uint64 {
	var n uint64
	for i := range t.slots {
		n += t.slots[i].Load() & countMask
	}
	return n
}
