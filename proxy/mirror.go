package proxy

import (
	"bytes"
	"context"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/paduraksa/paduraksa/balance"
	"github.com/paduraksa/paduraksa/internal/enum"
	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/paduraksa/paduraksa/telemetry"
	"github.com/paduraksa/paduraksa/upstream"
)

// Defaults and limits of a [MirrorConfig].
const (
	DefaultMirrorMaxBodyBytes = 64 << 10
	DefaultMirrorMaxInFlight  = 64
	DefaultMirrorTimeout      = 30 * time.Second
	// MaxMirrorBodyBytes bounds MaxBodyBytes: a copy's body is held in
	// memory until it is sent.
	MaxMirrorBodyBytes = 16 << 20
	// MaxMirrorInFlight bounds MaxInFlight.
	MaxMirrorInFlight = 10_000
)

// MirrorConfig describes a route's mirror: a sampled share of its
// requests copied to another cluster. Only Cluster is required; the zero
// Percent copies nothing.
type MirrorConfig struct {
	// Cluster receives the copies, with its own balancing (its policy;
	// no affinity), health and transport (net/http's client).
	Cluster *Cluster
	// Percent is the share of the route's requests copied, 0 to 100,
	// fractions allowed (0.5), sampled at random per request.
	Percent float64
	// MaxBodyBytes is the largest request body copied; 0 means
	// DefaultMirrorMaxBodyBytes, at most MaxMirrorBodyBytes. A request
	// whose body is larger (declared, or found so while it streams to the
	// primary) is not mirrored: [MirrorTooLarge].
	MaxBodyBytes int64
	// MaxInFlight bounds the copies of the route in flight at once; 0
	// means DefaultMirrorMaxInFlight, at most MaxMirrorInFlight. A
	// sampled request beyond it is not mirrored: [MirrorDropped].
	MaxInFlight int
	// HostName is the Host of the copies (a host name or IP literal,
	// optional port); "" means the Host the primary sends (under
	// HostDestination, the mirror destination's own address).
	HostName string
	// Timeout bounds a copy from its send to the end of its answer; 0
	// means DefaultMirrorTimeout.
	Timeout time.Duration
	// Stats counts the copies and holds the in-flight count that
	// MaxInFlight bounds; nil means the Mirror's own. Keep one per route
	// across publishes, so the bound holds across them.
	Stats *MirrorStats
}

// MirrorResult says what became of a request sampled for mirroring.
type MirrorResult uint8

const (
	// MirrorSent: the copy was sent (its answer is counted by outcome).
	MirrorSent MirrorResult = iota + 1
	// MirrorDropped: MaxInFlight copies were in flight.
	MirrorDropped
	// MirrorTooLarge: the body was over MaxBodyBytes.
	MirrorTooLarge
	// MirrorIncomplete: the client's body did not end while the request
	// was served (it failed, or the upstream answered without reading
	// all of it), so there was no whole body to copy.
	MirrorIncomplete
	numMirrorResults = iota + 1
)

var mirrorResultNames = enum.Names[MirrorResult]{"", "sent", "dropped", "tooLarge", "incomplete"}

// String returns the result's name: "sent", "dropped", "tooLarge" or
// "incomplete", as the access log's mirror field and the metrics write
// it; "" for the zero MirrorResult (not sampled).
func (m MirrorResult) String() string { return mirrorResultNames.Name(m) }

// MirrorResultNames returns the names of the results, in order.
func MirrorResultNames() []string { return mirrorResultNames[1:] }

// MirrorStats counts a mirror's copies with lock-free counters: by
// result, the outcomes of the copies sent, and the copies in flight. The
// zero value is ready; it is safe for concurrent use.
type MirrorStats struct {
	results  [numMirrorResults]atomic.Uint64
	outcomes [upstream.NumOutcomes]atomic.Uint64
	noDest   atomic.Uint64
	inFlight atomic.Int64
}

// Count returns how many sampled requests ended with r.
func (s *MirrorStats) Count(r MirrorResult) uint64 {
	if int(r) >= len(s.results) {
		return 0
	}
	return s.results[r].Load()
}

// Outcome returns how many copies sent ended with o at their destination.
func (s *MirrorStats) Outcome(o upstream.Outcome) uint64 {
	if int(o) >= len(s.outcomes) {
		return 0
	}
	return s.outcomes[o].Load()
}

// NoDestination returns how many copies sent found no available
// destination in the mirror's cluster.
func (s *MirrorStats) NoDestination() uint64 { return s.noDest.Load() }

// InFlight returns the copies in flight now.
func (s *MirrorStats) InFlight() int64 { return s.inFlight.Load() }

// acquire takes an in-flight place under max, or reports false.
func (s *MirrorStats) acquire(max int64) bool {
	if s.inFlight.Add(1) > max {
		s.inFlight.Add(-1)
		return false
	}
	return true
}

func (s *MirrorStats) release() { s.inFlight.Add(-1) }

// Mirror copies a sampled share of a route's requests to another cluster
// ([RouteConfig.Mirror]; the sides of a split share one). A copy carries
// the request as the route forwards it (method, path and query after the
// rewrite, the headers after the route's request rules, the Host of
// MirrorConfig.HostName or the primary's) and its body, buffered as it
// streams to the primary and sent when it is complete, on a goroutine of
// its own: the client's request never waits for the copy, and the
// copy's answer is read and dropped. It never changes the client's
// answer, never feeds the primary cluster's passive health (the mirror's
// destinations report to the mirror cluster's own Observer), and never
// carries trailers. Upgrades are never mirrored.
//
// A request that is not sampled costs one random number; a sampled one
// allocates its copy (the header map, the body, the goroutine). Each
// copy's goroutine ends when its answer is read or MirrorConfig.Timeout
// passes, at most MaxInFlight of them per route. Build a Mirror with
// [NewMirror]; the zero Mirror has no cluster, and NewRoute refuses it.
// It is immutable and safe for concurrent use.
type Mirror struct {
	cluster     *Cluster
	always      bool
	threshold   uint64 // a request is sampled when a random uint64 is below it
	maxBody     int64
	maxInFlight int64
	hostName    string
	timeout     time.Duration
	stats       *MirrorStats
	cfg         MirrorConfig
}

// NewMirror checks and compiles a mirror. It returns every problem of cfg
// at once, each a [ValidationError] with a path relative to cfg.
func NewMirror(cfg MirrorConfig) (*Mirror, error) {
	var errs problem.List
	checkCluster(&errs, cfg.Cluster)
	if !(cfg.Percent >= 0 && cfg.Percent <= 100) {
		errs.Add(CodeMirrorPercentInvalid, "percent", strconv.FormatFloat(cfg.Percent, 'g', -1, 64)+" is not 0 to 100")
	}
	if cfg.MaxBodyBytes < 0 || cfg.MaxBodyBytes > MaxMirrorBodyBytes {
		errs.Add(CodeMirrorMaxBodyBytesInvalid, "maxBodyBytes", strconv.FormatInt(cfg.MaxBodyBytes, 10)+" is not 0 (the default) to "+strconv.Itoa(MaxMirrorBodyBytes))
	}
	if cfg.MaxInFlight < 0 || cfg.MaxInFlight > MaxMirrorInFlight {
		errs.Add(CodeMirrorMaxInFlightInvalid, "maxInFlight", strconv.Itoa(cfg.MaxInFlight)+" is not 0 (the default) to "+strconv.Itoa(MaxMirrorInFlight))
	}
	if cfg.HostName != "" && !validHostName(cfg.HostName) {
		errs.Add(CodeMirrorHostNameInvalid, "hostName", quote(cfg.HostName)+" is not a host name or IP literal with an optional port")
	}
	if cfg.Timeout < 0 {
		errs.Add(CodeMirrorTimeoutInvalid, "timeout", "negative (0 means the default, "+DefaultMirrorTimeout.String()+")")
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMirrorMaxBodyBytes
	}
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = DefaultMirrorMaxInFlight
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultMirrorTimeout
	}
	if cfg.Stats == nil {
		cfg.Stats = new(MirrorStats)
	}
	m := &Mirror{cluster: cfg.Cluster, always: cfg.Percent == 100, maxBody: cfg.MaxBodyBytes,
		maxInFlight: int64(cfg.MaxInFlight), hostName: cfg.HostName, timeout: cfg.Timeout, stats: cfg.Stats, cfg: cfg}
	if !m.always {
		m.threshold = uint64(cfg.Percent / 100 * math.Exp2(64))
	}
	return m, nil
}

// Config returns the mirror's config with its defaults applied: the
// cluster, the percent, the limits, the Host, the timeout and the stats
// in use.
func (m *Mirror) Config() MirrorConfig { return m.cfg }

// Stats returns the mirror's counters.
func (m *Mirror) Stats() *MirrorStats { return m.stats }

// Upstream returns the ID of the mirror's upstream, or "" for the zero
// Mirror.
func (m *Mirror) Upstream() string {
	if m.cluster == nil || m.cluster.Upstream == nil {
		return ""
	}
	return m.cluster.Upstream.ID()
}

// sampled reports whether this request is one to copy.
func (m *Mirror) sampled() bool { return m.always || rand.Uint64() < m.threshold }

// checkMirror checks a route's mirror: one made by NewMirror, to another
// upstream than the route's own.
func checkMirror(errs *problem.List, cfg *RouteConfig) *Mirror {
	m := cfg.Mirror
	switch {
	case m == nil:
	case m.cluster == nil:
		errs.Add(CodeRouteMirrorInvalid, "mirror", "the route's mirror was not made by NewMirror")
	case cfg.Cluster != nil && cfg.Cluster.Upstream != nil && m.cluster.Upstream == cfg.Cluster.Upstream:
		errs.Add(CodeRouteMirrorSelf, "mirror", "a mirror to the route's own upstream "+quote(m.Upstream())+" would send each copy where the request goes")
	}
	return m
}

// Copy states: a copy waits for its body, then is sent, or is given up.
const (
	copyPending int32 = iota
	copySent
	copyTooLarge
	copyIncomplete
)

// mirrorCopy is one sampled request's copy.
type mirrorCopy struct {
	m      *Mirror
	method string
	url    url.URL
	header http.Header
	host   string // "" under HostDestination: the mirror destination's address
	client netip.Addr
	body   bool // the request has a body (perhaps of 0 bytes)
	state  atomic.Int32
	buf    []byte // the body so far, written only by the body's reader
}

// mirror decides whether the prepared request is copied and, when it is,
// starts the copy: at once when the body is known (none, or the replay
// buffer), else through a tee on the streamed body. It records the
// decision and returns the copy still waiting for its body, whose end
// the forward calls.
func (f *forward) mirror() *mirrorCopy {
	m, rec := f.rt.mirror, &f.rq.Record
	if f.upgrade != "" || !m.sampled() {
		return nil
	}
	st := m.stats
	if f.r.ContentLength > m.maxBody {
		st.results[MirrorTooLarge].Add(1)
		rec.Mirror = mirrorResultNames[MirrorTooLarge]
		return nil
	}
	if !st.acquire(m.maxInFlight) {
		st.results[MirrorDropped].Add(1)
		rec.Mirror = mirrorResultNames[MirrorDropped]
		return nil
	}
	o := f.o
	c := &mirrorCopy{m: m, method: o.req.Method, url: o.url, header: o.req.Header.Clone(), client: f.rq.Client}
	delete(c.header, "Te") // a copy has no trailers
	switch {
	case m.hostName != "":
		c.host = m.hostName
	case f.rt.hostMode == HostCustom:
		c.host = f.rt.hostName
	case f.rt.hostMode == HostClient:
		c.host = f.r.Host
	}
	if f.body == nil {
		// No body, or the whole body buffered for replays.
		c.body = f.replay != nil
		c.state.Store(copySent)
		c.launch(f.replay)
		rec.Mirror = mirrorResultNames[MirrorSent]
		return nil
	}
	c.body = true
	if n := f.r.ContentLength; n > 0 {
		c.buf = make([]byte, 0, n)
	}
	f.body.src = &mirrorTee{src: f.body.src, c: c}
	return c
}

// end gives up a copy whose body did not end while the request was
// served, and records what became of it; c may be nil.
func (c *mirrorCopy) end(rec *telemetry.Record) {
	if c == nil {
		return
	}
	if c.state.CompareAndSwap(copyPending, copyIncomplete) {
		c.m.stats.release()
		c.m.stats.results[MirrorIncomplete].Add(1)
	}
	switch c.state.Load() {
	case copySent:
		rec.Mirror = mirrorResultNames[MirrorSent]
	case copyTooLarge:
		rec.Mirror = mirrorResultNames[MirrorTooLarge]
	default:
		rec.Mirror = mirrorResultNames[MirrorIncomplete]
	}
}

// mirrorTee copies a streamed body into its copy as the primary reads it.
type mirrorTee struct {
	src io.Reader
	c   *mirrorCopy
}

func (t *mirrorTee) Read(p []byte) (int, error) {
	n, err := t.src.Read(p)
	c := t.c
	if c.state.Load() == copyPending {
		if int64(len(c.buf)+n) > c.m.maxBody {
			if c.state.CompareAndSwap(copyPending, copyTooLarge) {
				c.buf = nil
				c.m.stats.release()
				c.m.stats.results[MirrorTooLarge].Add(1)
			}
		} else {
			c.buf = append(c.buf, p[:n]...)
		}
	}
	if err == io.EOF && c.state.CompareAndSwap(copyPending, copySent) {
		c.launch(c.buf)
	}
	return n, err
}

// launch counts the copy sent and sends it on a goroutine of its own,
// which releases its in-flight place.
func (c *mirrorCopy) launch(body []byte) {
	c.m.stats.results[MirrorSent].Add(1)
	go c.send(body)
}

// send sends the copy to a destination of the mirror's cluster, reads
// its answer and drops it, and counts the outcome.
func (c *mirrorCopy) send(body []byte) {
	m, cl := c.m, c.m.cluster
	defer m.stats.release()
	ctx, cancel := context.WithTimeout(context.Background(), m.timeout)
	defer cancel()
	req := (&http.Request{
		Method: c.method, URL: &c.url, Header: c.header, Host: c.host,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, ContentLength: int64(len(body)),
	}).WithContext(ctx)
	if c.body && len(body) > 0 {
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	policy := cl.Policy
	if policy == nil {
		policy = defaultPolicy
	}
	d := policy.Pick(balance.Input{Request: req, Client: c.client}, cl.Upstream.Members().Available)
	if d == nil {
		m.stats.noDest.Add(1)
		return
	}
	c.url.Scheme, c.url.Host = d.Scheme(), d.Host()
	if req.Host == "" {
		req.Host = withoutDefaultPort(d.Scheme(), d.Host())
	}
	d.Begin()
	defer d.End()
	out, status := upstream.Success, 0
	res, err := mirrorVia(cl, d, req.Host).RoundTrip(req)
	if err == nil {
		status = res.StatusCode
		_, err = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if err != nil {
			out = upstream.BodyError
		}
	} else {
		out = upstream.ClassifyRoundTrip(context.Background(), err) // no client to abort: only the copy's own timeout
	}
	if err != nil && ctx.Err() != nil {
		out = upstream.Timeout
	}
	d.Metrics().Count(out)
	cl.observe(upstream.Observation{Destination: d, Outcome: out, Status: status})
	cl.Stats.add(out)
	m.stats.outcomes[out].Add(1)
}

// mirrorVia returns the round tripper of a copy to d with Host host: the
// cluster transport's pool for the Host's name on an https destination
// checked by name, else the transport itself.
func mirrorVia(cl *Cluster, d *upstream.Destination, host string) http.RoundTripper {
	t, ok := cl.Transport.(*Transport)
	if !ok || d.Scheme() != "https" {
		return cl.Transport
	}
	if name := serverName(host); t.needsServerName(d.Host(), name) {
		if v, ok := t.ForServerName(name); ok {
			return v
		}
		return tooManyNames{}
	}
	return t
}

// tooManyNames refuses a copy past the transport's server-name pools.
type tooManyNames struct{}

func (tooManyNames) RoundTrip(*http.Request) (*http.Response, error) { return nil, errTooManyNames }
