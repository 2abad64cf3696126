package connlimit

import (
	"net/netip"
	"runtime"
	"sync/atomic"
	"testing"
)

// BenchmarkAdmitRelease measures one admit and its release through the
// whole decision (deny list, trusted proxies, table) on the default table.
func BenchmarkAdmitRelease(b *testing.B) {
	l, err := New(Config{
		Deny:           []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8:bad::/48")},
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("172.16.0.0/12")},
	})
	if err != nil {
		b.Fatal(err)
	}
	addrs := make([]netip.Addr, 200)
	for i := range addrs {
		addrs[i] = netip.AddrFrom4([4]byte{192, 0, byte(i >> 8), byte(i)})
	}

	b.Run("single address", func(b *testing.B) {
		b.ReportAllocs()
		a := addrs[0]
		for b.Loop() {
			t, _ := l.Admit(a, TCP)
			l.Release(t)
		}
	})
	b.Run("200 addresses", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			t, _ := l.Admit(addrs[i], TCP)
			l.Release(t)
			if i++; i == len(addrs) {
				i = 0
			}
		}
	})
	b.Run("8 goroutines", func(b *testing.B) {
		b.ReportAllocs()
		// RunParallel starts parallelism × GOMAXPROCS goroutines.
		b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
		var next atomic.Uint32
		b.RunParallel(func(pb *testing.PB) {
			i := int(next.Add(25)) % len(addrs)
			for pb.Next() {
				t, _ := l.Admit(addrs[i], TCP)
				l.Release(t)
				if i++; i == len(addrs) {
					i = 0
				}
			}
		})
	})
}
