package gate

import (
	"context"
	"log/slog"
	"net/netip"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/paduraksa/paduraksa/internal/problem"
)

// RateLimitBuckets says where a rate limit's buckets live. It is a
// separate setting from [RateLimitScope], which says what a bucket counts
// (a client, or a client on one route): the two combine.
type RateLimitBuckets uint8

const (
	// RateLimitLocal: the buckets are this instance's own table (the zero
	// value). N instances let N times the rate through.
	RateLimitLocal RateLimitBuckets = iota
	// RateLimitCluster: each decision is asked of the [State]'s
	// [RateLimitStore], shared by every instance using it, so the rate
	// holds for the whole fleet. When the store fails or misses its
	// deadline the local table decides instead (fail-open with a local
	// limit), counted in [Counters.RateLimitStoreFallback].
	RateLimitCluster
)

// RateLimitStore keeps rate-limit buckets that several gateways share:
// the decisions of [RateLimitCluster] limits. Implementations must be
// safe for concurrent use and must return by ctx's deadline.
type RateLimitStore interface {
	// Allow takes one token from key's bucket, which holds burst tokens
	// and gains one per interval (a bucket never seen is full), and
	// reports whether there was one. An error means the store did not
	// decide; the gate then asks the local bucket.
	Allow(ctx context.Context, key string, interval time.Duration, burst int) (bool, error)
}

// DefaultRateLimitStoreTimeout is a store decision's deadline when
// [RateLimitStoreConfig.Timeout] is 0.
const DefaultRateLimitStoreTimeout = 5 * time.Millisecond

// rateLimitStoreRetry is how long a failing store is left alone before
// a decision asks it again: meanwhile the local buckets decide without
// waiting for it.
const rateLimitStoreRetry = 100 * time.Millisecond

// RateLimitStoreConfig attaches a [RateLimitStore] to a [State].
type RateLimitStoreConfig struct {
	// Store decides for [RateLimitCluster] limits; nil detaches the store
	// (cluster limits built before decide locally, new ones are refused).
	Store RateLimitStore
	// Timeout bounds each decision: past it, the local bucket decides. 0
	// means [DefaultRateLimitStoreTimeout].
	Timeout time.Duration
	// Prefix is put before every key given to the store, so gateways
	// with different documents can share one store; empty means none.
	Prefix string
	// Logger receives one line each time the store starts failing and
	// one when it answers again; nil means slog.Default().
	Logger *slog.Logger
}

// storeLink is a State's attached store and whether it is failing.
type storeLink struct {
	cfg     RateLimitStoreConfig
	timeout time.Duration
	logger  *slog.Logger
	// failing is set from the first failure until the next answer.
	failing atomic.Bool
	// retryAt is when, while failing, a decision may ask again (ns on
	// the monotonic clock of storeEpoch).
	retryAt atomic.Int64
}

var storeEpoch = time.Now()

// SetRateLimitStore attaches the store that decides for the state's
// [RateLimitCluster] limits, those built before included. It must be set
// before a config with a cluster limit is built: [State.RateLimit]
// refuses one without a store.
func (s *State) SetRateLimitStore(cfg RateLimitStoreConfig) {
	if cfg.Store == nil {
		s.store.Store(nil)
		return
	}
	link := &storeLink{cfg: cfg, timeout: cfg.Timeout, logger: cfg.Logger}
	if link.timeout <= 0 {
		link.timeout = DefaultRateLimitStoreTimeout
	}
	if link.logger == nil {
		link.logger = slog.Default()
	}
	s.store.Store(link)
}

// RateLimitStoreFailing reports whether the attached store's last
// decision failed (the local buckets decide until it answers again).
func (s *State) RateLimitStoreFailing() bool {
	l := s.store.Load()
	return l != nil && l.failing.Load()
}

// checkStore refuses a cluster limit on a state without a store.
func (s *State) checkStore(cfg *RateLimitConfig) error {
	if cfg.Buckets != RateLimitCluster || (s != nil && s.store.Load() != nil) {
		return nil
	}
	var errs problem.List
	errs.Add(CodeRateLimitStoreMissing, "buckets", "cluster buckets need a rate-limit store (State.SetRateLimitStore; the daemon's -redis)")
	return errs.Err()
}

// Reasons of cluster decisions, constants so that they cost nothing.
const (
	reasonClusterAllowed  = "allowed by the cluster store"
	reasonClusterLimited  = "rate limited by the cluster store"
	reasonClusterFallback = "cluster store failing: local bucket"
)

// evaluateCluster asks the store for a [RateLimitCluster] limit. It
// reports done false when the store did not decide (none attached, a
// failure, a missed deadline): the caller then takes the local bucket.
func (l *RateLimit) evaluateCluster(rq *Request) (d Decision, done bool) {
	link := l.state.store.Load()
	if link == nil {
		l.counters.RateLimitStoreFallback.Add(1)
		return Decision{}, false
	}
	if link.failing.Load() && time.Since(storeEpoch).Nanoseconds() < link.retryAt.Load() {
		l.counters.RateLimitStoreFallback.Add(1)
		return Decision{}, false
	}
	key := l.clusterKey(link.cfg.Prefix, rq.Client, l.scope(rq.Host, rq.Route))
	ctx, cancel := context.WithTimeout(context.Background(), link.timeout)
	ok, err := link.cfg.Store.Allow(ctx, key, time.Duration(l.interval), l.burst)
	cancel()
	if err != nil {
		l.counters.RateLimitStoreFallback.Add(1)
		link.retryAt.Store(time.Since(storeEpoch).Nanoseconds() + int64(rateLimitStoreRetry))
		if link.failing.CompareAndSwap(false, true) {
			link.logger.LogAttrs(context.Background(), slog.LevelWarn, "gate: rate-limit store failing: local buckets decide",
				slog.String("policy", l.cfg.ID), slog.String("error", err.Error()))
		}
		return Decision{}, false
	}
	if link.failing.CompareAndSwap(true, false) {
		link.logger.LogAttrs(context.Background(), slog.LevelInfo, "gate: rate-limit store answering again: cluster buckets decide",
			slog.String("policy", l.cfg.ID))
	}
	if !ok {
		return Decision{Verdict: Respond, Page: l.page, Reason: reasonClusterLimited}, true
	}
	return Decision{Reason: reasonClusterAllowed}, true
}

// clusterKey is the store's key of a client's bucket: the prefix, the
// policy ID, the client's counting key (an IPv4 address, an IPv6 /64,
// "unknown") and, for a per-route limit, the route's stable key. Every
// instance computes the same key for the same client.
func (l *RateLimit) clusterKey(prefix string, client netip.Addr, scope uint64) string {
	b := make([]byte, 0, len(prefix)+len(l.cfg.ID)+64)
	b = append(b, prefix...)
	b = append(b, l.cfg.ID...)
	b = append(b, '|')
	switch {
	case !client.IsValid():
		b = append(b, "unknown"...)
	case client.Unmap().Is4():
		b = client.Unmap().AppendTo(b)
	default:
		p, _ := client.WithZone("").Prefix(64)
		b = p.AppendTo(b)
	}
	if scope != 0 {
		b = append(b, '|')
		b = strconv.AppendUint(b, scope, 16)
	}
	return string(b)
}
