package simulate

import (
	"crypto/tls"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/paduraksa/paduraksa/telemetry"
)

const diffBase = `
accessLists: [{id: office, allow: [10.0.0.0/8]}]
ruleSets: [{id: waf, rules: [{pathPrefix: /wp-}]}]
hosts:
  - names: [api.example.com]
    policies: [waf]
    routes:
      - {id: v1, path: /v1, upstream: v1}
      - {id: v2, path: /v2, upstream: v2}
      - {id: admin, path: /admin, upstream: v1}
  - names: [www.example.com]
    routes: [{path: /, upstream: v1}]
upstreams:
  - {id: v1, destinations: [{id: a, address: "http://127.0.0.1:9"}]}
  - {id: v2, destinations: [{id: b, address: "http://127.0.0.1:10"}]}
`

// The diff finds exactly the requests a changed rule affects: /admin
// gets the office list, /v1 moves to v2; nothing else changes.
func TestDiffFindsExactlyTheAffectedRequests(t *testing.T) {
	store := publish(t, diffBase, snapshot.Compiler{})
	draftDoc := strings.Replace(diffBase, "{id: admin, path: /admin, upstream: v1}", "{id: admin, path: /admin, upstream: v1, policies: [office]}", 1)
	draftDoc = strings.Replace(draftDoc, "{id: v1, path: /v1, upstream: v1}", "{id: v1, path: /v1, upstream: v2}", 1)
	draft := Target{Draft: decode(t, draftDoc), Live: store}

	var probes []Probe
	for _, host := range []string{"api.example.com", "www.example.com", "other.example.com"} {
		for _, path := range []string{"/v1/x", "/v2/x", "/admin", "/wp-login", "/"} {
			for _, peer := range []string{"192.0.2.1", "10.1.1.1"} {
				probes = append(probes, Probe{URL: "http://" + host + path, Peer: MustPeer(peer)})
			}
		}
	}
	rep, err := Diff(LiveTarget(store), draft, probes)
	require.NoError(t, err)
	assert.Equal(t, len(probes), rep.Compared)
	got := map[string]string{}
	for _, c := range rep.Changes {
		got[probeName(&c.Probe)] = strings.Join(c.Fields, ",")
		require.NotNil(t, c.Before)
		require.NotNil(t, c.After)
	}
	assert.Equal(t, map[string]string{
		"GET http://api.example.com/v1/x from 192.0.2.1":  "upstream",
		"GET http://api.example.com/v1/x from 10.1.1.1":   "upstream",
		"GET http://api.example.com/admin from 192.0.2.1": "kind,verdict,upstream,status", // forwarded to v1 before, 403 now
		"GET http://api.example.com/admin from 10.1.1.1":  "verdict",
	}, got)
	assert.Equal(t, "what-if: 30 requests compared, 4 change (1 kind, 1 status, 3 upstream, 2 verdict)", rep.Summary())

	// The same document changes nothing.
	rep, err = Diff(LiveTarget(store), Target{Draft: decode(t, diffBase)}, probes)
	require.NoError(t, err)
	assert.Empty(t, rep.Changes)

	// A refused draft is the refusal; a refused probe is listed.
	_, err = Diff(LiveTarget(store), DraftTarget(decode(t, `hosts: [{names: [a.b], routes: [{upstream: x}]}]`)), probes)
	var refused *DraftRefused
	assert.ErrorAs(t, err, &refused)
	rep, err = Diff(LiveTarget(store), draft, []Probe{{URL: "ftp://x/"}})
	require.NoError(t, err)
	assert.Len(t, rep.Refused, 1)
	assert.Zero(t, rep.Compared)
}

func record(host, path string, peer string, client string) *telemetry.Record {
	return &telemetry.Record{Method: "GET", Host: host, Path: path, Proto: "HTTP/1.1",
		Peer: netip.MustParseAddrPort(peer), Client: netip.MustParseAddr(client)}
}

func TestSampleKeepsTheLastRequests(t *testing.T) {
	s := NewSample(SampleConfig{Size: 4, Every: 1})
	assert.Empty(t, s.Probes())
	for i := range 6 {
		s.ObserveRequest(record("a.example", "/"+strconv.Itoa(i), "192.0.2.1:1", "192.0.2.1"))
	}
	assert.Equal(t, 4, s.Len())
	var urls []string
	for _, p := range s.Probes() {
		urls = append(urls, p.URL)
	}
	assert.Equal(t, []string{"http://a.example/2", "http://a.example/3", "http://a.example/4", "http://a.example/5"}, urls, "the last four, oldest first")

	tlsRec := &telemetry.Record{Method: "POST", Host: "b.example:8443", Path: "/x", Proto: "HTTP/2.0", TLSVersion: tls.VersionTLS12, SNI: "b.example",
		Peer: netip.MustParseAddrPort("10.0.0.1:5"), Client: netip.MustParseAddr("203.0.113.4")}
	s.ObserveRequest(tlsRec)
	s.ObserveRequest(&telemetry.Record{Method: "GET"}) // no host: not replayable
	ps := s.Probes()
	assert.Equal(t, Probe{
		Method: "POST", URL: "https://b.example:8443/x", Peer: tlsRec.Peer, HTTPVersion: 2,
		TLS:    &TLS{SNI: "b.example", Version: tls.VersionTLS12},
		Header: http.Header{"X-Forwarded-For": {"203.0.113.4"}},
	}, ps[len(ps)-1])
	assert.Len(t, ps, 3)
}

func TestSampleAllocatesNothing(t *testing.T) {
	rec := record("a.example", "/x", "192.0.2.1:1", "192.0.2.1")
	for _, every := range []int{1, 0} {
		s := NewSample(SampleConfig{Size: 64, Every: every})
		assert.Zero(t, testing.AllocsPerRun(1000, func() { s.ObserveRequest(rec) }))
	}
}

// One request in Every is kept, chosen at random.
func TestSampleEvery(t *testing.T) {
	s := NewSample(SampleConfig{Size: 100000, Every: 8})
	rec := record("a.example", "/x", "192.0.2.1:1", "192.0.2.1")
	for range 80000 {
		s.ObserveRequest(rec)
	}
	assert.InDelta(t, 10000, s.Len(), 1000, "about one in eight of 80000")
}

// Concurrent requests and readers: run with -race.
func TestSampleConcurrent(t *testing.T) {
	s := NewSample(SampleConfig{Size: 16, Every: 1})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			rec := record("w"+strconv.Itoa(w)+".example", "/", "192.0.2.1:1", "192.0.2.1")
			for range 2000 {
				s.ObserveRequest(rec)
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			for _, p := range s.Probes() {
				assert.True(t, strings.HasPrefix(p.URL, "http://w"), p.URL)
			}
		}
	})
	wg.Wait()
	assert.Equal(t, 16, s.Len())
	// A slot the reader waited long for is handed to it (the mutex's
	// starvation mode), and writes skip it until the reader has run,
	// which on a busy machine can be after every write: so the ring is
	// full only once requests come again.
	assert.LessOrEqual(t, len(s.Probes()), 16)
	rec := record("last.example", "/", "192.0.2.1:1", "192.0.2.1")
	for range 16 {
		s.ObserveRequest(rec)
	}
	assert.Len(t, s.Probes(), 16)
}

func BenchmarkSampleObserve(b *testing.B) {
	rec := record("a.example", "/x", "192.0.2.1:1", "192.0.2.1")
	for _, every := range []int{1, DefaultSampleEvery} {
		s := NewSample(SampleConfig{Every: every})
		b.Run("every="+strconv.Itoa(every), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s.ObserveRequest(rec)
			}
		})
		b.Run("every="+strconv.Itoa(every)+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					s.ObserveRequest(rec)
				}
			})
		})
	}
}

func TestSampleRecentNewestFirst(t *testing.T) {
	s := NewSample(SampleConfig{Size: 3, Every: 1})
	assert.Empty(t, s.Recent())
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range 5 {
		rec := record("a.example", "/"+strconv.Itoa(i)+"?not-kept", "192.0.2.1:1", "192.0.2.1")
		rec.Start, rec.Duration, rec.Status = start.Add(time.Duration(i)*time.Second), time.Millisecond, 200+i
		rec.HostID, rec.RouteID, rec.Upstream, rec.Destination, rec.Error = "h", "r", "u", "d"+strconv.Itoa(i), "e"
		rec.BytesIn, rec.RequestID = 7, "not kept"
		s.ObserveRequest(rec)
	}
	got := s.Recent()
	require.Len(t, got, 3)
	for i, want := range []int{4, 3, 2} {
		r := got[i]
		assert.Equal(t, "/"+strconv.Itoa(want)+"?not-kept", r.Path, "as received")
		assert.Equal(t, 200+want, r.Status)
		assert.Equal(t, start.Add(time.Duration(want)*time.Second), r.Start)
		assert.Equal(t, "d"+strconv.Itoa(want), r.Destination)
		assert.Equal(t, []string{"GET", "a.example", "HTTP/1.1", "h", "r", "u", "e"}, []string{r.Method, r.Host, r.Proto, r.HostID, r.RouteID, r.Upstream, r.Error})
		assert.Equal(t, time.Millisecond, r.Duration)
		assert.Equal(t, netip.MustParseAddr("192.0.2.1"), r.Client)
		assert.Zero(t, r.BytesIn, "not kept")
		assert.Empty(t, r.RequestID, "not kept")
	}
}
