package fleet

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/paduraksa/paduraksa/secrets"
	"github.com/paduraksa/paduraksa/tlsselect"
)

// Defaults of [SecretsConfig].
const (
	// DefaultRotationPeriod is how long a ticket master secret seals
	// before the elected instance replaces it: the default ticket key
	// period (tlsselect.DefaultTicketKeyPeriod), so that under the
	// defaults a ticket resumes for at least a day.
	DefaultRotationPeriod = 24 * time.Hour
	// MinRotationPeriod is the shortest RotationPeriod taken.
	MinRotationPeriod = time.Second
	// DefaultElectionTTL is the TTL of the lease an instance campaigns
	// with: how long the election stays taken after its leader died.
	DefaultElectionTTL = 10 * time.Second
	// DefaultSecretsTimeout bounds each read and write of the secrets.
	DefaultSecretsTimeout = 5 * time.Second
)

// Problem codes of [NewSecrets] and [Secrets.Load], beside
// CodeClientMissing, CodePrefixInvalid and CodePeriodInvalid (at
// "retryPeriod", "timeout"); they are stable.
const (
	CodeRotationInvalid = "fleet.secrets.rotationPeriod.invalid" // at "rotationPeriod"
	CodeLeaseInvalid    = "fleet.secrets.leaseTTL.invalid"       // at "leaseTTL"
	CodeSeedInvalid     = "fleet.secrets.seed.invalid"           // at "seed"
)

// ErrSecretsRunning is [Secrets.Run]'s answer while another Run of the
// same Secrets runs.
var ErrSecretsRunning = errors.New("fleet: the Secrets' Run is already running")

// ErrNoSecrets is [Secrets.Rotate]'s answer when the key holds no
// secrets.
var ErrNoSecrets = errors.New("fleet: etcd holds no secrets at the key")

// errNotLeader ends a lead whose election was lost meanwhile.
var errNotLeader = errors.New("fleet: no longer elected to rotate the ticket secret")

// SecretsConfig configures [Secrets]. Only Client is required.
type SecretsConfig struct {
	// Client is the etcd client; the Secrets do not close it.
	Client *clientv3.Client
	// Prefix starts every key of the fleet: the secrets are at
	// Prefix+"secrets", the election at Prefix+"secrets-rotation/". ""
	// means [DefaultPrefix].
	Prefix string
	// Instance names this instance in the election: its value while it
	// leads, which etcdctl shows at the election's key.
	Instance string
	// RotationPeriod is how long a ticket master secret seals before the
	// elected instance writes a new one, keeping the one it replaces to
	// open older tickets; counted from the secrets' rotated time, so a
	// new leader keeps the schedule. 0 means [DefaultRotationPeriod];
	// at least [MinRotationPeriod]. Below the document's
	// global.tls.ticketKeyPeriod it shortens how long a ticket resumes to
	// between one and two rotation periods.
	RotationPeriod time.Duration
	// LeaseTTL is the TTL of the lease the instance campaigns with, in
	// whole seconds: a leader that dies frees the election when it
	// expires; one that stops revokes it at once. 0 means
	// [DefaultElectionTTL].
	LeaseTTL time.Duration
	// RetryPeriod is how long Run waits between attempts while etcd is
	// unreachable; 0 means [DefaultRetryPeriod].
	RetryPeriod time.Duration
	// Timeout bounds each read and write of Load, Run and Rotate; 0
	// means [DefaultSecretsTimeout].
	Timeout time.Duration
	// Seed are the keys Load creates the secrets with when etcd holds
	// none (the keys of a secrets file, so that a gateway that grows into
	// a fleet keeps its sticky clients and tickets); the zero Keys mean
	// fresh ones (secrets.New). When etcd holds secrets, the seed is not
	// used.
	Seed secrets.Keys
	// Logger receives what the Secrets do: created or read, each ticket
	// secret installed and rotated, the election won and lost, etcd's
	// reachability. Never a secret. An embedder running several
	// instances adds the instance's name to it (slog.Logger.With). nil
	// discards.
	Logger *slog.Logger
}

// Secrets are a fleet's shared secrets: the affinity key and the ticket
// master secret at Prefix+"secrets" in etcd, in the secrets file's format.
// Make them with [NewSecrets]; see the package documentation.
type Secrets struct {
	cfg     SecretsConfig
	key     string
	log     *slog.Logger
	tickets *tlsselect.TicketSecrets
	running atomic.Bool
	leading atomic.Bool

	mu          sync.Mutex
	keys        secrets.Keys // as installed: the affinity key of Load, the ticket secrets of the last revision
	rev         int64        // the mod revision installed
	unreachable bool         // logged once per change
}

// NewSecrets returns the secrets of cfg, or every problem of cfg. It
// reads nothing yet.
func NewSecrets(cfg SecretsConfig) (*Secrets, error) {
	var probs problem.List
	checkClient(&probs, cfg.Client)
	checkPrefix(&probs, &cfg.Prefix)
	switch {
	case cfg.RotationPeriod == 0:
		cfg.RotationPeriod = DefaultRotationPeriod
	case cfg.RotationPeriod < MinRotationPeriod:
		probs.Add(CodeRotationInvalid, "rotationPeriod", "must be 0 (the default, "+DefaultRotationPeriod.String()+") or at least "+MinRotationPeriod.String())
	}
	switch {
	case cfg.LeaseTTL == 0:
		cfg.LeaseTTL = DefaultElectionTTL
	case cfg.LeaseTTL < time.Second || cfg.LeaseTTL%time.Second != 0:
		probs.Add(CodeLeaseInvalid, "leaseTTL", "must be 0 (the default, "+DefaultElectionTTL.String()+") or whole seconds, at least 1s")
	}
	checkPeriods(&probs, []period{{&cfg.RetryPeriod, DefaultRetryPeriod, "retryPeriod"},
		{&cfg.Timeout, DefaultSecretsTimeout, "timeout"}})
	if cfg.Seed.Affinity != nil || cfg.Seed.Ticket != nil {
		if _, err := secrets.Parse(cfg.Seed.Marshal()); err != nil {
			probs.Add(CodeSeedInvalid, "seed", "not keys of the secrets format: "+err.Error())
		}
	}
	if err := probs.Err(); err != nil {
		return nil, err
	}
	log := orDiscard(cfg.Logger)
	key := cfg.Prefix + "secrets"
	return &Secrets{cfg: cfg, key: key, log: log.With("etcdKey", key), tickets: new(tlsselect.TicketSecrets)}, nil
}

// Key returns the key of the secrets.
func (s *Secrets) Key() string { return s.key }

// Keys returns the keys installed: the affinity key Load read, and the
// ticket secrets of the last revision seen. The zero Keys before Load.
func (s *Secrets) Keys() secrets.Keys {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys
}

// Tickets returns the ticket master secrets, for
// snapshot.Compiler.TicketSecrets: filled by Load, replaced by Run at
// each rotation. They hold no secret before Load returned.
func (s *Secrets) Tickets() *tlsselect.TicketSecrets { return s.tickets }

// Leading reports whether this instance is the one elected to rotate the
// ticket secret now.
func (s *Secrets) Leading() bool { return s.leading.Load() }

// Load reads the secrets, or creates them when etcd holds none, in one
// transaction that puts them only if the key was never created
// (CreateRevision 0) and reads it otherwise: of instances starting at
// once, one creates and every other reads what it created, and none
// overwrites secrets already there. It creates them from Seed, or fresh
// ones, with rotated set to now. It installs what it returns (Tickets).
// Secrets in etcd that are not of the format are refused with the
// secrets package's problems, each an error of the library's problem
// type, joined; nothing is installed then.
func (s *Secrets) Load(ctx context.Context) (secrets.Keys, error) {
	seed := s.cfg.Seed
	if seed.Ticket == nil {
		seed = secrets.New()
	}
	if seed.Rotated.IsZero() {
		seed.Rotated = time.Now().UTC().Truncate(time.Second)
	}
	tctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	resp, err := s.cfg.Client.Txn(tctx).
		If(clientv3.Compare(clientv3.CreateRevision(s.key), "=", 0)).
		Then(clientv3.OpPut(s.key, string(seed.Marshal()))).
		Else(clientv3.OpGet(s.key)).Commit()
	if err != nil {
		return secrets.Keys{}, err
	}
	if resp.Succeeded {
		from := "fresh keys"
		if s.cfg.Seed.Ticket != nil {
			from = "the seed"
		}
		s.install(seed, resp.Header.Revision)
		s.log.Info("secrets created in etcd", "from", from, "revision", resp.Header.Revision, "rotated", seed.Rotated)
		return s.Keys(), nil
	}
	kv := resp.Responses[0].GetResponseRange().Kvs[0]
	k, err := secrets.Parse(kv.Value)
	if err != nil {
		return secrets.Keys{}, err
	}
	s.install(k, kv.ModRevision)
	attrs := []any{"revision", kv.ModRevision, "rotated", k.Rotated}
	if s.cfg.Seed.Ticket != nil && !bytes.Equal(s.cfg.Seed.Affinity, k.Affinity) {
		s.log.Warn("secrets read from etcd, not the seed: the affinity keys differ, so sticky clients of the seed's move", attrs...)
	} else {
		s.log.Info("secrets read from etcd", attrs...)
	}
	return s.Keys(), nil
}

// install takes the keys of one revision of the key: its ticket secrets
// replace the installed ones; the affinity key is taken only the first
// time, since the compiler holds it from the start.
func (s *Secrets) install(k secrets.Keys, rev int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rev <= s.rev {
		return
	}
	s.rev = rev
	if s.keys.Affinity == nil {
		s.keys.Affinity = k.Affinity
	} else if !bytes.Equal(s.keys.Affinity, k.Affinity) {
		s.log.Warn("the affinity key in etcd changed; this instance keeps its own until it restarts", "revision", rev)
	}
	if bytes.Equal(s.keys.Ticket, k.Ticket) && bytes.Equal(s.keys.PreviousTicket, k.PreviousTicket) {
		return
	}
	// Parse checked the lengths, which are all Set refuses.
	s.tickets.Set(k.Ticket, k.PreviousTicket)
	first := s.keys.Ticket == nil
	s.keys.Ticket, s.keys.PreviousTicket, s.keys.Rotated = k.Ticket, k.PreviousTicket, k.Rotated
	if !first {
		s.log.Info("ticket secret installed; the previous one still opens tickets", "revision", rev, "rotated", k.Rotated)
	}
}

// Rotate writes a new ticket master secret now, keeping the current one
// as the previous (secrets.Keys.Rotate), in a transaction on the key's
// mod revision, and returns the keys written. The elected instance does
// this every RotationPeriod; Rotate is for an operator who wants it now
// (a secret that leaked), from any instance. Every instance installs the
// new secret from its watch. A key that changed between the read and the
// write gets [ErrStaleSecrets], a missing key [ErrNoSecrets].
func (s *Secrets) Rotate(ctx context.Context) (secrets.Keys, error) {
	k, rev, err := s.read(ctx)
	if err != nil {
		return secrets.Keys{}, err
	}
	return s.rotate(ctx, k, rev, nil)
}

// ErrStaleSecrets is [Secrets.Rotate]'s answer when the secrets changed
// between its read and its write.
var ErrStaleSecrets = errors.New("fleet: the secrets in etcd changed meanwhile")

// read gets the key; ErrNoSecrets when it is missing.
func (s *Secrets) read(ctx context.Context) (secrets.Keys, int64, error) {
	gctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	resp, err := s.cfg.Client.Get(gctx, s.key)
	if err != nil {
		return secrets.Keys{}, 0, err
	}
	if len(resp.Kvs) == 0 {
		return secrets.Keys{}, 0, ErrNoSecrets
	}
	k, err := secrets.Parse(resp.Kvs[0].Value)
	if err != nil {
		return secrets.Keys{}, 0, err
	}
	return k, resp.Kvs[0].ModRevision, nil
}

// rotate writes k rotated if the key's mod revision is still rev and,
// when el is set, el is still the leader (errNotLeader otherwise).
func (s *Secrets) rotate(ctx context.Context, k secrets.Keys, rev int64, el *concurrency.Election) (secrets.Keys, error) {
	r := k.Rotate(time.Now())
	tctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	put := clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(s.key), "=", rev)},
		[]clientv3.Op{clientv3.OpPut(s.key, string(r.Marshal()))}, nil)
	txn := s.cfg.Client.Txn(tctx)
	if el != nil {
		txn = txn.If(clientv3.Compare(clientv3.CreateRevision(el.Key()), "=", el.Rev()))
	}
	resp, err := txn.Then(put).Commit()
	switch {
	case err != nil:
		return secrets.Keys{}, err
	case !resp.Succeeded:
		return secrets.Keys{}, errNotLeader
	case !resp.Responses[0].GetResponseTxn().Succeeded:
		return secrets.Keys{}, ErrStaleSecrets
	}
	s.log.Info("ticket secret rotated in etcd", "revision", resp.Header.Revision, "rotated", r.Rotated)
	return r, nil
}

// Run keeps the installed ticket secrets those of the key, from a watch,
// and campaigns in the election: while this instance leads, it rotates
// the ticket secret every RotationPeriod. It runs until ctx is done and
// returns ctx's error, or [ErrSecretsRunning] while another Run of s
// runs. Leaving, it resigns: the election is free at once. While etcd is
// unreachable the installed secrets keep serving; Run tries again every
// RetryPeriod, reading the key again before it watches.
func (s *Secrets) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return ErrSecretsRunning
	}
	defer s.running.Store(false)
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			err := s.lead(ctx)
			if ctx.Err() != nil {
				return
			}
			if !errors.Is(err, errNotLeader) {
				s.trouble(err)
			}
			s.wait(ctx, s.cfg.RetryPeriod)
		}
	})
	for ctx.Err() == nil {
		err := s.watch(ctx)
		if ctx.Err() != nil {
			break
		}
		if !errors.Is(err, errResync) {
			s.trouble(err)
		}
		s.wait(ctx, s.cfg.RetryPeriod)
	}
	wg.Wait()
	return ctx.Err()
}

// wait waits d or until ctx is done.
func (s *Secrets) wait(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// watch reads the key, installs it, and watches it from there, until ctx
// is done or the watch fails.
func (s *Secrets) watch(ctx context.Context) error {
	gctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	resp, err := s.cfg.Client.Get(gctx, s.key)
	cancel()
	if err != nil {
		return err
	}
	s.fine()
	if len(resp.Kvs) == 0 {
		s.log.Error("secrets missing in etcd; the installed secrets keep serving")
	} else {
		s.take(resp.Kvs[0].Value, resp.Kvs[0].ModRevision)
	}
	wctx, wcancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer wcancel()
	for wr := range s.cfg.Client.Watch(wctx, s.key, clientv3.WithRev(resp.Header.Revision+1)) {
		if wr.CompactRevision != 0 {
			return errResync // read the key again
		}
		if err := wr.Err(); err != nil {
			return err
		}
		s.fine()
		for _, ev := range wr.Events {
			if ev.Type == clientv3.EventTypeDelete {
				s.log.Error("secrets deleted in etcd; the installed secrets keep serving", "revision", ev.Kv.ModRevision)
				continue
			}
			s.take(ev.Kv.Value, ev.Kv.ModRevision)
		}
	}
	return errors.New("fleet: the watch of the secrets ended")
}

// take installs one revision of the key, or logs why not.
func (s *Secrets) take(value []byte, rev int64) {
	k, err := secrets.Parse(value)
	if err != nil {
		// The problems name fields and lengths, never a value.
		s.log.Error("secrets in etcd refused; the installed secrets keep serving", "revision", rev, "err", err)
		return
	}
	s.install(k, rev)
}

// lead campaigns in the election and, once elected, rotates the ticket
// secret when due until ctx is done or the election is lost. It resigns
// when it leaves.
func (s *Secrets) lead(ctx context.Context) error {
	ttl := int(s.cfg.LeaseTTL / time.Second)
	gctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	lease, err := s.cfg.Client.Grant(gctx, int64(ttl))
	cancel()
	if err != nil {
		return err
	}
	sess, err := concurrency.NewSession(s.cfg.Client, concurrency.WithLease(lease.ID), concurrency.WithTTL(ttl))
	if err != nil {
		return err
	}
	// Revoking the lease frees the election at once, within a second so
	// that a stop does not wait on an etcd away; a leader that dies frees
	// it when the lease expires.
	defer func() {
		sess.Orphan()
		rctx, cancel := context.WithTimeout(context.Background(), min(s.cfg.Timeout, time.Second))
		s.cfg.Client.Revoke(rctx, lease.ID)
		cancel()
	}()
	el := concurrency.NewElection(sess, s.cfg.Prefix+"secrets-rotation")
	cctx, ccancel := context.WithCancel(ctx)
	defer ccancel()
	go func() {
		select {
		case <-sess.Done():
			ccancel()
		case <-cctx.Done():
		}
	}()
	if err := el.Campaign(cctx, s.cfg.Instance); err != nil {
		if ctx.Err() == nil && cctx.Err() != nil {
			return errNotLeader // the session ended
		}
		return err
	}
	s.fine()
	s.leading.Store(true)
	defer s.leading.Store(false)
	s.log.Info("elected to rotate the ticket secret", "every", s.cfg.RotationPeriod)
	defer s.log.Info("no longer rotating the ticket secret")
	for {
		k, rev, err := s.read(cctx)
		if errors.Is(err, ErrNoSecrets) {
			s.wait(cctx, s.cfg.RotationPeriod)
			if cctx.Err() != nil {
				return errNotLeader
			}
			continue
		}
		if err != nil {
			return err
		}
		s.wait(cctx, time.Until(k.Rotated.Add(s.cfg.RotationPeriod)))
		if cctx.Err() != nil {
			return errNotLeader
		}
		if _, err := s.rotate(cctx, k, rev, el); err != nil && !errors.Is(err, ErrStaleSecrets) {
			return err
		}
	}
}

// trouble logs that etcd failed the secrets, once until it answers again.
func (s *Secrets) trouble(err error) {
	s.mu.Lock()
	was := s.unreachable
	s.unreachable = true
	s.mu.Unlock()
	if !was {
		s.log.Error("etcd unreachable for the secrets; the installed secrets keep serving", "err", err)
	}
}

// fine records that etcd answered, logging it after trouble.
func (s *Secrets) fine() {
	s.mu.Lock()
	was := s.unreachable
	s.unreachable = false
	s.mu.Unlock()
	if was {
		s.log.Info("etcd reachable again for the secrets")
	}
}
