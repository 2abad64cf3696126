package gate

import (
	"hash/fnv"
	"math/bits"
	"net/http"
	"net/netip"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/paduraksa/paduraksa/internal/clock"
	"github.com/paduraksa/paduraksa/internal/ipaddr"
	"github.com/paduraksa/paduraksa/internal/problem"
)

// RateLimitScope says who shares a rate limit's buckets.
type RateLimitScope uint8

const (
	// RateLimitShared: one bucket per client for every route (and host)
	// that names the policy (the zero value).
	RateLimitShared RateLimitScope = iota
	// RateLimitPerRoute: one bucket per client and route; in a host's
	// chain, per client and host.
	RateLimitPerRoute
)

// RateLimitConfig configures a rate limit. Clients are counted by address:
// an IPv4 address alone, an IPv6 address by its /64.
type RateLimitConfig struct {
	// ID names the policy; its state is kept across publishes by ID.
	ID string
	// Requests per Period is the sustained rate; both must be positive.
	Requests int
	Period   time.Duration
	// Burst is how many requests a client may make at once; 0 means
	// Requests.
	Burst int
	// Scope says whether routes share buckets.
	Scope RateLimitScope
	// Buckets says where the buckets live: this instance's table (the
	// zero value) or the [State]'s [RateLimitStore], shared by the fleet.
	Buckets RateLimitBuckets
	// ExemptProbes lets the configured probe sources ([Config.ProbeSources])
	// through without counting.
	ExemptProbes bool
	// TableSize is the number of buckets, rounded up to a power of two;
	// 0 means 65536. A full table lets requests through and counts them
	// ([Counters.RateLimitTableFull]).
	TableSize int
}

func (c *RateLimitConfig) equal(o *RateLimitConfig) bool { return *c == *o }

// check returns every problem of c, with paths relative to c.
func (c *RateLimitConfig) check() error {
	var errs problem.List
	if c.Requests <= 0 {
		errs.Add(CodeRateLimitRateInvalid, "requests", "requests must be positive")
	}
	if c.Period <= 0 {
		errs.Add(CodeRateLimitRateInvalid, "period", "period must be positive")
	}
	if c.Burst < 0 {
		errs.Add(CodeRateLimitBurstInvalid, "burst", "negative (0 means requests)")
	}
	if !rateLimitScopeNames.Known(c.Scope) {
		errs.Add(CodeRateLimitScopeUnknown, "scope", "unknown scope "+c.Scope.String()+" (want "+rateLimitScopeNames.List()+")")
	}
	if !rateLimitBucketsNames.Known(c.Buckets) {
		errs.Add(CodeRateLimitBucketsUnknown, "buckets", "unknown buckets "+c.Buckets.String()+" (want "+rateLimitBucketsNames.List()+")")
	}
	if c.TableSize < 0 {
		errs.Add(CodeRateLimitTableSizeInvalid, "tableSize", "negative (0 means 65536)")
	}
	return errs.Err()
}

// RateLimit is a token-bucket rate limit per client address, kept in a
// fixed-size lock-free table. Build it with [State.RateLimit] so its
// buckets survive publishes, or [NewRateLimit] for a private one.
//
// Each bucket is one word: the GCRA "theoretical arrival time", the
// instant at which the client's bucket is full again. A request is allowed
// when that instant, plus one emission interval, is no further than Burst
// intervals ahead of now; taking a token is one compare-and-swap. A bucket
// whose instant has passed is full, which is the same as unused, so its
// slot can be taken by another client without losing anything: the table
// never needs sweeping.
//
// [New] refuses a zero RateLimit, which has no table.
type RateLimit struct {
	cfg      RateLimitConfig
	interval uint64 // ns per token
	horizon  uint64 // burst * interval
	burst    int
	clock    clock.Clock
	epoch    time.Time
	// sinceGate is the gate's epoch minus this table's, for nowFor.
	sinceGate time.Duration
	slots     []bucket
	mask      uint64
	seed      ipaddr.Seed
	page      *Page
	counters  *Counters
	// state holds the store of a RateLimitCluster limit.
	state *State
}

type bucket struct {
	key atomic.Uint64
	tat atomic.Uint64 // ns since epoch, plus one; 0: never used
}

// bucketWindow is how many slots a key may live in (two cache lines).
const bucketWindow = 8

var _ Policy = (*RateLimit)(nil)

// NewRateLimit builds a rate limit with its own buckets and counters. It
// refuses [RateLimitCluster] buckets, which need a [State]'s store: build
// those with [State.RateLimit].
func NewRateLimit(cfg RateLimitConfig) (*RateLimit, error) {
	return newRateLimit(cfg, new(Counters), clock.Clock{}, nil)
}

func (l *RateLimit) checkBuilt(errs *problem.List, at string) {
	if l == nil || l.slots == nil {
		notBuilt(errs, at, "RateLimit", "NewRateLimit or State.RateLimit")
	}
}

func newRateLimit(cfg RateLimitConfig, counters *Counters, clk clock.Clock, st *State) (*RateLimit, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if err := st.checkStore(&cfg); err != nil {
		return nil, err
	}
	burst := cfg.Burst
	if burst == 0 {
		burst = cfg.Requests
	}
	size := cfg.TableSize
	if size == 0 {
		size = 1 << 16
	}
	if size < bucketWindow {
		size = bucketWindow
	}
	size = 1 << bits.Len(uint(size-1))
	interval := uint64(cfg.Period) / uint64(cfg.Requests)
	if interval == 0 {
		interval = 1
	}
	retry := (interval + uint64(time.Second) - 1) / uint64(time.Second)
	now := clk.Now()
	return &RateLimit{
		cfg:       cfg,
		sinceGate: epoch.Sub(now),
		interval:  interval,
		horizon:   interval * uint64(burst),
		burst:     burst,
		clock:     clk,
		epoch:     now,
		slots:     make([]bucket, size),
		mask:      uint64(size - 1),
		seed:      ipaddr.NewSeed(),
		page:      statusPage(http.StatusTooManyRequests, http.Header{"Retry-After": {strconv.FormatUint(retry, 10)}}),
		counters:  counters,
		state:     st,
	}, nil
}

// ID returns the configured ID.
func (l *RateLimit) ID() string { return l.cfg.ID }

// Config returns the policy's config.
func (l *RateLimit) Config() RateLimitConfig { return l.cfg }

// Evaluate takes a token from the client's bucket (with rq.DryRun, only
// looks) and answers 429 with Retry-After when there is none. A
// [RateLimitCluster] limit asks the store, and the local bucket when the
// store does not answer in time; a dry run (a simulation) only looks at
// the local bucket, since a store has no look that takes nothing.
func (l *RateLimit) Evaluate(r *http.Request, rq *Request) Decision {
	if l.cfg.ExemptProbes && rq.Probe {
		return Decision{Reason: "probe source"}
	}
	if l.cfg.Buckets == RateLimitCluster && !rq.DryRun {
		if d, done := l.evaluateCluster(rq); done {
			return d
		}
	}
	key := ipaddr.Unknown
	if rq.Client.IsValid() {
		key = rq.clientNum().Key()
	}
	ok, left, res := l.take(key, l.scope(rq.Host, rq.Route), l.nowFor(rq), rq.DryRun)
	switch {
	case res == takeFull:
		if !rq.DryRun {
			l.counters.RateLimitTableFull.Add(1)
		}
		return Decision{Reason: "table full: fail-open"}
	case !ok:
		return Decision{Verdict: Respond, Page: l.page, Reason: "rate limited"}
	case rq.DryRun:
		return Decision{Reason: "would allow, " + strconv.Itoa(left) + " tokens left"}
	}
	return Decision{Reason: "allowed"}
}

// scope is the bucket key of a request on route rt of host h: 0 (one
// bucket per client) unless the limit counts per route, then the route's,
// or the host's for a request outside its routes (a host chain).
func (l *RateLimit) scope(h *Host, rt *Route) uint64 {
	switch {
	case l.cfg.Scope != RateLimitPerRoute:
		return 0
	case rt != nil:
		return rt.scopeKey
	case h != nil:
		return h.scopeKey
	}
	return 0
}

// Tokens reports how many requests the client could make now on route rt
// of host h (both from [Gate.Host]; nil for a limit shared across routes),
// without taking any.
func (l *RateLimit) Tokens(client netip.Addr, h *Host, rt *Route) int {
	ok, left, _ := l.take(ipaddr.KeyOf(client), l.scope(h, rt), l.now(), true)
	if !ok {
		return 0
	}
	return left + 1
}

// now returns the time since the table's epoch, in ns, plus one so that a
// stored 0 means "never used". A clock that went back before the epoch
// reads as the epoch.
func (l *RateLimit) now() uint64 { return uint64(max(l.clock.Since(l.epoch), 0)) + 1 }

// nowFor is now for a request the gate is serving: on the real clock, the
// time the gate started deciding it, which costs no clock read (a few
// microseconds early at most, like any reading taken before the policy
// ran).
func (l *RateLimit) nowFor(rq *Request) uint64 {
	if rq.start == 0 || !l.clock.Real() {
		return l.now()
	}
	return uint64(max(rq.start+l.sinceGate, 0)) + 1
}

type takeResult uint8

const (
	takeDone takeResult = iota
	takeFull
)

// take counts one request of the client of key at now. It reports whether
// the request is allowed and, with dry, how many tokens are left after it
// (0 without: see consume). With dry, it changes nothing.
func (l *RateLimit) take(key ipaddr.Key, scope, now uint64, dry bool) (bool, int, takeResult) {
	tag, start := l.locate(key, scope)
	for attempt := 0; attempt < 2; attempt++ {
		free := -1
		for i := 0; i < bucketWindow; i++ {
			b := &l.slots[(start+uint64(i))&l.mask]
			k := b.key.Load()
			if k == tag {
				ok, left := l.consume(b, now, dry)
				return ok, left, takeDone
			}
			if free < 0 && (k == 0 || b.tat.Load() <= now) {
				free = i
			}
		}
		if dry {
			// An unknown client has a full bucket.
			return true, l.burst - 1, takeDone
		}
		if free < 0 {
			return true, 0, takeFull
		}
		b := &l.slots[(start+uint64(free))&l.mask]
		k := b.key.Load()
		if (k == 0 || b.tat.Load() <= now) && b.key.CompareAndSwap(k, tag) {
			// A reclaimed bucket was full; its stale instant is in the
			// past and counts as full, so it needs no reset.
			ok, left := l.consume(b, now, false)
			return ok, left, takeDone
		}
	}
	return true, 0, takeFull
}

// consume takes a token from b if there is one. Only a dry run (a look,
// which takes nothing) counts the tokens left: a taking call returns 0
// for them, and spares the request a 64-bit division.
func (l *RateLimit) consume(b *bucket, now uint64, dry bool) (bool, int) {
	for {
		tat := b.tat.Load()
		base := max(tat, now)
		next := base + l.interval
		if next > now+l.horizon {
			return false, 0
		}
		if dry {
			return true, int((now + l.horizon - next) / l.interval)
		}
		if b.tat.CompareAndSwap(tat, next) {
			return true, 0
		}
	}
}

// locate returns the key tag (never 0) and first slot of a client's key
// (ipaddr.KeyOf). The key is its whole IPv4 address or its IPv6 /64, and an unknown
// client (a PROXY header with a UNIX or UNSPEC source, a peer that is no
// IP address) has ipaddr.Unknown, a key of its own that no address has:
// unknown clients share one bucket, they are never exempt.
func (l *RateLimit) locate(key ipaddr.Key, scope uint64) (tag, start uint64) {
	h := l.seed.Hash(key, scope)
	tag = h
	if tag == 0 {
		tag = 1
	}
	return tag, h & l.mask
}

// scopeKeyOf returns a stable key for a host or route identity, so a
// per-route bucket keeps its place across publishes.
func scopeKeyOf(parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	if k := h.Sum64(); k != 0 {
		return k
	}
	return 1
}
