package balance

import (
	"fmt"
	"net/http"
	"net/netip"
	"testing"

	"github.com/paduraksa/paduraksa/upstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func hdr(v string) Input {
	return Input{Request: &http.Request{Header: http.Header{"X-User": {v}}}}
}

func TestConsistentHashConsistent(t *testing.T) {
	m, err := NewConsistentHash(HashConfig{Source: HashHeader, Name: "x-user"})
	require.NoError(t, err)
	c := nDests(t, 5)
	av := c.Members().Available
	// Another gateway replica, with its own policy object.
	replica, err := NewConsistentHash(HashConfig{Source: HashHeader, Name: "X-User"})
	require.NoError(t, err)
	picks := map[*upstream.Destination]int{}
	for i := range 5000 {
		key := fmt.Sprint("user-", i)
		d := m.Pick(hdr(key), av)
		picks[d]++
		require.Same(t, d, m.Pick(hdr(key), av), "same key, same destination")
		require.Same(t, d, replica.Pick(hdr(key), av), "every replica maps a key alike")
	}
	for d, n := range picks {
		assert.InDelta(t, 1000, n, 150, d.ID())
	}
}

func TestConsistentHashMovesAboutOneNth(t *testing.T) {
	const keys = 20000
	for _, n := range []int{4, 10, 30} {
		t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
			m, err := NewConsistentHash(HashConfig{Source: HashHeader, Name: "X-User"})
			require.NoError(t, err)
			small := nDests(t, n)
			big := nDests(t, n+1) // the same IDs plus one
			before := make([]string, keys)
			for i := range keys {
				before[i] = m.Pick(hdr(fmt.Sprint("k", i)), small.Members().Available).ID()
			}
			moved, toNew := 0, 0
			newID := big.Members().All[n].ID()
			for i := range keys {
				id := m.Pick(hdr(fmt.Sprint("k", i)), big.Members().Available).ID()
				if id != before[i] {
					moved++
					if id == newID {
						toNew++
					}
				}
			}
			frac := float64(moved) / keys
			want := 1 / float64(n+1)
			t.Logf("n=%d: moved %.3f, ideal %.3f, %d of %d to the new destination", n, frac, want, toNew, moved)
			assert.InDelta(t, want, frac, want*0.4, "about 1/n of the keys move")
			assert.Greater(t, float64(toNew)/float64(moved), 0.8, "and they move to the new destination")

			// Taking one destination out moves only its keys (and a few more).
			small.Members().All[0].SetActiveHealth(upstream.Unhealthy)
			moved = 0
			for i := range keys {
				if id := m.Pick(hdr(fmt.Sprint("k", i)), small.Members().Available).ID(); id != before[i] {
					moved++
				}
			}
			assert.InDelta(t, 1/float64(n), float64(moved)/keys, 0.4/float64(n))
		})
	}
}

func TestConsistentHashSources(t *testing.T) {
	c := nDests(t, 8)
	av := c.Members().Available

	ck, err := NewConsistentHash(HashConfig{Source: HashCookie, Name: "sid"})
	require.NoError(t, err)
	withCookie := func(v string) Input {
		return Input{Request: &http.Request{Header: http.Header{"Cookie": {"other=1; sid=" + v}}}}
	}
	seen := map[*upstream.Destination]bool{}
	for i := range 200 {
		d := ck.Pick(withCookie(fmt.Sprint(i)), av)
		assert.Same(t, d, ck.Pick(withCookie(fmt.Sprint(i)), av))
		seen[d] = true
	}
	assert.Len(t, seen, 8)

	ip, err := NewConsistentHash(HashConfig{})
	require.NoError(t, err)
	a := netip.MustParseAddr("198.51.100.4")
	d := ip.Pick(Input{Client: a}, av)
	assert.Same(t, d, ip.Pick(Input{Client: netip.AddrFrom16(a.As16())}, av), "a v4-mapped address is the same client")

	// No key: balanced like PowerOfTwoChoices, never nil.
	seen = map[*upstream.Destination]bool{}
	for range 200 {
		seen[ck.Pick(Input{Request: &http.Request{Header: http.Header{}}}, av)] = true
		require.NotNil(t, ip.Pick(Input{}, av))
	}
	assert.Greater(t, len(seen), 4)
}

func TestConsistentHashRendezvousFallback(t *testing.T) {
	c := nDests(t, 6)
	av := c.Members().Available
	m, err := NewConsistentHash(HashConfig{Source: HashHeader, Name: "X-User"})
	require.NoError(t, err)
	m.table.building.Store(true) // as if another goroutine were building
	d := m.Pick(hdr("alice"), av)
	assert.Same(t, d, m.Pick(hdr("alice"), av))
	assert.Nil(t, m.table.load(av), "the fallback does not install a table")
	m.table.building.Store(false)
	m.Pick(hdr("alice"), av)
	assert.NotNil(t, m.table.load(av))
}

func TestConsistentHashTableIsFull(t *testing.T) {
	c := nDests(t, 7)
	tb := buildHashTable(c.Members().Available)
	assert.True(t, isPrime(len(tb.slots)))
	per := make([]int, 7)
	for _, s := range tb.slots {
		require.GreaterOrEqual(t, s, int32(0))
		per[s]++
	}
	for _, n := range per {
		assert.InDelta(t, len(tb.slots)/7, n, 2, "ConsistentHash gives each destination an almost equal share of slots")
	}
}
