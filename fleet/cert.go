package fleet

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/paduraksa/paduraksa/tlsselect"
)

// Defaults of [CertsConfig].
const (
	// DefaultLockTTL is the lease of a certificate's lock: a holder that
	// stops keeping it alive frees it this long after.
	DefaultLockTTL = 15 * time.Second
	// DefaultTokenTTL is the lease of an HTTP-01 token, longer than an
	// order (tlsselect.DefaultACMEOrderTimeout).
	DefaultTokenTTL = 10 * time.Minute
	// DefaultCertsTimeout bounds each write or removal of a token.
	DefaultCertsTimeout = 5 * time.Second
)

// Problem codes of [NewCerts]; they are stable.
const (
	CodeCertsChallengesMissing = "fleet.certs.challenges.missing" // at "challenges"
	CodeCertsDurationInvalid   = "fleet.certs.duration.invalid"   // at "lockTtl", "tokenTtl", "timeout", "retryPeriod"
)

// CertsConfig configures a [Certs]. Client and Challenges are required.
type CertsConfig struct {
	// Client is the etcd client; Certs does not close it.
	Client *clientv3.Client
	// Prefix starts every key, as [EtcdConfig.Prefix]; "" means
	// [DefaultPrefix].
	Prefix string
	// Challenges is the instance's own challenge store, the one its
	// plain-HTTP listener answers from (a *gate.ChallengeStore): Run
	// publishes there every token any instance of the fleet shares.
	Challenges tlsselect.ChallengeStore
	// LockTTL is the lease of a certificate's lock and TokenTTL that of
	// a token, each at least a second; 0 means [DefaultLockTTL] and
	// [DefaultTokenTTL].
	LockTTL, TokenTTL time.Duration
	// Timeout bounds each write and removal of a token, and the release
	// of a lock; 0 means [DefaultCertsTimeout].
	Timeout time.Duration
	// RetryPeriod is how long a watch waits before it starts again after
	// etcd failed it; 0 means [DefaultRetryPeriod].
	RetryPeriod time.Duration
	// Logger receives the failures of writes and watches; nil discards.
	Logger *slog.Logger
}

// Certs is a fleet's ACME state in etcd: the [tlsselect.ACMEStorage] (an
// [tlsselect.ACMEWatcher]) that instances share so that each certificate
// is ordered once, and, through [Certs.Challenges], the HTTP-01 tokens
// every instance answers. Make it with [NewCerts]; see the package
// documentation. A Certs is safe for concurrent use.
type Certs struct {
	cfg                 CertsConfig
	data, locks, tokens string // key prefixes
	log                 *slog.Logger
	lockTTL, tokenTTL   int64 // seconds
	mu                  sync.Mutex
	leases              map[string]clientv3.LeaseID // of the tokens this instance shares
	published           map[string]bool             // tokens Run published from etcd
	seen                int64                       // the store revision Run's watch has reached
	advanced            chan struct{}               // closed when seen moves on
	running             bool                        // Run's watch is established
}

var (
	_ tlsselect.ACMEStorage = (*Certs)(nil)
	_ tlsselect.ACMEWatcher = (*Certs)(nil)
)

// NewCerts returns the storage of cfg, or every problem of cfg. It reads
// nothing yet.
func NewCerts(cfg CertsConfig) (*Certs, error) {
	var probs problem.List
	checkClient(&probs, cfg.Client)
	if cfg.Challenges == nil {
		probs.Add(CodeCertsChallengesMissing, "challenges", "the instance's challenge store is required: the CA's HTTP-01 request may land on any instance")
	}
	checkPrefix(&probs, &cfg.Prefix)
	for _, d := range []struct {
		d        *time.Duration
		def, min time.Duration
		path     string
	}{
		{&cfg.LockTTL, DefaultLockTTL, time.Second, "lockTtl"},
		{&cfg.TokenTTL, DefaultTokenTTL, time.Second, "tokenTtl"},
		{&cfg.Timeout, DefaultCertsTimeout, 0, "timeout"},
		{&cfg.RetryPeriod, DefaultRetryPeriod, 0, "retryPeriod"},
	} {
		if *d.d == 0 {
			*d.d = d.def
		}
		if *d.d < 0 || *d.d < d.min {
			probs.Add(CodeCertsDurationInvalid, d.path, fmt.Sprintf("must be 0 (the default) or at least %v", max(d.min, time.Nanosecond)))
		}
	}
	if err := probs.Err(); err != nil {
		return nil, err
	}
	log := orDiscard(cfg.Logger)
	acme := cfg.Prefix + "acme/"
	return &Certs{
		cfg: cfg, log: log,
		data: acme + "data/", locks: acme + "locks/", tokens: acme + "challenges/",
		lockTTL: ceilSeconds(cfg.LockTTL), tokenTTL: ceilSeconds(cfg.TokenTTL),
		leases: make(map[string]clientv3.LeaseID), published: make(map[string]bool),
		advanced: make(chan struct{}),
	}, nil
}

// ceilSeconds is d in whole seconds, rounded up: a lease's TTL.
func ceilSeconds(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }

// Load returns the value of PREFIX+"acme/data/"+key, or an error wrapping
// fs.ErrNotExist.
func (c *Certs) Load(ctx context.Context, key string) ([]byte, error) {
	res, err := c.cfg.Client.Get(ctx, c.data+key)
	if err != nil {
		return nil, err
	}
	if len(res.Kvs) == 0 {
		return nil, fmt.Errorf("fleet: %s%s: %w", c.data, key, fs.ErrNotExist)
	}
	return res.Kvs[0].Value, nil
}

// Store puts value at PREFIX+"acme/data/"+key.
func (c *Certs) Store(ctx context.Context, key string, value []byte) error {
	_, err := c.cfg.Client.Put(ctx, c.data+key, string(value))
	return err
}

// List returns the keys one level under prefix.
func (c *Certs) List(ctx context.Context, prefix string) ([]string, error) {
	res, err := c.cfg.Client.Get(ctx, c.data+prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, kv := range res.Kvs {
		k := strings.TrimPrefix(string(kv.Key), c.data)
		if !strings.Contains(k[len(prefix):], "/") {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// Lock takes the lock PREFIX+"acme/locks/"+name, an etcd mutex
// (go.etcd.io/etcd/client/v3/concurrency) on a lease of LockTTL kept
// alive while it is held: a holder whose process ended frees it LockTTL
// later. Waiting ends with ctx; releasing it revokes the lease.
func (c *Certs) Lock(ctx context.Context, name string) (func(), error) {
	lease, err := c.cfg.Client.Grant(ctx, c.lockTTL)
	if err != nil {
		return nil, err
	}
	// The session outlives ctx, which bounds only the wait.
	sctx, cancel := context.WithCancel(context.Background())
	sess, err := concurrency.NewSession(c.cfg.Client, concurrency.WithLease(lease.ID), concurrency.WithContext(sctx))
	if err != nil {
		cancel()
		return nil, err
	}
	mu := concurrency.NewMutex(sess, c.locks+name)
	if err := mu.Lock(ctx); err != nil {
		sess.Close()
		cancel()
		return nil, err
	}
	return sync.OnceFunc(func() {
		uctx, ucancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
		if err := mu.Unlock(uctx); err != nil {
			c.log.Warn("fleet: acme lock not released; its lease frees it", "lock", c.locks+name, "err", err)
		}
		ucancel()
		sess.Close() // revokes the lease
		cancel()
	}), nil
}

// Watch calls fn with the key of every value put under prefix until ctx
// is done, starting again RetryPeriod after etcd failed it (what was put
// meanwhile is not told).
func (c *Certs) Watch(ctx context.Context, prefix string, fn func(key string)) {
	for ctx.Err() == nil {
		wch := c.cfg.Client.Watch(clientv3.WithRequireLeader(ctx), c.data+prefix, clientv3.WithPrefix(), clientv3.WithFilterDelete())
		for res := range wch {
			if err := res.Err(); err != nil {
				c.log.Warn("fleet: watch of acme certificates failed", "prefix", c.data+prefix, "err", err)
				break
			}
			for _, ev := range res.Events {
				fn(strings.TrimPrefix(string(ev.Kv.Key), c.data))
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(c.cfg.RetryPeriod):
		}
	}
}

// Challenges returns the challenge store to give the ACME manager
// (ACMEConfig.Challenges): a token it sets is published in the
// instance's own store and put at PREFIX+"acme/challenges/"+token under
// a lease of TokenTTL, where every instance's Run publishes it; Delete
// withdraws it from both and revokes the lease.
func (c *Certs) Challenges() tlsselect.ChallengeStore { return shared{c} }

// shared is the challenge store of Certs.Challenges.
type shared struct{ c *Certs }

func (s shared) Set(token, keyAuth string) {
	c := s.c
	c.cfg.Challenges.Set(token, keyAuth)
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
	defer cancel()
	lease, err := c.cfg.Client.Grant(ctx, c.tokenTTL)
	if err != nil {
		c.log.Error("fleet: acme token not shared: only this instance answers it", "token", token, "err", err)
		return
	}
	c.mu.Lock()
	c.leases[token] = lease.ID
	c.mu.Unlock()
	res, err := c.cfg.Client.Put(ctx, c.tokens+token, keyAuth, clientv3.WithLease(lease.ID))
	if err != nil {
		c.log.Error("fleet: acme token not shared: only this instance answers it", "token", token, "err", err)
		return
	}
	c.await(ctx, res.Header.Revision)
}

// await waits until Run's watch has reached rev, or ctx is done, when
// Run watches: the CA is told to validate once this instance's watch,
// like every other's, has had the token.
func (c *Certs) await(ctx context.Context, rev int64) {
	for {
		c.mu.Lock()
		done, advanced := !c.running || c.seen >= rev, c.advanced
		c.mu.Unlock()
		if done {
			return
		}
		select {
		case <-advanced:
		case <-ctx.Done():
			return
		}
	}
}

func (s shared) Delete(token string) {
	c := s.c
	c.cfg.Challenges.Delete(token)
	c.mu.Lock()
	lease, ok := c.leases[token]
	delete(c.leases, token)
	c.mu.Unlock()
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
	defer cancel()
	if _, err := c.cfg.Client.Revoke(ctx, lease); err != nil { // deletes the key
		c.log.Warn("fleet: acme token not withdrawn; its lease ends it", "token", token, "err", err)
	}
}

// Run publishes in the instance's challenge store every token shared
// under PREFIX+"acme/challenges/", and withdraws each when its key goes
// (deleted, or its lease ended), until ctx is done. When etcd fails the
// watch it starts again RetryPeriod later, reading every token again.
func (c *Certs) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		if err := c.mirror(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("fleet: watch of acme tokens failed", "prefix", c.tokens, "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(c.cfg.RetryPeriod):
		}
	}
	return nil
}

// mirror reads every shared token, publishes them, withdraws the ones it
// published that are gone, then follows the watch until it fails.
func (c *Certs) mirror(ctx context.Context) error {
	defer c.advance(0, false)
	res, err := c.cfg.Client.Get(ctx, c.tokens, clientv3.WithPrefix())
	if err != nil {
		return err
	}
	now := make(map[string]bool, len(res.Kvs))
	for _, kv := range res.Kvs {
		t := strings.TrimPrefix(string(kv.Key), c.tokens)
		c.cfg.Challenges.Set(t, string(kv.Value))
		now[t] = true
	}
	c.mu.Lock()
	for t := range c.published {
		if !now[t] {
			c.cfg.Challenges.Delete(t)
		}
	}
	c.published = now
	c.mu.Unlock()
	rev := res.Header.Revision
	wch := c.cfg.Client.Watch(clientv3.WithRequireLeader(ctx), c.tokens, clientv3.WithPrefix(), clientv3.WithRev(rev+1), clientv3.WithProgressNotify())
	c.advance(rev, true)
	for res := range wch {
		if err := res.Err(); err != nil {
			return err
		}
		for _, ev := range res.Events {
			t := strings.TrimPrefix(string(ev.Kv.Key), c.tokens)
			c.mu.Lock()
			if ev.Type == clientv3.EventTypePut {
				c.cfg.Challenges.Set(t, string(ev.Kv.Value))
				c.published[t] = true
			} else if c.published[t] {
				c.cfg.Challenges.Delete(t)
				delete(c.published, t)
			}
			c.mu.Unlock()
		}
		c.advance(res.Header.Revision, true)
	}
	return ctx.Err()
}

// advance records the revision Run's watch reached, and whether it
// watches, and wakes the Sets awaiting it.
func (c *Certs) advance(rev int64, running bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rev > c.seen {
		c.seen = rev
	}
	c.running = running
	close(c.advanced)
	c.advanced = make(chan struct{})
}
