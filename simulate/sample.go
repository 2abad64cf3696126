package simulate

import (
	"crypto/tls"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paduraksa/paduraksa/telemetry"
)

// Defaults of the zero fields of a [SampleConfig].
const (
	DefaultSampleSize  = 256
	DefaultSampleEvery = 8
)

// SampleConfig configures a [Sample].
type SampleConfig struct {
	// Size is the number of requests kept; 0 means [DefaultSampleSize].
	Size int
	// Every keeps one request in Every, chosen at random, so the
	// requests that are not kept cost one random number; 0 means
	// [DefaultSampleEvery], 1 keeps every request.
	Every int
}

// Sample keeps the most recent requests the gateway finished, in a fixed
// ring, so a what-if ([Diff]) can replay real traffic against a draft. It
// is a [telemetry.Observer]: the gateway calls ObserveRequest once per
// finished request, which copies the record's fields into a slot of the
// ring (no allocation, no waiting: a slot that is being read is skipped),
// for one request in [SampleConfig.Every].
// Build it with [NewSample] (the zero Sample has no ring and keeps
// nothing); it is safe for concurrent use.
//
// It keeps what a record has of the request: method, host, path (no
// query: records have none), protocol, peer, client, TLS version and SNI;
// and of its answer, for [Sample.Recent]: when it started, how long it
// took, the status, host and route IDs, the upstream and destination, and
// the error kind. Request headers are not recorded (so no credential is
// ever kept), and a replayed request carries only what the client
// resolution needs (X-Forwarded-For when the client was not the peer).
type Sample struct {
	next  atomic.Uint64
	every uint32
	slots []sampleSlot
}

type sampleSlot struct {
	mu   sync.Mutex
	used bool
	seq  uint64
	rec  sampled
}

// sampled is the part of a telemetry.Record a replay needs.
type sampled struct {
	method, host, path, proto, sni string
	client                         netip.Addr
	peer                           netip.AddrPort
	tlsVersion                     uint16

	// Of the answer, for Recent.
	start                                          time.Time
	duration                                       time.Duration
	status                                         int
	hostID, routeID, upstream, destination, errStr string
}

var _ telemetry.Observer = (*Sample)(nil)

// NewSample returns a sample with cfg's settings; negative values are
// taken as 0.
func NewSample(cfg SampleConfig) *Sample {
	if cfg.Size <= 0 {
		cfg.Size = DefaultSampleSize
	}
	if cfg.Every <= 0 {
		cfg.Every = DefaultSampleEvery
	}
	return &Sample{slots: make([]sampleSlot, cfg.Size), every: uint32(min(cfg.Every, 1<<30))}
}

// ObserveRequest copies what the record says of the request into the
// ring. It allocates nothing.
func (s *Sample) ObserveRequest(rec *telemetry.Record) {
	if len(s.slots) == 0 || (s.every > 1 && rand.Uint32N(s.every) != 0) {
		return
	}
	n := s.next.Add(1) - 1
	sl := &s.slots[n%uint64(len(s.slots))]
	if !sl.mu.TryLock() {
		return // being read: this request is not kept
	}
	sl.used, sl.seq = true, n
	sl.rec = sampled{
		method: rec.Method, host: rec.Host, path: rec.Path, proto: rec.Proto, sni: rec.SNI,
		client: rec.Client, peer: rec.Peer, tlsVersion: rec.TLSVersion,
		start: rec.Start, duration: rec.Duration, status: rec.Status,
		hostID: rec.HostID, routeID: rec.RouteID, upstream: rec.Upstream, destination: rec.Destination, errStr: rec.Error,
	}
	sl.mu.Unlock()
}

// Len returns the number of requests held.
func (s *Sample) Len() int { return int(min(s.next.Load(), uint64(len(s.slots)))) }

// Probes returns the held requests as probes, oldest first. A record that
// cannot be one (no host) is left out.
func (s *Sample) Probes() []Probe {
	all := s.held()
	out := make([]Probe, 0, len(all))
	for i := range all {
		if p, ok := all[i].probe(); ok {
			out = append(out, p)
		}
	}
	return out
}

// Recent returns the held requests as records, newest first, with the
// fields the sample keeps (see [Sample]) and the others zero. Paths are
// as the clients sent them.
func (s *Sample) Recent() []telemetry.Record {
	all := s.held()
	out := make([]telemetry.Record, len(all))
	for i := range all {
		r := &all[len(all)-1-i]
		out[i] = telemetry.Record{
			Start: r.start, Duration: r.duration, Client: r.client, Peer: r.peer,
			Method: r.method, Host: r.host, Path: r.path, Proto: r.proto, TLSVersion: r.tlsVersion, SNI: r.sni,
			Status: r.status, HostID: r.hostID, RouteID: r.routeID, Upstream: r.upstream, Destination: r.destination, Error: r.errStr,
		}
	}
	return out
}

// held copies the held requests, oldest first.
func (s *Sample) held() []sampled {
	type held struct {
		seq uint64
		rec sampled
	}
	all := make([]held, 0, len(s.slots))
	for i := range s.slots {
		sl := &s.slots[i]
		sl.mu.Lock()
		if sl.used {
			all = append(all, held{sl.seq, sl.rec})
		}
		sl.mu.Unlock()
	}
	// Slots hold increasing sequence numbers from the oldest on: sort by
	// them (a short insertion sort is enough for a ring of this size, and
	// the order is nearly sorted already).
	for i := 1; i < len(all); i++ {
		for j := i; j > 0 && all[j-1].seq > all[j].seq; j-- {
			all[j-1], all[j] = all[j], all[j-1]
		}
	}
	out := make([]sampled, len(all))
	for i := range all {
		out[i] = all[i].rec
	}
	return out
}

// probe turns a sampled record into the probe that sends it again.
func (r *sampled) probe() (Probe, bool) {
	if r.host == "" {
		return Probe{}, false
	}
	u := url.URL{Scheme: "http", Host: r.host, Path: r.path}
	if r.tlsVersion != 0 || r.proto == "HTTP/3.0" {
		u.Scheme = "https"
	}
	if u.Path == "" {
		u.Path = "/"
	}
	p := Probe{Method: r.method, URL: u.String(), Peer: r.peer}
	switch r.proto {
	case "HTTP/2.0":
		p.HTTPVersion = 2
	case "HTTP/3.0":
		p.HTTPVersion = 3
	}
	if u.Scheme == "https" {
		t := &TLS{SNI: r.sni, NoSNI: r.sni == ""}
		if r.tlsVersion != 0 {
			t.Version = max(r.tlsVersion, tls.VersionTLS10)
		}
		p.TLS = t
	}
	if r.client.IsValid() && r.peer.IsValid() && r.client != r.peer.Addr() {
		p.Header = http.Header{"X-Forwarded-For": {r.client.String()}}
	}
	return p, true
}
