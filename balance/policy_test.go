package balance

import (
	"net/http"
	"net/netip"
	"strconv"
	"testing"

	"github.com/paduraksa/paduraksa/internal/seam"
	"github.com/paduraksa/paduraksa/upstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func builtins(t testing.TB) map[string]Policy {
	m, err := NewConsistentHash(HashConfig{Source: HashHeader, Name: "X-User"})
	require.NoError(t, err)
	return map[string]Policy{
		"PowerOfTwoChoices": PowerOfTwoChoices{},
		"LeastRequests":     LeastRequests{},
		"RoundRobin":        new(RoundRobin),
		"Random":            Random{},
		"FirstAlphabetical": FirstAlphabetical{},
		"PreferLocalZone":   &PreferLocalZone{Zone: "a", Spillover: 4},
		"ConsistentHash":    m,
		"SlowStart":         &SlowStart{Window: 1e9},
	}
}

func TestEmptyAndSingle(t *testing.T) {
	c := nDests(t, 1)
	in := Input{Request: &http.Request{Header: http.Header{"X-User": {"u"}}}}
	for name, p := range builtins(t) {
		t.Run(name, func(t *testing.T) {
			assert.Nil(t, p.Pick(in, nil))
			assert.Same(t, c.Members().All[0], p.Pick(in, c.Members().Available))
		})
	}
}

func TestPowerOfTwoChoicesPrefersFewerInFlight(t *testing.T) {
	c := nDests(t, 2)
	av := c.Members().Available
	for range 5 {
		av[0].Begin()
	}
	for range 100 {
		assert.Same(t, av[1], PowerOfTwoChoices{}.Pick(Input{}, av), "with two destinations both are always drawn")
	}
}

func TestPowerOfTwoChoicesDrawsDistinct(t *testing.T) {
	for n := 2; n < 40; n++ {
		for range 200 {
			i, j := twoDistinct(n)
			require.NotEqual(t, i, j)
			require.True(t, i >= 0 && i < n && j >= 0 && j < n)
		}
	}
	// Every index is drawn about equally often.
	hits := make([]int, 5)
	for range 50000 {
		i, j := twoDistinct(5)
		hits[i]++
		hits[j]++
	}
	for _, h := range hits {
		assert.InDelta(t, 20000, h, 1500)
	}
}

func TestLeastRequests(t *testing.T) {
	c := nDests(t, 4)
	av := c.Members().Available
	for i, d := range av {
		for range 3 - i%3 {
			d.Begin()
		}
	}
	// in flight: 3 2 1 3
	for range 50 {
		assert.Same(t, av[2], LeastRequests{}.Pick(Input{}, av))
	}
	// Ties are spread.
	c = nDests(t, 4)
	picks := map[*upstream.Destination]int{}
	for range 400 {
		picks[LeastRequests{}.Pick(Input{}, c.Members().Available)]++
	}
	assert.Len(t, picks, 4)
}

func TestRoundRobinAndFirstAlphabetical(t *testing.T) {
	c := nDests(t, 3)
	av := c.Members().Available
	var rr RoundRobin
	for i := range 9 {
		assert.Same(t, av[i%3], rr.Pick(Input{}, av))
	}
	assert.Same(t, av[0], FirstAlphabetical{}.Pick(Input{}, av))
	av[0].SetActiveHealth(upstream.Unhealthy)
	assert.Equal(t, "d001", FirstAlphabetical{}.Pick(Input{}, c.Members().Available).ID(), "fails over to the next")
}

func TestRandomCovers(t *testing.T) {
	c := nDests(t, 4)
	picks := map[*upstream.Destination]int{}
	for range 4000 {
		picks[Random{}.Pick(Input{}, c.Members().Available)]++
	}
	for _, n := range picks {
		assert.InDelta(t, 1000, n, 200)
	}
}

func TestPickAllocatesNothing(t *testing.T) {
	c := cluster(t, dest("a1", "h:1", "a"), dest("a2", "h:2", "a"), dest("b1", "h:3", "b"), dest("b2", "h:4", "b"))
	av := c.Members().Available
	av[3].SetAvailableSince(seam.Open(), 1) // long ago: slow start has to read the clock
	av = c.Members().Available
	req := &http.Request{Header: http.Header{"X-User": {"alice"}, "Cookie": {"a=1; sid=xyz"}}}
	ck, err := NewConsistentHash(HashConfig{Source: HashCookie, Name: "sid"})
	require.NoError(t, err)
	ip, err := NewConsistentHash(HashConfig{})
	require.NoError(t, err)
	ps := builtins(t)
	ps["ConsistentHashCookie"] = ck
	ps["ConsistentHashClient"] = ip
	in := Input{Request: req, Client: netip.MustParseAddr("192.0.2.7")}
	for name, p := range ps {
		t.Run(name, func(t *testing.T) {
			p.Pick(in, av) // builds any table
			allocs := testing.AllocsPerRun(200, func() {
				if p.Pick(in, av) == nil {
					t.Fatal("nil pick")
				}
			})
			assert.Zero(t, allocs)
		})
	}
}

func BenchmarkPick(b *testing.B) {
	req := &http.Request{Header: http.Header{"X-User": {"alice"}}}
	in := Input{Request: req, Client: netip.MustParseAddr("192.0.2.7")}
	for _, name := range []string{"PowerOfTwoChoices", "LeastRequests", "RoundRobin", "Random", "FirstAlphabetical", "PreferLocalZone", "ConsistentHash", "SlowStart"} {
		for _, n := range []int{2, 16, 256} {
			b.Run("policy="+name+"/n="+strconv.Itoa(n), func(b *testing.B) {
				ds := make([]upstream.DestinationConfig, n)
				for i := range ds {
					zone := "a"
					if i%2 == 1 {
						zone = "b"
					}
					ds[i] = dest("d"+strconv.Itoa(i), "127.0.0.1:"+strconv.Itoa(10000+i), zone)
				}
				c := cluster(b, ds...)
				av := c.Members().Available
				for i, d := range av {
					for range i % 5 {
						d.Begin()
					}
				}
				p := builtins(b)[name]
				p.Pick(in, av)
				b.ReportAllocs()
				for b.Loop() {
					p.Pick(in, av)
				}
			})
		}
	}
}
