package fleet

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/paduraksa/paduraksa/source"
)

// DefaultPrefix is the prefix of a fleet's keys by default.
const DefaultPrefix = "/paduraksa/"

// Defaults of [EtcdConfig].
const (
	DefaultProbePeriod  = time.Second
	DefaultProbeTimeout = 2 * time.Second
	DefaultRetryPeriod  = time.Second
)

// Problem codes of [NewEtcd]; they are stable.
const (
	CodeClientMissing   = "fleet.etcd.client.missing"   // at "client"
	CodePrefixInvalid   = "fleet.etcd.prefix.invalid"   // at "prefix"
	CodeMaxBytesInvalid = "fleet.etcd.maxBytes.invalid" // at "maxBytes"
	CodePeriodInvalid   = "fleet.etcd.period.invalid"   // at "probePeriod", "probeTimeout", "retryPeriod"
)

// CodeDocumentTooLarge is the problem of a refusal recorded for a value
// larger than MaxBytes, which is not published; it is stable.
const CodeDocumentTooLarge = "fleet.etcd.document.tooLarge"

// ErrNoDocument is Load's answer when the key holds no document.
var ErrNoDocument = errors.New("fleet: etcd holds no document at the key")

// ErrRunning is [Etcd.Run]'s answer while another Run of the same Etcd
// runs.
var ErrRunning = errors.New("fleet: the Etcd's Run is already running")

// errResync ends a watch that must read the key again, etcd being
// reachable (its revisions were compacted).
var errResync = errors.New("fleet: the key is read again")

// ErrTooLarge is the error of a value larger than MaxBytes.
var ErrTooLarge = errors.New("fleet: the document in etcd is larger than MaxBytes")

// EtcdConfig configures an [Etcd]. Only Client is required.
type EtcdConfig struct {
	// Client is the etcd client; the Etcd does not close it.
	Client *clientv3.Client
	// Prefix starts every key of the fleet; the document is at
	// Prefix+"config". "" means [DefaultPrefix].
	Prefix string
	// MaxBytes is the largest document taken; 0 means
	// config.MaxDocumentSize, which it may not exceed.
	MaxBytes int64
	// ProbePeriod is how often Run checks that etcd answers, and
	// ProbeTimeout how long a check waits; 0 means
	// [DefaultProbePeriod] and [DefaultProbeTimeout].
	ProbePeriod, ProbeTimeout time.Duration
	// RetryPeriod is how long Run waits between attempts while etcd is
	// unreachable; 0 means [DefaultRetryPeriod].
	RetryPeriod time.Duration
	// OnReachable, when set, is called on Run's goroutine each time etcd
	// becomes unreachable (with why) or reachable again (err nil): the
	// hook of a metric or a health check. nil calls nothing.
	OnReachable func(reachable bool, err error)
	// Logger receives every publish with its outcome and every change of
	// reachability; nil discards.
	Logger *slog.Logger
}

// Status is what an [Etcd] knows of etcd, for health checks and metrics.
type Status struct {
	// Reachable reports whether etcd answered the last read; true before
	// the first.
	Reachable bool
	// Since is when Reachable last changed; zero before it ever did.
	Since time.Time
	// Err is why etcd is unreachable; nil while it is reachable.
	Err error
	// Version is the mod revision of the document last handed to the
	// publisher (by Load or Run), in decimal; "" before the first.
	Version string
	// Serving is the version this instance serves, as the outcomes
	// recorded say (see [Etcd.Record]); its zero value before the first
	// applied one.
	Serving Serving
	// LastRefusal is the latest version this instance refused; nil
	// before any.
	LastRefusal *Refusal
}

// Etcd is the [source.Source] of a fleet: the document at
// Prefix+"config" in etcd. Make it with [NewEtcd]; see the package
// documentation.
type Etcd struct {
	cfg     EtcdConfig
	key     string
	log     *slog.Logger
	reload  chan struct{}
	running atomic.Bool

	mu      sync.Mutex
	handed  int64 // the mod revision last handed to the publisher; 0: none
	next    int64 // the store revision a watch starts at; 0: read the key first
	status  Status
	missing bool // the key was found missing, logged once
	applied outcomes
}

var _ source.Source = (*Etcd)(nil)

// NewEtcd returns the source of cfg, or every problem of cfg. It reads
// nothing yet.
func NewEtcd(cfg EtcdConfig) (*Etcd, error) {
	var probs problem.List
	checkClient(&probs, cfg.Client)
	checkPrefix(&probs, &cfg.Prefix)
	if cfg.MaxBytes < 0 || cfg.MaxBytes > config.MaxDocumentSize {
		probs.Add(CodeMaxBytesInvalid, "maxBytes", "must be 0 (the default) or 1 to "+strconv.Itoa(config.MaxDocumentSize))
	}
	checkPeriods(&probs, []period{{&cfg.ProbePeriod, DefaultProbePeriod, "probePeriod"},
		{&cfg.ProbeTimeout, DefaultProbeTimeout, "probeTimeout"}, {&cfg.RetryPeriod, DefaultRetryPeriod, "retryPeriod"}})
	if err := probs.Err(); err != nil {
		return nil, err
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = config.MaxDocumentSize
	}
	log := orDiscard(cfg.Logger)
	return &Etcd{cfg: cfg, key: cfg.Prefix + "config", log: log.With("etcdKey", cfg.Prefix+"config"),
		reload: make(chan struct{}, 1), status: Status{Reachable: true}, applied: outcomes{changed: make(chan struct{})}}, nil
}

// checkClient adds the problem of a missing etcd client, which every
// part of the fleet needs.
func checkClient(probs *problem.List, c *clientv3.Client) {
	if c == nil {
		probs.Add(CodeClientMissing, "client", "an etcd client is required")
	}
}

// checkPrefix sets an empty prefix to [DefaultPrefix] and adds the
// problem of one that does not start with /.
func checkPrefix(probs *problem.List, prefix *string) {
	if *prefix == "" {
		*prefix = DefaultPrefix
	}
	if !strings.HasPrefix(*prefix, "/") {
		probs.Add(CodePrefixInvalid, "prefix", "a prefix starts with /, as "+DefaultPrefix+" does")
	}
}

// period is a duration of a config, its default and its path.
type period struct {
	d    *time.Duration
	def  time.Duration
	path string
}

// checkPeriods sets each zero period to its default and adds the
// problem of each negative one.
func checkPeriods(probs *problem.List, ps []period) {
	for _, p := range ps {
		if *p.d < 0 {
			probs.Add(CodePeriodInvalid, p.path, "must be 0 (the default) or positive")
		}
		if *p.d == 0 {
			*p.d = p.def
		}
	}
}

// orDiscard is log, or a logger discarding everything when log is nil.
func orDiscard(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return log
}

// Key returns the key of the document.
func (e *Etcd) Key() string { return e.key }

// Status returns what e knows of etcd now.
func (e *Etcd) Status() Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.status
	st.Serving, st.LastRefusal = e.applied.serving, e.applied.refusal
	return st
}

// Load reads the key and returns its document, taken as handed to the
// publisher: Run publishes only later revisions. It returns
// [ErrNoDocument] when the key is missing, [ErrTooLarge], or etcd's
// error.
func (e *Etcd) Load(ctx context.Context) (source.Document, error) {
	kv, rev, err := e.get(ctx)
	if err != nil {
		return source.Document{}, err
	}
	if kv == nil {
		return source.Document{}, ErrNoDocument
	}
	if int64(len(kv.Value)) > e.cfg.MaxBytes {
		return source.Document{}, ErrTooLarge
	}
	e.mu.Lock()
	e.handed, e.next = kv.ModRevision, rev+1
	e.status.Version = version(kv.ModRevision)
	e.mu.Unlock()
	return source.Document{Data: kv.Value, Why: source.Start, Version: version(kv.ModRevision)}, nil
}

// Save puts p.Data at the key in one transaction, on condition that the
// key's mod revision is still p.IfVersion when that is set (an IfVersion
// that names no revision never matches; "0" matches a missing key), and
// returns the key's new mod revision. A key that moved on gets
// [source.ErrStale]. It publishes nothing itself: Run publishes the
// document from its watch, on every instance.
func (e *Etcd) Save(ctx context.Context, p source.Push) (string, error) {
	txn := e.cfg.Client.Txn(ctx)
	if p.IfVersion != "" {
		rev, err := strconv.ParseInt(p.IfVersion, 10, 64)
		if err != nil || rev < 0 {
			return "", source.ErrStale
		}
		txn = txn.If(clientv3.Compare(clientv3.ModRevision(e.key), "=", rev))
	}
	resp, err := txn.Then(clientv3.OpPut(e.key, string(p.Data))).Commit()
	if err != nil {
		e.log.Error("pushed config not saved in etcd", "err", err)
		return "", err
	}
	if !resp.Succeeded {
		return "", source.ErrStale
	}
	v := version(resp.Header.Revision)
	e.log.Info("pushed config saved in etcd", "version", v, "bytes", len(p.Data))
	return v, nil
}

// Reload asks Run to read the key and publish what it holds at once,
// changed or not. It does not wait; reloads asked while one waits
// coalesce into it.
func (e *Etcd) Reload() {
	select {
	case e.reload <- struct{}{}:
	default:
	}
}

// Run publishes every later revision of the key through publish, waiting
// for each outcome, until ctx is done; it returns ctx's error, or
// [ErrRunning] while another Run of e runs. Without a Load first, it
// publishes what the key holds first.
func (e *Etcd) Run(ctx context.Context, publish source.Publish) error {
	if !e.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer e.running.Store(false)
	for {
		if err := e.watch(ctx, publish); ctx.Err() != nil {
			return ctx.Err()
		} else if err != nil && !errors.Is(err, errResync) {
			e.unreachable(err)
		}
		// Read the key again before watching again: what changed while
		// the watch was down is published now.
		for {
			e.mu.Lock()
			e.next = 0
			e.mu.Unlock()
			err := e.resync(ctx, publish, source.Change)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err == nil {
				break
			}
			e.unreachable(err)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(e.cfg.RetryPeriod):
			}
		}
	}
}

// watch watches the key from e.next on (reading it first when e.next is
// 0) and publishes each new revision, until ctx is done, the watch
// fails, or a probe finds etcd unreachable; it returns why.
func (e *Etcd) watch(ctx context.Context, publish source.Publish) error {
	e.mu.Lock()
	next := e.next
	e.mu.Unlock()
	if next == 0 {
		if err := e.resync(ctx, publish, source.Change); err != nil {
			return err
		}
		e.mu.Lock()
		next = e.next
		e.mu.Unlock()
	}
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	// Watch blocks until the client has a stream, which it has not while
	// etcd is away: the probes go on meanwhile. cancel makes it return.
	wchc := make(chan clientv3.WatchChan, 1)
	go func() { wchc <- e.cfg.Client.Watch(wctx, e.key, clientv3.WithRev(next)) }()
	var wch clientv3.WatchChan // nil until the watch is made
	probe := time.NewTicker(e.cfg.ProbePeriod)
	defer probe.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-e.reload:
			if err := e.resync(ctx, publish, source.Reload); err != nil {
				return err
			}
			return nil // watch again from what the reload read
		case <-probe.C:
			pctx, pcancel := context.WithTimeout(ctx, e.cfg.ProbeTimeout)
			_, err := e.cfg.Client.Get(pctx, e.key, clientv3.WithKeysOnly())
			pcancel()
			if err != nil {
				return err
			}
			e.reachable()
		case wch = <-wchc:
		case wr, ok := <-wch:
			if !ok {
				return errors.New("fleet: the watch of the key ended")
			}
			if wr.CompactRevision != 0 {
				e.log.Warn("the watch's revisions were compacted; reading the key again", "compacted", wr.CompactRevision)
				return errResync
			}
			if err := wr.Err(); err != nil {
				return err
			}
			e.reachable()
			for _, ev := range wr.Events {
				if err := e.event(ctx, publish, ev); err != nil {
					return err
				}
			}
		}
	}
}

// event publishes the revision one event of the watch made.
func (e *Etcd) event(ctx context.Context, publish source.Publish, ev *clientv3.Event) error {
	e.mu.Lock()
	e.next = ev.Kv.ModRevision + 1
	seen := ev.Kv.ModRevision <= e.handed
	e.mu.Unlock()
	if seen {
		return nil
	}
	if ev.Type == clientv3.EventTypeDelete {
		e.log.Error("config key deleted in etcd; the previous config keeps serving", "revision", ev.Kv.ModRevision)
		return nil
	}
	return e.hand(ctx, publish, ev.Kv.Value, ev.Kv.ModRevision, source.Change)
}

// resync reads the key and publishes it when it is another revision than
// the one last handed over, or always for a reload; the watch then starts
// after the read.
func (e *Etcd) resync(ctx context.Context, publish source.Publish, why source.Reason) error {
	kv, rev, err := e.get(ctx)
	if err != nil {
		return err
	}
	e.reachable()
	e.mu.Lock()
	e.next = rev + 1
	handed := e.handed
	if kv == nil && !e.missing {
		e.log.Error("config key missing in etcd; the previous config keeps serving")
	}
	e.missing = kv == nil
	e.mu.Unlock()
	if kv == nil || (kv.ModRevision == handed && why != source.Reload) {
		return nil
	}
	return e.hand(ctx, publish, kv.Value, kv.ModRevision, why)
}

// get reads the key within ProbeTimeout; kv is nil when it is missing,
// rev is the store's revision at the read.
func (e *Etcd) get(ctx context.Context) (kv *kvValue, rev int64, err error) {
	gctx, cancel := context.WithTimeout(ctx, e.cfg.ProbeTimeout)
	defer cancel()
	resp, err := e.cfg.Client.Get(gctx, e.key)
	if err != nil {
		return nil, 0, err
	}
	if len(resp.Kvs) == 0 {
		return nil, resp.Header.Revision, nil
	}
	k := resp.Kvs[0]
	return &kvValue{Value: k.Value, ModRevision: k.ModRevision}, resp.Header.Revision, nil
}

// kvValue is what the source reads of the key.
type kvValue struct {
	Value       []byte
	ModRevision int64
}

// hand publishes the document of one revision and logs its outcome. A
// value larger than MaxBytes is logged and not published. Run goes on
// after a publish that got no outcome, unless ctx is done.
func (e *Etcd) hand(ctx context.Context, publish source.Publish, data []byte, modRev int64, why source.Reason) error {
	v := version(modRev)
	e.mu.Lock()
	e.handed = modRev
	e.status.Version = v
	e.mu.Unlock()
	d := source.Document{Data: data, Why: why, Version: v}
	if int64(len(data)) > e.cfg.MaxBytes {
		e.log.Error("config in etcd refused: larger than the most taken; the previous config keeps serving",
			"version", v, "bytes", len(data), "maxBytes", e.cfg.MaxBytes)
		e.Record(d, snapshot.Outcome{Status: snapshot.Refused, Errors: []*snapshot.ValidationError{{Code: CodeDocumentTooLarge,
			Msg: "the document in etcd is " + strconv.Itoa(len(data)) + " bytes, more than the " + strconv.FormatInt(e.cfg.MaxBytes, 10) + " taken"}}})
		return nil
	}
	o, err := publish(ctx, d)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		e.log.Error("config from etcd not published", "version", v, "why", why.String(), "err", err)
		return nil
	}
	e.logOutcome(d, o)
	e.Record(d, o)
	return nil
}

// logOutcome logs a publish with its outcome, a refusal with every
// problem.
func (e *Etcd) logOutcome(d source.Document, o snapshot.Outcome) {
	attrs := []any{"version", d.Version, "why", d.Why.String(), "revision", o.Revision, "status", o.Status.String()}
	switch o.Status {
	case snapshot.Refused:
		var b strings.Builder
		for i, pe := range o.Errors {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(pe.Error())
		}
		e.log.Error("config from etcd refused; the previous config keeps serving", append(attrs, "problems", len(o.Errors), "errors", b.String())...)
	case snapshot.Superseded:
		e.log.Info("config from etcd", append(attrs, "supersededBy", o.SupersededBy)...)
	default:
		e.log.Info("config from etcd", attrs...)
	}
}

// unreachable records that etcd did not answer, logging and calling
// OnReachable on the change.
func (e *Etcd) unreachable(err error) {
	e.mu.Lock()
	was := e.status.Reachable
	e.status.Reachable, e.status.Err = false, err
	if was {
		e.status.Since = time.Now()
		e.applied.notify()
	}
	e.mu.Unlock()
	if was {
		e.log.Error("etcd unreachable; the last applied config keeps serving", "err", err)
		if e.cfg.OnReachable != nil {
			e.cfg.OnReachable(false, err)
		}
	}
}

// reachable records that etcd answered, logging and calling OnReachable
// on the change.
func (e *Etcd) reachable() {
	e.mu.Lock()
	was := e.status.Reachable
	e.status.Reachable, e.status.Err = true, nil
	if !was {
		e.status.Since = time.Now()
		e.applied.notify()
	}
	e.mu.Unlock()
	if !was {
		e.log.Info("etcd reachable again")
		if e.cfg.OnReachable != nil {
			e.cfg.OnReachable(true, nil)
		}
	}
}

// version is the Version of a mod revision.
func version(rev int64) string { return strconv.FormatInt(rev, 10) }
