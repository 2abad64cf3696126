package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/redis/go-redis/v9/logging"

	"github.com/paduraksa/paduraksa/fleet/redislimit"
	"github.com/paduraksa/paduraksa/gate"
)

// pingTimeout bounds the start's check that Redis answers, the first
// answer of its probe.
const pingTimeout = 2 * time.Second

// defaultRedisPool is -redis-pool's default. go-redis's own (10 a CPU)
// is sized for an application's queries, not for a gateway in which
// every request in flight holds a connection for its decision: the
// suite's h1-limit scenario (64 connections, GOMAXPROCS=1) saw 82 % of
// its decisions fall back past the deadline with 10 connections, 9 %
// with 128.
const defaultRedisPool = 128

// startRateLimitStore attaches -redis, when given, as the store of the
// document's cluster rate limits. A Redis that does not answer at start
// is not an error: the limits decide locally until it does, as when it
// goes away later.
func (a *app) startRateLimitStore(ctx context.Context) error {
	if a.f.redis == "" {
		return nil
	}
	if a.f.redisTimeout <= 0 {
		return errors.New("-redis-timeout must be positive")
	}
	store, err := redislimit.New(redislimit.Config{URL: a.f.redis, Timeout: a.f.redisTimeout, PoolSize: a.f.redisPool})
	if err != nil {
		return fmt.Errorf("-redis: %w", err)
	}
	a.deferClose(func() { store.Close() })
	// The gate logs the store failing and answering again, once each;
	// the client's own line per failed dial would repeat it.
	logging.Disable()
	a.compiler.GateState = new(gate.State)
	a.compiler.GateState.SetRateLimitStore(gate.RateLimitStoreConfig{Store: store, Timeout: a.f.redisTimeout,
		Prefix: a.f.redisPrefix, Logger: a.log})
	shown := a.f.redis
	if u, err := url.Parse(a.f.redis); err == nil {
		shown = u.Redacted()
	}
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	err = store.Ping(pctx)
	cancel()
	a.fleet.redis = a.startProbe(ctx, "redis", store.Ping, err)
	if err != nil {
		a.log.Warn("redis not answering: cluster rate limits decide locally until it does", "redis", shown, "error", err.Error())
		return nil
	}
	a.log.Info("redis: cluster rate limits shared", "redis", shown, "timeout", a.f.redisTimeout.String())
	return nil
}
