package connlimit

import (
	"errors"
	"log/slog"
	"math"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/internal/ipaddr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mustNew(t testing.TB, cfg Config) *Limiter {
	t.Helper()
	l, err := New(cfg)
	require.NoError(t, err)
	return l
}

var ap = netip.MustParseAddr

func TestZeroConfigDefaults(t *testing.T) {
	l := mustNew(t, Config{})
	assert.Equal(t, DefaultPerAddress, l.PerAddress())
	assert.Len(t, l.tab.slots, DefaultTableSize)

	off := mustNew(t, Config{PerAddress: Off})
	assert.Equal(t, 0, off.PerAddress())
	assert.Nil(t, off.tab, "no table is allocated when the cap is off")
}

func TestValidate(t *testing.T) {
	cfg := Config{
		PerAddress:     MaxPerAddress + 1,
		TableSize:      12,
		Deny:           []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), {}},
		TrustedProxies: []netip.Prefix{{}, netip.MustParsePrefix("::ffff:0:0/64")},
	}
	_, err := New(cfg)
	require.Error(t, err)
	var got []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ve *ValidationError
		require.True(t, errors.As(e, &ve))
		got = append(got, ve.Code+" "+ve.Path)
	}
	assert.Equal(t, []string{
		CodePerAddressInvalid + " perAddress",
		CodeTableSizeInvalid + " tableSize",
		CodeDenyInvalid + " deny[1]",
		CodeTrustedInvalid + " trustedProxies[0]",
		CodeTrustedInvalid + " trustedProxies[1]",
	}, got)
	assert.ErrorContains(t, err, "trustedProxies[1]: an IPv4-mapped prefix must be /96 or longer")

	for _, n := range []int{MaxPerAddress, 1, 0, Off, -5} {
		assert.NoError(t, (&Config{PerAddress: n}).Validate(), n)
	}
	for _, n := range []int{4, 7, 1 << 25, 24} {
		assert.Error(t, (&Config{TableSize: n}).Validate(), n)
	}
}

func TestCapAndRelease(t *testing.T) {
	l := mustNew(t, Config{PerAddress: 3})
	a := ap("192.0.2.10")
	var held []Ticket
	for range 3 {
		tk, err := l.Admit(a, TCP)
		require.NoError(t, err)
		require.True(t, tk.Counted())
		held = append(held, tk)
	}
	_, err := l.Admit(a, TCP)
	require.ErrorIs(t, err, ErrOverCap)
	_, err = l.Admit(a, QUIC)
	require.ErrorIs(t, err, ErrOverCap)
	require.ErrorIs(t, l.Check(a, QUIC), ErrOverCap)

	// Another address is not affected.
	other, err := l.Admit(ap("192.0.2.11"), TCP)
	require.NoError(t, err)
	l.Release(other)

	l.Release(held[0])
	require.NoError(t, l.Check(a, QUIC))
	tk, err := l.Admit(a, TCP)
	require.NoError(t, err)
	held[0] = tk
	for _, tk := range held {
		l.Release(tk)
	}
	s := l.Stats()
	assert.Equal(t, Stats{OverCapTCP: 1, OverCapQUIC: 2}, s)
}

func TestReleaseNeverGoesNegative(t *testing.T) {
	l := mustNew(t, Config{PerAddress: 2})
	a := ap("192.0.2.1")
	t1, _ := l.Admit(a, TCP)
	l.Release(t1)
	l.Release(t1) // a bug in the caller: counted, not applied
	l.Release(Ticket{})
	s := l.Stats()
	assert.Equal(t, uint64(0), s.Counted)
	assert.Equal(t, uint64(1), s.ReleaseMisses)
}

func TestAddressKeys(t *testing.T) {
	tests := []struct {
		name      string
		first     string
		second    string
		sameCount bool
	}{
		{"IPv4-mapped equals IPv4", "192.0.2.7", "::ffff:192.0.2.7", true},
		{"IPv4 neighbours differ", "192.0.2.7", "192.0.2.8", false},
		{"same IPv6 /64", "2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff", true},
		{"next IPv6 /64", "2001:db8:1:2::1", "2001:db8:1:3::1", false},
		{"zone ignored", "fe80::1%eth0", "fe80::2%eth1", true},
		{"IPv4 0.0.0.0 is not IPv6 ::", "0.0.0.0", "::", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := mustNew(t, Config{PerAddress: 1})
			tk, err := l.Admit(ap(tt.first), TCP)
			require.NoError(t, err)
			require.True(t, tk.Counted())
			_, err = l.Admit(ap(tt.second), QUIC)
			if tt.sameCount {
				require.ErrorIs(t, err, ErrOverCap)
			} else {
				require.NoError(t, err)
			}
		})
	}
}

func TestDecisionOrder(t *testing.T) {
	l := mustNew(t, Config{
		PerAddress:     1,
		Deny:           []netip.Prefix{netip.MustParsePrefix("198.51.100.66/32"), netip.MustParsePrefix("2001:db8:bad::/48")},
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")},
	})
	// The deny list applies to trusted proxies too, and to mapped forms.
	for _, a := range []string{"198.51.100.66", "::ffff:198.51.100.66", "2001:db8:bad:1::9"} {
		tk, err := l.Admit(ap(a), TCP)
		require.ErrorIs(t, err, ErrDenied, a)
		require.False(t, tk.Counted())
	}
	require.ErrorIs(t, l.Check(ap("198.51.100.66"), QUIC), ErrDenied)

	// Trusted proxies are admitted and never counted, past any cap.
	for range 100 {
		tk, err := l.Admit(ap("198.51.100.1"), TCP)
		require.NoError(t, err)
		require.False(t, tk.Counted())
	}
	s := l.Stats()
	assert.Equal(t, uint64(0), s.Counted)
	assert.Equal(t, uint64(3), s.DeniedTCP)
	assert.Equal(t, uint64(1), s.DeniedQUIC)
}

func TestCapOffCountsNothing(t *testing.T) {
	l := mustNew(t, Config{PerAddress: Off, Deny: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	for range 1000 {
		tk, err := l.Admit(ap("192.0.2.1"), TCP)
		require.NoError(t, err)
		require.False(t, tk.Counted())
	}
	_, err := l.Admit(ap("10.1.2.3"), TCP)
	require.ErrorIs(t, err, ErrDenied)
}

func TestNilAndInvalid(t *testing.T) {
	var l *Limiter
	tk, err := l.Admit(ap("192.0.2.1"), TCP)
	require.NoError(t, err)
	l.Release(tk)
	assert.Equal(t, Stats{}, l.Stats())

}

// A connection whose client address is unknown (the invalid Addr) is never
// exempt: no prefix, however wide, trusts or denies it, and all of them
// count under one shared key with the same cap.
func TestUnknownAddressSharesOneKey(t *testing.T) {
	all := []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}
	l := mustNew(t, Config{PerAddress: 2, TrustedProxies: all})
	var held []Ticket
	for range 2 {
		tk, err := l.Admit(netip.Addr{}, TCP)
		require.NoError(t, err)
		require.True(t, tk.Counted(), "an unknown address is counted, whatever is trusted")
		held = append(held, tk)
	}
	_, err := l.Admit(netip.Addr{}, TCP)
	require.ErrorIs(t, err, ErrOverCap)
	require.ErrorIs(t, l.Check(netip.Addr{}, QUIC), ErrOverCap)
	assert.NotEqual(t, ipaddr.Unknown, ipaddr.KeyOf(ap("0.0.0.1")))
	assert.NotEqual(t, ipaddr.Unknown, ipaddr.KeyOf(ap("::1")))
	assert.NotEqual(t, ipaddr.Unknown, ipaddr.KeyOf(ap("::")))
	l.Release(held[0])
	tk, err := l.Admit(netip.Addr{}, TCP)
	require.NoError(t, err)
	l.Release(tk)
	l.Release(held[1])
	assert.Equal(t, Stats{OverCapTCP: 1, OverCapQUIC: 1}, l.Stats())

	denyAll := mustNew(t, Config{PerAddress: 1, Deny: all})
	tk, err = denyAll.Admit(netip.Addr{}, TCP)
	require.NoError(t, err, "no prefix holds an unknown address")
	require.True(t, tk.Counted())
	_, err = denyAll.Admit(netip.Addr{}, TCP)
	require.ErrorIs(t, err, ErrOverCap)

	off := mustNew(t, Config{PerAddress: Off})
	for range 3 {
		tk, err := off.Admit(netip.Addr{}, TCP)
		require.NoError(t, err)
		require.False(t, tk.Counted(), "with the cap off nothing is counted")
	}
}

func TestFullWindowFailsOpen(t *testing.T) {
	// One window: the whole table.
	l := mustNew(t, Config{PerAddress: 1, TableSize: MinTableSize})
	var held []Ticket
	for i := range window {
		tk, err := l.Admit(netip.AddrFrom4([4]byte{192, 0, 2, byte(i)}), TCP)
		require.NoError(t, err)
		require.True(t, tk.Counted())
		held = append(held, tk)
	}
	extra := ap("203.0.113.1")
	for range 2 {
		tk, err := l.Admit(extra, TCP)
		require.NoError(t, err, "a full table fails open")
		require.False(t, tk.Counted())
	}
	s := l.Stats()
	assert.Equal(t, uint64(2), s.TableFull)
	assert.Equal(t, uint64(window), s.Counted)

	// An address that went idle keeps its entry, but gives it up when
	// another needs it.
	l.Release(held[3])
	tk, err := l.Admit(extra, TCP)
	require.NoError(t, err)
	require.True(t, tk.Counted())
	_, err = l.Admit(extra, TCP)
	require.ErrorIs(t, err, ErrOverCap)
	l.Release(tk)
	for i, tk := range held {
		if i != 3 {
			l.Release(tk)
		}
	}
	assert.Equal(t, uint64(0), l.Stats().Counted)
}

func TestCountAtMaximumIsOverCap(t *testing.T) {
	tab := newTable(MinTableSize)
	k := ipaddr.KeyOf(ap("192.0.2.1"))
	tag, start := tab.locate(k)
	tab.slots[start].Store(tag<<countBits | countMask)
	_, _, res := tab.acquire(k, math.MaxUint64)
	assert.Equal(t, overCap, res)
	tab.slots[start].Store(tag<<countBits | (countMask - 1))
	slot, _, res := tab.acquire(k, math.MaxUint64)
	assert.Equal(t, acquired, res)
	assert.Equal(t, uint32(start), slot)
	assert.Equal(t, uint64(countMask), tab.count(k))
}

// hammer runs admit/release cycles of addrs from 8 goroutines and checks
// that no address ever holds more than twice its cap (the accepted race of
// two first claims) and that every count ends at 0.
func hammer(t *testing.T, l *Limiter, addrs []netip.Addr, rounds, hold int) {
	t.Helper()
	capN := int64(l.PerAddress())
	held := make(map[ipaddr.Key]*atomic.Int64)
	for _, a := range addrs {
		held[ipaddr.KeyOf(a)] = new(atomic.Int64)
	}
	var wg sync.WaitGroup
	var over atomic.Int64
	for g := range 8 {
		wg.Go(func() {
			var mine []Ticket
			var keys []ipaddr.Key
			for i := range rounds {
				a := addrs[(i*7+g)%len(addrs)]
				tk, err := l.Admit(a, TCP)
				if err == nil && tk.Counted() {
					if held[ipaddr.KeyOf(a)].Add(1) > 2*capN {
						over.Add(1)
					}
					mine = append(mine, tk)
					keys = append(keys, ipaddr.KeyOf(a))
				}
				// Hold up to hold places, then release them all.
				if len(mine) >= hold || i == rounds-1 {
					for j := range mine {
						held[keys[j]].Add(-1)
						l.Release(mine[j])
					}
					mine, keys = mine[:0], keys[:0]
				}
			}
		})
	}
	// A compare-and-swap loop that never ends fails here, not at the
	// package's timeout.
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("admit/release goroutines did not end")
	}
	s := l.Stats()
	assert.Zero(t, over.Load(), "an address held more than twice its cap")
	assert.Equal(t, uint64(0), s.Counted)
	assert.Equal(t, uint64(0), s.ReleaseMisses)
	for i := range l.tab.slots {
		require.Zero(t, l.tab.slots[i].Load()&countMask, "slot %d", i)
	}
}

func TestConcurrentOneAddress(t *testing.T) {
	l := mustNew(t, Config{PerAddress: 5})
	hammer(t, l, []netip.Addr{ap("192.0.2.1")}, 20000, 6)
	assert.NotZero(t, l.Stats().OverCapTCP, "one goroutine holding 6 meets a cap of 5")
}

func TestConcurrentManyAddressesSmallTable(t *testing.T) {
	l := mustNew(t, Config{PerAddress: 2, TableSize: 16})
	addrs := make([]netip.Addr, 200)
	for i := range addrs {
		addrs[i] = netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)})
	}
	hammer(t, l, addrs, 20000, 12)
	assert.NotZero(t, l.Stats().TableFull, "200 addresses over 16 entries must fill windows")
}

func TestAdmitReleaseAllocatesNothing(t *testing.T) {
	l := mustNew(t, Config{
		Deny:           []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("172.16.0.0/12")},
	})
	for _, addr := range []netip.Addr{ap("192.0.2.1"), ap("2001:db8::1"), ap("10.0.0.1"), ap("172.16.0.1"), {}} {
		n := testing.AllocsPerRun(1000, func() {
			tk, _ := l.Admit(addr, TCP)
			_ = l.Check(addr, QUIC)
			l.Release(tk)
		})
		assert.Zero(t, n, addr)
	}
}

// TestIPv4MappedRule checks what the rule (see internal/ipaddr) changes
// for a Limiter: a deny list or trusted list of all of IPv6 leaves IPv4
// clients alone, dual-stack or not.
func TestIPv4MappedRule(t *testing.T) {
	v6 := []netip.Prefix{netip.MustParsePrefix("::/0")}
	l := mustNew(t, Config{PerAddress: 1, Deny: v6})
	tk, err := l.Admit(ap("192.0.2.1"), TCP)
	require.NoError(t, err)
	l.Release(tk)
	tk, err = l.Admit(ap("::ffff:192.0.2.1"), TCP)
	require.NoError(t, err)
	l.Release(tk)
	_, err = l.Admit(ap("2001:db8::1"), TCP)
	require.ErrorIs(t, err, ErrDenied)
	l = mustNew(t, Config{PerAddress: 1, TrustedProxies: v6})
	tk, err = l.Admit(ap("::ffff:192.0.2.1"), TCP)
	require.NoError(t, err)
	assert.True(t, tk.Counted(), "an IPv4 client is not an IPv6 proxy")
	l.Release(tk)

	// An IPv4-mapped prefix of /96 or longer is the IPv4 prefix it maps.
	l = mustNew(t, Config{PerAddress: 1, Deny: []netip.Prefix{netip.MustParsePrefix("::ffff:192.0.2.0/120")}})
	_, err = l.Admit(ap("192.0.2.9"), TCP)
	require.ErrorIs(t, err, ErrDenied)
	require.ErrorIs(t, l.Check(ap("::ffff:192.0.2.9"), QUIC), ErrDenied)
}

// FuzzAdmitRelease runs a random sequence of admits and releases over a
// table of two windows, single-threaded, against a model: a key is refused
// exactly when it holds the cap, a connection goes uncounted only when its
// window has no room, the table's counts equal the model's, and everything
// ends at 0. One of the addresses is the unknown client.
func FuzzAdmitRelease(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 0x80, 0x81, 4, 4, 4, 4})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x80, 0x80, 0})
	f.Add([]byte("a sequence of operations on thirty-two addresses"))
	f.Fuzz(func(t *testing.T, ops []byte) {
		const capN = 3
		l, err := New(Config{PerAddress: capN, TableSize: 16})
		if err != nil {
			t.Fatal(err)
		}
		var addrs [32]netip.Addr
		for i := range addrs {
			addrs[i] = netip.AddrFrom4([4]byte{198, 18, 0, byte(i)})
		}
		// The last is the unknown client, counted like any address.
		addrs[len(addrs)-1] = netip.Addr{}
		keys := make([]ipaddr.Key, len(addrs))
		for i, a := range addrs {
			keys[i] = ipaddr.KeyOf(a)
		}
		keys[len(addrs)-1] = ipaddr.Unknown
		held := make(map[int][]Ticket)
		full := uint64(0)
		for _, op := range ops {
			i := int(op & 31)
			if op&0x80 != 0 {
				if n := len(held[i]); n > 0 {
					l.Release(held[i][n-1])
					held[i] = held[i][:n-1]
				}
				continue
			}
			tk, err := l.Admit(addrs[i], TCP)
			switch {
			case err != nil:
				if !errors.Is(err, ErrOverCap) || len(held[i]) != capN {
					t.Fatalf("address %d holding %d: %v", i, len(held[i]), err)
				}
			case tk.Counted():
				held[i] = append(held[i], tk)
				if len(held[i]) > capN {
					t.Fatalf("address %d holds %d", i, len(held[i]))
				}
			default:
				full++
				// Uncounted: the window must have had no room.
				_, start := l.tab.locate(keys[i])
				base := start &^ (window - 1)
				for p := range uint64(window) {
					if l.tab.slots[base|p].Load()&countMask == 0 {
						t.Fatalf("address %d uncounted with slot %d free", i, base|p)
					}
				}
			}
			for j := range addrs {
				if got := l.tab.count(keys[j]); got != uint64(len(held[j])) {
					t.Fatalf("address %d: table %d, model %d", j, got, len(held[j]))
				}
			}
		}
		if s := l.Stats(); s.TableFull != full {
			t.Fatalf("TableFull %d, model %d", s.TableFull, full)
		}
		for _, ts := range held {
			for _, tk := range ts {
				l.Release(tk)
			}
		}
		if s := l.Stats(); s.Counted != 0 || s.ReleaseMisses != 0 {
			t.Fatalf("after releasing everything: %+v", s)
		}
	})
}

func TestRefusalLogIsRateLimited(t *testing.T) {
	var buf strings.Builder
	l := mustNew(t, Config{
		PerAddress: 1,
		Deny:       []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")},
		Logger:     slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: dropTime})),
	})
	now := time.Unix(1000, 0)
	l.log.now = func() time.Time { return now }

	for i := range 5 {
		_, err := l.Admit(netip.AddrFrom4([4]byte{203, 0, 113, byte(i)}), TCP)
		require.ErrorIs(t, err, ErrDenied)
	}
	now = now.Add(LogInterval)
	_, err := l.Admit(ap("203.0.113.9"), QUIC)
	require.ErrorIs(t, err, ErrDenied)
	tk, _ := l.Admit(ap("192.0.2.1"), TCP)
	_, err = l.Admit(ap("192.0.2.1"), TCP)
	require.ErrorIs(t, err, ErrOverCap)
	l.Release(tk)

	assert.Equal(t, `level=INFO msg="connections refused by the deny list" count=1 latest=203.0.113.0 transport=tcp
level=INFO msg="connections refused by the deny list" count=5 latest=203.0.113.9 transport=quic
level=INFO msg="connections refused by the per-address cap" count=1 latest=192.0.2.1 transport=tcp
`, buf.String())
}

func dropTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

// A dry run decides as a Limiter does and keeps nothing: the deny list
// refuses, trusted and other addresses are admitted, nothing takes a
// place however many connections come, and no counter or log record
// moves; OnRefusal hears every refusal.
func TestDryRunDecidesAndKeepsNothing(t *testing.T) {
	var buf strings.Builder
	var heard []Refusal
	l := mustNew(t, Config{
		PerAddress:     1,
		Deny:           []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")},
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("203.0.113.1/32"), netip.MustParsePrefix("10.0.0.0/8")},
		Logger:         slog.New(slog.NewTextHandler(&buf, nil)),
		DryRun:         true,
		OnRefusal:      func(r Refusal) { heard = append(heard, r) },
	})
	assert.Equal(t, 1, l.PerAddress(), "the cap it would apply")
	for _, tr := range []Transport{TCP, QUIC} {
		tk, err := l.Admit(ap("203.0.113.1"), tr)
		require.ErrorIs(t, err, ErrDenied, "the deny list wins over trust, as ever")
		require.False(t, tk.Counted())
		require.ErrorIs(t, l.Check(ap("::ffff:203.0.113.7"), tr), ErrDenied)
		for _, a := range []netip.Addr{ap("192.0.2.1"), ap("10.1.2.3"), {}} {
			for range 3 {
				tk, err := l.Admit(a, tr)
				require.NoError(t, err, "%v: past its cap of 1, since nothing is counted", a)
				require.False(t, tk.Counted())
				require.NoError(t, l.Check(a, tr))
				l.Release(tk)
			}
		}
	}
	assert.Equal(t, Stats{}, l.Stats())
	assert.Empty(t, buf.String())
	assert.Equal(t, []Refusal{
		{Addr: ap("203.0.113.1"), Transport: TCP, Err: ErrDenied},
		{Addr: ap("::ffff:203.0.113.7"), Transport: TCP, Err: ErrDenied},
		{Addr: ap("203.0.113.1"), Transport: QUIC, Err: ErrDenied},
		{Addr: ap("::ffff:203.0.113.7"), Transport: QUIC, Err: ErrDenied},
	}, heard)
}

// OnRefusal hears each refusal of a counting Limiter too, by the deny
// list and by the cap, from Admit and Check, while the counters and the
// log keep theirs; an admission uncounted for a full table is none.
func TestOnRefusalHearsEveryRefusal(t *testing.T) {
	var heard []Refusal
	l := mustNew(t, Config{
		PerAddress: 1,
		TableSize:  MinTableSize,
		Deny:       []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")},
		OnRefusal:  func(r Refusal) { heard = append(heard, r) },
	})
	_, err := l.Admit(ap("203.0.113.9"), TCP)
	require.ErrorIs(t, err, ErrDenied)
	held, err := l.Admit(ap("192.0.2.1"), QUIC)
	require.NoError(t, err)
	_, err = l.Admit(ap("192.0.2.1"), TCP)
	require.ErrorIs(t, err, ErrOverCap)
	require.ErrorIs(t, l.Check(ap("192.0.2.1"), QUIC), ErrOverCap)
	// Fill the one window of the table: the next new address is
	// admitted uncounted, which is no refusal.
	for i := range 2 * window {
		tk, err := l.Admit(netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}), TCP)
		require.NoError(t, err)
		defer l.Release(tk)
	}
	require.Positive(t, l.Stats().TableFull)
	l.Release(held)

	assert.Equal(t, []Refusal{
		{Addr: ap("203.0.113.9"), Transport: TCP, Err: ErrDenied},
		{Addr: ap("192.0.2.1"), Transport: TCP, Err: ErrOverCap},
		{Addr: ap("192.0.2.1"), Transport: QUIC, Err: ErrOverCap},
	}, heard)
	s := l.Stats()
	assert.Equal(t, [4]uint64{1, 0, 1, 1}, [4]uint64{s.DeniedTCP, s.DeniedQUIC, s.OverCapTCP, s.OverCapQUIC})
}

func TestDryRunAllocatesNothing(t *testing.T) {
	var refused atomic.Int64
	l := mustNew(t, Config{
		Deny:           []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("172.16.0.0/12")},
		DryRun:         true,
		OnRefusal:      func(Refusal) { refused.Add(1) },
	})
	for _, addr := range []netip.Addr{ap("192.0.2.1"), ap("2001:db8::1"), ap("10.0.0.1"), ap("172.16.0.1"), {}} {
		n := testing.AllocsPerRun(1000, func() {
			tk, _ := l.Admit(addr, TCP)
			_ = l.Check(addr, QUIC)
			l.Release(tk)
		})
		assert.Zero(t, n, addr)
	}
	assert.Positive(t, refused.Load())
}
