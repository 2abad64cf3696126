package redislimit

import (
	"context"
	_ "embed"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/internal/problem"
)

// Problem codes of [New], with the [Config] field as the path.
const (
	CodeURLInvalid      = "redislimit.url.invalid"
	CodeTimeoutInvalid  = "redislimit.timeout.invalid"
	CodePoolSizeInvalid = "redislimit.poolSize.invalid"
)

// Config configures a [Store].
type Config struct {
	// URL names the Redis server: redis://[user:password@]host:port[/db],
	// rediss:// for TLS, as go-redis's ParseURL reads it. Required.
	URL string
	// Timeout is each call's deadline (the caller's earlier one wins); 0
	// means gate.DefaultRateLimitStoreTimeout.
	Timeout time.Duration
	// PoolSize is the number of pooled connections; 0 means go-redis's
	// default, 10 per CPU.
	PoolSize int
}

// Store is a gate.RateLimitStore in Redis. It is safe for concurrent use.
type Store struct {
	client  *redis.Client
	timeout time.Duration
}

var _ gate.RateLimitStore = (*Store)(nil)

//go:embed gcra.lua
var gcraSource string

var gcra = redis.NewScript(gcraSource)

// New returns a store for cfg. It does not connect: the first decision
// does, and a Redis that is not there yet is a failed decision, not an
// error here.
func New(cfg Config) (*Store, error) {
	var errs problem.List
	opt, err := redis.ParseURL(cfg.URL)
	if err != nil {
		errs.Add(CodeURLInvalid, "url", err.Error())
	}
	if cfg.Timeout < 0 {
		errs.Add(CodeTimeoutInvalid, "timeout", "negative (0 means "+gate.DefaultRateLimitStoreTimeout.String()+")")
	}
	if cfg.PoolSize < 0 {
		errs.Add(CodePoolSizeInvalid, "poolSize", "negative (0 means 10 per CPU)")
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = gate.DefaultRateLimitStoreTimeout
	}
	opt.PoolSize = cfg.PoolSize
	opt.ContextTimeoutEnabled = true
	opt.MaxRetries = -1
	opt.DialerRetries = 1
	opt.ReadTimeout, opt.WriteTimeout = timeout, timeout
	opt.DialTimeout = max(timeout, time.Second)
	opt.PoolTimeout = timeout
	return &Store{client: redis.NewClient(opt), timeout: timeout}, nil
}

// Allow takes a token from key's bucket: burst tokens, one more per
// interval. It implements gate.RateLimitStore.
func (s *Store) Allow(ctx context.Context, key string, interval time.Duration, burst int) (bool, error) {
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > s.timeout {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.timeout)
		defer cancel()
	}
	if burst <= 0 {
		return false, errors.New("redislimit: burst must be positive, not " + strconv.Itoa(burst))
	}
	us := max(interval.Microseconds(), 1)
	n, err := gcra.Run(ctx, s.client, []string{key}, us, burst).Int64()
	if err != nil {
		return false, err
	}
	return n == 1, nil
}

// Ping asks Redis for PONG within ctx's deadline (not the decisions'
// [Config.Timeout]: the first connection's handshake takes more), which
// also leaves a pooled connection ready for the first decision.
func (s *Store) Ping(ctx context.Context) error { return s.client.Ping(ctx).Err() }

// Close closes the pooled connections.
func (s *Store) Close() error { return s.client.Close() }
