package balance

import (
	"github.com/paduraksa/paduraksa/internal/problem"

	"github.com/paduraksa/paduraksa/upstream"
)

// HashSource says what a consistent-hash policy hashes.
type HashSource string

const (
	// HashClientAddress hashes the resolved client address (the default).
	HashClientAddress HashSource = ""
	// HashHeader hashes the first value of the request header Name.
	HashHeader HashSource = "Header"
	// HashCookie hashes the value of the request cookie Name.
	HashCookie HashSource = "Cookie"
)

// HashConfig configures [ConsistentHash].
type HashConfig struct {
	// Source is what to hash; the zero value hashes the client address.
	Source HashSource
	// Name is the header or cookie name for HashHeader and HashCookie.
	Name string
}

// Validate returns every problem in c, with paths relative to c, joined;
// nil means c is valid.
func (c HashConfig) Validate() error {
	var errs problem.List
	switch c.Source {
	case HashClientAddress:
		if c.Name != "" {
			errs.Add(CodeHashNameUnused, "name", "a client-address hash takes no name")
		}
	case HashHeader, HashCookie:
		if !isToken(c.Name) {
			errs.Add(CodeHashNameInvalid, "name", "header or cookie name must be a non-empty token")
		}
	default:
		errs.Add(CodeHashSourceUnknown, "source", "unknown hash source "+quote(string(c.Source))+" (want Header, Cookie, or empty for the client address)")
	}
	return errs.Err()
}

// ConsistentHash is the consistent-hash policy: requests with the same key
// (a header, a cookie or the client address) go to the same destination
// while the available set is unchanged, and a change moves only about 1/n
// of the keys.
// It uses Maglev hashing (Eisenbud et al., NSDI 2016): a lookup table of
// 65537 slots (a prime; 256 KiB), filled from each destination's own
// permutation of the slots, derived from a hash of its ID. The size stays
// the same while the set changes, so that only the slots of the destinations
// that come or go change hands; past 655 destinations it grows to 100 slots
// per destination, and the crossing moves every key once.
// The key hash is deterministic (FNV-1a, not seeded per process), so every
// gateway replica maps a key to the same destination.
//
// A request without the key is balanced by power of two choices.
//
// The table is built on the first Pick after the available set changes
// (the only Pick that allocates; concurrent Picks meanwhile fall back to
// rendezvous hashing over the same set, which also allocates nothing). Use
// one ConsistentHash per cluster, made with [NewConsistentHash]; it is safe
// for concurrent use. The zero ConsistentHash is NewConsistentHash of the
// zero HashConfig.
type ConsistentHash struct {
	keys  KeyHash
	table view[hashTable]
}

type hashTable struct {
	slots []int32 // indices into the available slice
}

// NewConsistentHash returns a consistent-hash policy, or the validation
// errors of c joined.
func NewConsistentHash(c HashConfig) (*ConsistentHash, error) {
	keys, err := NewKeyHash(c)
	if err != nil {
		return nil, err
	}
	return &ConsistentHash{keys: keys}, nil
}

// Pick implements [Policy].
func (m *ConsistentHash) Pick(in Input, available []*upstream.Destination) *upstream.Destination {
	switch len(available) {
	case 0:
		return nil
	case 1:
		return available[0]
	}
	h, ok := m.keys.Hash(in)
	if !ok {
		return PowerOfTwoChoices{}.Pick(in, available)
	}
	t := m.table.load(available)
	if t == nil {
		if t = m.table.build(available, buildHashTable); t == nil {
			return rendezvous(available, h)
		}
	}
	return available[t.slots[h%uint64(len(t.slots))]]
}

func buildHashTable(available []*upstream.Destination) *hashTable {
	n := len(available)
	m := hashTableSize
	if n > hashTableSize/100 {
		m = nextPrime(100 * n)
	}
	offset := make([]uint64, n)
	skip := make([]uint64, n)
	next := make([]uint64, n)
	for i, d := range available {
		h := hashString(d.ID())
		offset[i] = h % uint64(m)
		skip[i] = mix(h^0x9e3779b97f4a7c15)%uint64(m-1) + 1
	}
	slots := make([]int32, m)
	for i := range slots {
		slots[i] = -1
	}
	for filled := 0; ; {
		for i := range n {
			c := (offset[i] + next[i]*skip[i]) % uint64(m)
			for slots[c] >= 0 {
				next[i]++
				c = (offset[i] + next[i]*skip[i]) % uint64(m)
			}
			slots[c] = int32(i)
			next[i]++
			if filled++; filled == m {
				return &hashTable{slots: slots}
			}
		}
	}
}

// rendezvous picks by highest random weight: O(n), no table, and also
// consistent. It maps keys differently from the table, so the few requests
// that arrive while a table is being rebuilt may land elsewhere.
func rendezvous(available []*upstream.Destination, key uint64) *upstream.Destination {
	var best *upstream.Destination
	var top uint64
	for _, d := range available {
		if w := mix(hashString(d.ID()) ^ key); best == nil || w > top {
			best, top = d, w
		}
	}
	return best
}

// hashTableSize is the table size up to 655 destinations.
const hashTableSize = 65537

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// hashString is FNV-1a followed by a finaliser, so that short, similar keys
// spread over the whole word.
func hashString(s string) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return mix(h)
}

// mix is the splitmix64 finaliser.
func mix(h uint64) uint64 {
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}

func nextPrime(n int) int {
	for ; ; n++ {
		if isPrime(n) {
			return n
		}
	}
}

func isPrime(n int) bool {
	if n < 2 {
		return false
	}
	for d := 2; d*d <= n; d++ {
		if n%d == 0 {
			return false
		}
	}
	return true
}
