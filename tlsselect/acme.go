package tlsselect

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/mail"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/acme"

	"github.com/paduraksa/paduraksa/internal/hostname"
)

// ChallengeStore publishes the key authorizations of ACME HTTP-01
// challenges where the CA fetches them: the response to
// "GET /.well-known/acme-challenge/<token>" on plain HTTP, port 80, for
// every name ordered. *gate.ChallengeStore is one, which a gate serves
// before it looks up the host. Set and Delete are called from the ACME
// manager's order workers and must be safe for concurrent use.
type ChallengeStore interface {
	// Set publishes keyAuth as the answer for token.
	Set(token, keyAuth string)
	// Delete withdraws token.
	Delete(token string)
}

// Defaults and limits of an ACMEConfig.
const (
	// DefaultACMEMaxOrders is ACMEConfig.MaxOrders when 0.
	DefaultACMEMaxOrders = 2
	// DefaultACMEOrderTimeout is ACMEConfig.OrderTimeout when 0.
	DefaultACMEOrderTimeout = 5 * time.Minute
	// DefaultACMEStorageTimeout is ACMEConfig.StorageTimeout when 0.
	DefaultACMEStorageTimeout = 30 * time.Second

	// acmeRetryMin and acmeRetryMax bound the wait after a failed order:
	// it doubles from the first to the last (before jitter), so a name
	// whose validation keeps failing costs a CA a few orders an hour and
	// then four a day.
	acmeRetryMin = 2 * time.Minute
	acmeRetryMax = 6 * time.Hour
	// acmeMaxWait is the longest the manager sleeps without looking at
	// the clock again, so a suspended machine or a stepped clock delays a
	// renewal by at most this much.
	acmeMaxWait = time.Hour
)

// Validation codes of an ACMEConfig.
const (
	CodeACMEDirectoryURLInvalid   = "tlsselect.acme.directoryUrl.invalid" // missing, or not https
	CodeACMEEmailInvalid          = "tlsselect.acme.email.invalid"
	CodeACMECacheDirMissing       = "tlsselect.acme.cacheDir.missing"
	CodeACMECacheDirUnusable      = "tlsselect.acme.cacheDir.unusable" // cannot be created, or the account key not read or written
	CodeACMEStorageUnusable       = "tlsselect.acme.storage.unusable"  // the account key or the certificates not read, or the key not written
	CodeACMEChallengesMissing     = "tlsselect.acme.challenges.missing"
	CodeACMEMaxOrdersInvalid      = "tlsselect.acme.maxOrders.invalid"
	CodeACMEOrderTimeoutInvalid   = "tlsselect.acme.orderTimeout.invalid"
	CodeACMEStorageTimeoutInvalid = "tlsselect.acme.storageTimeout.invalid"
	CodeACMERenewBeforeInvalid    = "tlsselect.acme.renewBefore.invalid"
)

// ACMEConfig configures an [ACME] certificate manager. DirectoryURL,
// Challenges, and Storage or CacheDir are required; every other field
// has a working zero value.
type ACMEConfig struct {
	// DirectoryURL is the https URL of the CA's ACME directory, such as
	// Let's Encrypt's "https://acme-v02.api.letsencrypt.org/directory"
	// (or its staging one while testing a setup). No CA is assumed.
	// Registering the account agrees to the CA's terms of service.
	DirectoryURL string
	// RootCAs verify the directory's HTTPS certificate; nil means the
	// system's roots. A test CA such as pebble needs its own.
	RootCAs *x509.CertPool
	// Email is the account's contact, to which the CA may send expiry
	// notices; empty means none.
	Email string
	// CacheDir keeps the account key and the certificates across
	// restarts, so that a restart does not order again: it is the
	// Storage [ACMEDir](CacheDir) when Storage is nil, and not used
	// otherwise. It is created (0700) when missing.
	CacheDir string
	// Storage keeps the account key and the certificates, and holds the
	// lock of each certificate while it is ordered; managers sharing one
	// (an instance each) order every certificate once. Nil means
	// [ACMEDir](CacheDir).
	Storage ACMEStorage
	// StorageTimeout bounds NewACME's reads of Storage, and each look
	// at a certificate and each store of one; 0 means
	// DefaultACMEStorageTimeout.
	StorageTimeout time.Duration
	// Challenges publishes the HTTP-01 key authorizations while an order
	// is validated.
	Challenges ChallengeStore
	// OnReady is called when a certificate has been obtained or renewed:
	// from then on Certificate returns it, so the embedder builds and
	// publishes a new Table. It runs on one of the manager's order
	// workers, without a lock held; a slow OnReady holds back that
	// worker's next order. Nil means none.
	OnReady func(ACMEReady)
	// RenewBefore is how long before its end a certificate is renewed;
	// 0 means a third of its lifetime (30 days of a 90-day certificate).
	// It is never more than half the lifetime, so a CA that issues
	// shorter certificates than RenewBefore is not asked again at once.
	RenewBefore time.Duration
	// MaxOrders bounds the orders under way at once; 0 means
	// DefaultACMEMaxOrders.
	MaxOrders int
	// OrderTimeout bounds one order, from the new order to the
	// downloaded chain; 0 means DefaultACMEOrderTimeout.
	OrderTimeout time.Duration
	// Logger receives orders, certificates obtained and failures; nil
	// means none.
	Logger *slog.Logger
	// Clock tells the time for renewals, retries and validity; nil means
	// time.Now. Give the Table the same (Config.Clock). The manager also
	// looks at it when Certificate is called, so a clock moved ahead is
	// seen at the next Table build.
	Clock func() time.Time
}

// ACMEReady tells OnReady about a certificate the manager obtained.
type ACMEReady struct {
	// ID is the certificate's Config ID.
	ID string
	// Names are the names the certificate covers.
	Names []string
	// NotAfter is the end of its validity.
	NotAfter time.Time
	// Renewal reports whether it replaces a certificate the manager had
	// for ID (a renewal, or new names).
	Renewal bool
}

// ACMEStats are an ACME manager's counters and the state of each
// certificate it manages.
type ACMEStats struct {
	// Orders counts orders started; Obtained those that ended with a
	// certificate, Failed those that did not (or whose lock could not be
	// taken).
	Orders, Obtained, Failed uint64
	// Adopted counts the certificates taken from the Storage instead of
	// ordered, stored there by another manager sharing it.
	Adopted uint64
	// Certificates are the managed certificates, by ID.
	Certificates []ACMEStatus
}

// ACMEStatus is the state of one managed certificate.
type ACMEStatus struct {
	// ID is the certificate's Config ID.
	ID string
	// Names are the names last asked for, in order.
	Names []string
	// NotAfter is the end of the current certificate's validity; zero
	// while there is none.
	NotAfter time.Time
	// RenewAt is when the current certificate is due for renewal; zero
	// while there is none.
	RenewAt time.Time
	// Ordering reports whether an order is under way.
	Ordering bool
	// NextOrder is when the next order starts (zero: as soon as a worker
	// is free); it is RenewAt, or a retry after a failure.
	NextOrder time.Time
	// Failures counts the orders that failed since the last success.
	Failures int
	// LastError is the last failure, empty after a success.
	LastError string
	// LastErrorAt is when it happened.
	LastErrorAt time.Time
}

// ACME obtains and renews certificates from an ACME (RFC 8555) CA,
// proving control of each name over HTTP-01 through a ChallengeStore, and
// is the [Source] of the Config certificates it manages: give every such
// Certificate the same *ACME as Source, and its hosts' names are what is
// ordered (a Config ID is one certificate with every name of the hosts
// that use it).
//
// Certificate never waits for a CA, nor reads a file or the Storage. The
// first time it is asked for an ID, it serves the certificate NewACME
// read from the Storage, or returns [ErrPending] and has one ordered;
// when the certificate has come the manager calls OnReady, and the next Table serves it. A certificate is renewed when
// RenewBefore of it is left, and ordered again when the names asked for
// are more than it covers; meanwhile the one there is stays served. A
// failed order is logged, shown in Stats, and retried after a wait
// jittered between half and all of 2 minutes, doubling with each failure
// in a row up to 6 hours (longer when the CA's rate limit asks for it),
// so a name that cannot be validated costs the CA a few orders an hour. Wildcard names cannot be proven over HTTP-01 and are an
// error; IP literals are left out of orders. An ID is managed from the
// first Certificate call for it until the manager is closed.
//
// The Storage (by default [ACMEDir](CacheDir), a directory per CA) holds,
// under a key prefix named after the CA's directory URL's host and path,
// account.key (the account's ECDSA P-256 key) and certificates/<ID>.pem
// (the certificate's private key then its chain; characters outside
// [A-Za-z0-9._-] and a leading dot written as %XX). NewACME reads them;
// it makes the account key, under its lock, when there is none.
//
// Managers sharing a Storage (the instances of a fleet) order each
// certificate once. An order is run holding the certificate's lock (the
// wait bounded by OrderTimeout); holding it, the manager reads the
// stored certificate again and takes it instead of ordering when it is
// valid for the names, not due for renewal and newer than the one it
// serves (counted in Stats as Adopted, and OnReady is called as for an
// order). The others, due at the same time, wait for the lock and then
// find what the holder stored; so does a renewal, made by whichever
// manager takes the lock first. When the Storage is an [ACMEWatcher],
// a certificate stored by another manager is looked at as soon as the
// watch tells of it, so a manager waiting to retry, or not due yet,
// serves it at once; without one (ACMEDir), it is seen when the
// manager's own order comes due. An order that fails is retried by each
// manager after its own wait, so a CA that refuses a fleet of N is asked
// up to N times per round.
//
// Orders run on MaxOrders workers that Start starts with one scheduling
// goroutine; Close stops them. Certificate and Stats work before Start
// and after Close (no order starts then). An ACME is safe for concurrent
// use. Make it with [NewACME]: the zero ACME obtains nothing (its Start
// and Certificate return [ErrACMENotNew], no goroutine starts), and its
// Stats and Close report and do nothing.
type ACME struct {
	cfg        ACMEConfig // with defaults applied
	ca         string     // the CA's key prefix in the Storage
	client     *acme.Client
	transport  *http.Transport
	log        *slog.Logger
	jitter     func() float64 // in [0, 1)
	registered bool           // under regMu
	regMu      sync.Mutex

	// obtain runs one order; tests replace it.
	obtain func(ctx context.Context, names []string) (*tls.Certificate, error)

	mu     sync.Mutex
	certs  map[string]*acmeCert
	cached map[string]stored // the stored certificates as NewACME read them, by file name, until first asked for

	kick chan struct{} // wakes the scheduler; capacity 1
	jobs chan acmeJob

	orders, obtained, failed, adopted atomic.Uint64

	life   sync.Mutex
	state  int // 0 new, 1 started, 2 closed
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// acmeCert is the state of one managed certificate, under ACME.mu.
type acmeCert struct {
	id       string
	names    []string         // asked for, in order
	cert     *tls.Certificate // current; nil while there is none
	renewAt  time.Time        // of cert
	next     time.Time        // when to order; zero: now
	ordering bool
	failures int
	lastErr  error
	errAt    time.Time
}

// acmeJob is an order to run.
type acmeJob struct {
	id    string
	names []string
}

var _ Source = (*ACME)(nil)

// Validate reports every problem of c that can be seen without touching
// the disk or the network, each a *ValidationError, joined with
// errors.Join; nil for a valid ACMEConfig.
func (c ACMEConfig) Validate() error {
	var p problems
	c.check(&p)
	return errors.Join(p.errs...)
}

func (c ACMEConfig) check(p *problems) {
	if u, err := url.Parse(c.DirectoryURL); c.DirectoryURL == "" || err != nil || u.Scheme != "https" || u.Host == "" {
		p.add(CodeACMEDirectoryURLInvalid, "directoryUrl", "%q is not an https URL (RFC 8555 section 6.1)", c.DirectoryURL)
	}
	if c.Email != "" {
		if a, err := mail.ParseAddress(c.Email); err != nil || a.Address != c.Email {
			p.add(CodeACMEEmailInvalid, "email", "%q is not an e-mail address like name@example.com", c.Email)
		}
	}
	if c.CacheDir == "" && c.Storage == nil {
		p.add(CodeACMECacheDirMissing, "cacheDir", "a cache directory is needed, or every restart orders every certificate again")
	}
	if c.Challenges == nil {
		p.add(CodeACMEChallengesMissing, "challenges", "HTTP-01 needs a challenge store the plain-HTTP listener serves")
	}
	if c.MaxOrders < 0 {
		p.add(CodeACMEMaxOrdersInvalid, "maxOrders", "%d is negative", c.MaxOrders)
	}
	if c.OrderTimeout < 0 {
		p.add(CodeACMEOrderTimeoutInvalid, "orderTimeout", "%v is negative", c.OrderTimeout)
	}
	if c.StorageTimeout < 0 {
		p.add(CodeACMEStorageTimeoutInvalid, "storageTimeout", "%v is negative", c.StorageTimeout)
	}
	if c.RenewBefore < 0 {
		p.add(CodeACMERenewBeforeInvalid, "renewBefore", "%v is negative", c.RenewBefore)
	}
}

// NewACME checks cfg, reads the account key from the Storage (by
// default the cache directory, created when missing), or makes and
// stores one, and reads the stored certificates, so that Certificate
// never waits on the Storage; the reads together take at most
// StorageTimeout. ACMEDir's files are read under the rules of
// MaxFileSize and FileTimeout: a stored certificate they refuse is
// logged and ordered again, like a damaged one. It returns every
// problem at once, each a *ValidationError, joined with errors.Join (a
// Storage it cannot use is CodeACMECacheDirUnusable at "cacheDir" for
// the default, CodeACMEStorageUnusable at "storage" for another). It
// talks to no CA: the account is registered before the first order.
func NewACME(cfg ACMEConfig) (*ACME, error) {
	var p problems
	cfg.check(&p)
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	if cfg.MaxOrders == 0 {
		cfg.MaxOrders = DefaultACMEMaxOrders
	}
	if cfg.OrderTimeout == 0 {
		cfg.OrderTimeout = DefaultACMEOrderTimeout
	}
	if cfg.StorageTimeout == 0 {
		cfg.StorageTimeout = DefaultACMEStorageTimeout
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	code, at := CodeACMEStorageUnusable, "storage"
	if cfg.Storage == nil {
		cfg.Storage = ACMEDir(cfg.CacheDir)
		code, at = CodeACMECacheDirUnusable, "cacheDir"
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	u, _ := url.Parse(cfg.DirectoryURL)
	ca := caKey(u)
	ctx, cancel := context.WithTimeout(context.Background(), cfg.StorageTimeout)
	defer cancel()
	key, err := loadAccountKey(ctx, cfg.Storage, ca)
	if err != nil {
		return nil, &ValidationError{Code: code, Path: at, Msg: err.Error()}
	}
	cached, err := readStored(ctx, cfg.Storage, ca)
	if err != nil {
		return nil, &ValidationError{Code: code, Path: at, Msg: err.Error()}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12}
	m := &ACME{
		cfg:       cfg,
		ca:        ca,
		transport: tr,
		log:       log,
		jitter:    rand.Float64,
		client: &acme.Client{
			Key:          key,
			DirectoryURL: cfg.DirectoryURL,
			HTTPClient:   &http.Client{Transport: tr},
			UserAgent:    "paduraksa-tlsselect",
		},
		certs:  make(map[string]*acmeCert),
		cached: cached,
		kick:   make(chan struct{}, 1),
		jobs:   make(chan acmeJob),
	}
	m.obtain = m.order
	return m, nil
}

// Certificate returns the certificate for r.ID, or an error wrapping
// ErrPending while there is none, and has one ordered when it is missing,
// covers fewer names than r.Names or is due for renewal. It never waits
// for the CA. r.Names must name at least one host, and no wildcard.
func (m *ACME) Certificate(r SourceRequest) (*tls.Certificate, error) {
	if m.jobs == nil {
		return nil, ErrACMENotNew
	}
	names, err := acmeNames(r.Names)
	if err != nil {
		return nil, err
	}
	now := m.cfg.Clock()
	m.mu.Lock()
	c := m.certs[r.ID]
	if c == nil {
		c = &acmeCert{id: r.ID}
		if cert, err := m.fromCache(r.ID); err != nil {
			m.log.Warn("tlsselect: acme: cached certificate not used", "id", r.ID, "err", err)
		} else if cert != nil {
			c.cert, c.renewAt = cert, m.renewAt(cert)
			c.next = c.renewAt
		}
		m.certs[r.ID] = c
	}
	if !slices.Equal(c.names, names) {
		c.names = names
		c.failures, c.next = 0, time.Time{}
		if c.cert != nil && coversAll(c.cert, names) {
			c.next = c.renewAt
		}
	}
	cert := c.cert
	due := !c.ordering && !now.Before(c.next)
	var pending error
	if cert == nil || now.Before(cert.Leaf.NotBefore) || !now.Before(cert.Leaf.NotAfter) {
		pending = fmt.Errorf("%w: acme: no valid certificate for %s yet%s", ErrPending, strings.Join(names, ", "), c.describe())
	}
	m.mu.Unlock()
	if due {
		m.wake()
	}
	if pending != nil {
		return nil, pending
	}
	return cert, nil
}

// fromCache returns the certificate of id that NewACME read from the
// cache, nil when there was none, or an error when its file was not a
// usable certificate; m.mu is held. It reads no file: Certificate runs
// while a Table is built, on a publisher that must not wait on one.
func (m *ACME) fromCache(id string) (*tls.Certificate, error) {
	name := cachedName(id)
	res, ok := m.cached[name]
	if !ok {
		return nil, nil
	}
	delete(m.cached, name) // asked for once: the manager keeps what it serves
	if res.err != nil {
		return nil, res.err
	}
	return parseCached(res.data)
}

// certKey is the Storage key of certificate id, which is also the name
// of its lock.
func (m *ACME) certKey(id string) string { return m.ca + "/" + certsDir + "/" + cachedName(id) }

// loadStored reads and parses the stored certificate of id: nil when
// there is none.
func (m *ACME) loadStored(ctx context.Context, id string) (*tls.Certificate, error) {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.StorageTimeout)
	defer cancel()
	b, err := m.cfg.Storage.Load(ctx, m.certKey(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseCached(b)
}

// store writes cert as the stored certificate of id.
func (m *ACME) store(ctx context.Context, id string, cert *tls.Certificate) error {
	b, err := encodeCached(cert)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, m.cfg.StorageTimeout)
	defer cancel()
	return m.cfg.Storage.Store(ctx, m.certKey(id), b)
}

// describe tells what the manager is doing about c, for an ErrPending.
func (c *acmeCert) describe() string {
	var b strings.Builder
	if c.ordering {
		b.WriteString("; an order is under way")
	}
	if c.failures > 0 {
		b.WriteString("; the order failed ")
		b.WriteString(strconv.Itoa(c.failures))
		b.WriteString(" time(s) in a row, the last at ")
		b.WriteString(c.errAt.UTC().Format(time.RFC3339))
		b.WriteString(": ")
		b.WriteString(c.lastErr.Error())
	}
	return b.String()
}

// acmeNames returns the names of a SourceRequest that can be ordered.
func acmeNames(names []string) ([]string, error) {
	out := make([]string, 0, len(names))
	for _, n := range names {
		switch {
		case strings.HasPrefix(n, "*."):
			return nil, fmt.Errorf("acme: %q: a wildcard cannot be proven over HTTP-01 (it needs DNS-01)", n)
		case hostname.IsIP(n), slices.Contains(out, n):
			continue
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("acme: no host name uses the certificate, so there is nothing to order")
	}
	return out, nil
}

// coversAll reports whether cert is valid for every name.
func coversAll(cert *tls.Certificate, names []string) bool {
	for _, n := range names {
		if !covers(cert.Leaf, n) {
			return false
		}
	}
	return true
}

// renewAt returns when cert is due for renewal.
func (m *ACME) renewAt(cert *tls.Certificate) time.Time {
	life := cert.Leaf.NotAfter.Sub(cert.Leaf.NotBefore)
	before := m.cfg.RenewBefore
	if before == 0 {
		before = life / 3
	}
	return cert.Leaf.NotAfter.Add(-min(before, life/2))
}

// backoff returns the wait after the n-th failure in a row: from
// acmeRetryMin doubling to acmeRetryMax, then between half of that and
// all of it.
func backoff(n int, jitter float64) time.Duration {
	d := acmeRetryMax
	if n < 16 {
		d = min(acmeRetryMin<<(n-1), acmeRetryMax)
	}
	return d/2 + time.Duration(jitter*float64(d/2))
}

// ErrACMENotNew is the error of Start and Certificate on a zero [ACME],
// one not made by [NewACME].
var ErrACMENotNew = errors.New("tlsselect: an ACME not made by NewACME obtains nothing")

// Start starts the scheduler and the order workers; they stop when ctx
// is done or Close is called. Orders for what Certificate was asked
// before Start begin at once.
func (m *ACME) Start(ctx context.Context) error {
	if m.jobs == nil {
		return ErrACMENotNew
	}
	m.life.Lock()
	defer m.life.Unlock()
	if m.state != 0 {
		return errors.New("tlsselect: acme: Start called twice or after Close")
	}
	m.state = 1
	ctx, m.cancel = context.WithCancel(ctx)
	m.wg.Add(1 + m.cfg.MaxOrders)
	go m.schedule(ctx)
	for range m.cfg.MaxOrders {
		go m.work(ctx)
	}
	if w, ok := m.cfg.Storage.(ACMEWatcher); ok {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			w.Watch(ctx, m.ca+"/"+certsDir+"/", m.seen)
		}()
	}
	return nil
}

// Close stops the scheduler, cancels the orders under way (their
// challenges are withdrawn) and waits for the workers to end. Close is
// idempotent.
func (m *ACME) Close() error {
	m.life.Lock()
	if m.cancel != nil {
		m.cancel()
	}
	m.state = 2
	m.life.Unlock()
	m.wg.Wait()
	if m.transport != nil { // nil for a zero ACME
		m.transport.CloseIdleConnections()
	}
	return nil
}

// wake tells the scheduler to look again.
func (m *ACME) wake() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// schedule hands due orders to the workers and sleeps until the next one
// is due, an order ends or Certificate asks for something new.
func (m *ACME) schedule(ctx context.Context) {
	defer m.wg.Done()
	timer := time.NewTimer(acmeMaxWait)
	defer timer.Stop()
	for {
		now := m.cfg.Clock()
		jobs, wake := m.due(now)
		for _, j := range jobs {
			select {
			case m.jobs <- j:
			case <-ctx.Done():
				return
			}
		}
		wait := acmeMaxWait
		if !wake.IsZero() {
			wait = min(max(wake.Sub(now), 0), acmeMaxWait)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-m.kick:
		case <-timer.C:
		}
	}
}

// due marks the certificates whose order is due, as many as workers are
// free, ordering by ID, and returns their jobs and when the next of the
// others is due (zero: none).
func (m *ACME) due(now time.Time) ([]acmeJob, time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	busy := 0
	for _, c := range m.certs {
		if c.ordering {
			busy++
		}
	}
	var jobs []acmeJob
	var wake time.Time
	for _, id := range slices.Sorted(maps.Keys(m.certs)) {
		c := m.certs[id]
		switch {
		case c.ordering:
		case now.Before(c.next):
			if wake.IsZero() || c.next.Before(wake) {
				wake = c.next
			}
		case busy < m.cfg.MaxOrders:
			c.ordering = true
			busy++
			jobs = append(jobs, acmeJob{id: id, names: slices.Clone(c.names)})
		}
	}
	return jobs, wake
}

// work runs the orders the scheduler hands over.
func (m *ACME) work(ctx context.Context) {
	defer m.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-m.jobs:
			m.run(ctx, j)
		}
	}
}

// run orders j's certificate when it is still needed: holding the
// certificate's lock in the Storage, it looks at the stored one first,
// which another manager may have stored meanwhile, and takes it when it
// will do. It records the outcome; the lock is released before OnReady.
func (m *ACME) run(ctx context.Context, j acmeJob) {
	lctx, cancel := context.WithTimeout(ctx, m.cfg.OrderTimeout)
	unlock, err := m.cfg.Storage.Lock(lctx, m.certKey(j.id))
	cancel()
	if ctx.Err() != nil { // closing: not a failure of the CA's
		if err == nil {
			unlock()
		}
		m.idle(j.id)
		return
	}
	if err != nil {
		m.failure(j, acmeError("taking the lock of "+m.certKey(j.id), err))
		return
	}
	fresh, current := m.look(ctx, j)
	switch {
	case fresh != nil:
		unlock()
		m.adopted.Add(1)
		m.ready(j, fresh, "tlsselect: acme: certificate taken from the storage")
		return
	case current != nil:
		unlock()
		m.settle(j.id, current)
		m.wake()
		return
	}
	m.orders.Add(1)
	m.log.Info("tlsselect: acme: ordering", "id", j.id, "names", j.names)
	octx, cancel := context.WithTimeout(ctx, m.cfg.OrderTimeout)
	cert, err := m.obtain(octx, j.names)
	cancel()
	switch {
	case ctx.Err() != nil:
		unlock()
		m.idle(j.id)
		return
	case err != nil:
		unlock()
		m.failure(j, err)
		return
	}
	m.obtained.Add(1)
	if err := m.store(ctx, j.id, cert); err != nil {
		// Served anyway: ordering again would not mend the storage.
		m.log.Error("tlsselect: acme: certificate not stored", "id", j.id, "err", err)
	}
	unlock()
	m.ready(j, cert, "tlsselect: acme: certificate obtained")
}

// look reads the stored certificate of j and returns it as fresh when it
// will do and is newer than the one served, or else the one served as
// current when that will do; both nil: an order is needed.
func (m *ACME) look(ctx context.Context, j acmeJob) (fresh, current *tls.Certificate) {
	s, err := m.loadStored(ctx, j.id)
	if err != nil {
		m.log.Warn("tlsselect: acme: stored certificate not used", "id", j.id, "err", err)
	}
	now := m.cfg.Clock()
	m.mu.Lock()
	cur := m.certs[j.id].cert
	m.mu.Unlock()
	if cur != nil && !m.fits(cur, j.names, now) {
		cur = nil
	}
	if s != nil && m.fits(s, j.names, now) && (cur == nil || s.Leaf.NotAfter.After(cur.Leaf.NotAfter)) {
		return s, nil
	}
	return nil, cur
}

// fits reports whether cert is valid at now for names and not yet due
// for renewal.
func (m *ACME) fits(cert *tls.Certificate, names []string, now time.Time) bool {
	return coversAll(cert, names) && !now.Before(cert.Leaf.NotBefore) && now.Before(m.renewAt(cert))
}

// idle ends the job of id without an outcome: the manager is closing.
func (m *ACME) idle(id string) {
	m.mu.Lock()
	m.certs[id].ordering = false
	m.mu.Unlock()
}

// failure records a failed job and when to try again.
func (m *ACME) failure(j acmeJob, err error) {
	m.failed.Add(1)
	now := m.cfg.Clock()
	m.mu.Lock()
	c := m.certs[j.id]
	c.failures++
	c.lastErr, c.errAt = err, now
	wait := backoff(c.failures, m.jitter())
	var ae *acme.Error // acme.RateLimit looks at err itself, not what it wraps
	if errors.As(err, &ae) {
		if ra, ok := acme.RateLimit(ae); ok && ra > wait {
			wait = ra
		}
	}
	c.next = now.Add(wait)
	c.ordering = false
	failures, retry := c.failures, c.next
	m.mu.Unlock()
	m.log.Error("tlsselect: acme: order failed", "id", j.id, "names", j.names, "failures", failures, "retry", retry, "err", err)
	m.wake()
}

// settle makes cert the certificate of id, due again at its renewal, and
// reports whether it replaced another and when it is due.
func (m *ACME) settle(id string, cert *tls.Certificate) (renewal bool, renewAt time.Time) {
	m.mu.Lock()
	c := m.certs[id]
	renewal = c.cert != nil && c.cert != cert
	c.cert, c.renewAt = cert, m.renewAt(cert)
	c.failures, c.lastErr, c.errAt = 0, nil, time.Time{}
	c.next = time.Time{}
	if coversAll(cert, c.names) { // the names may have changed meanwhile
		c.next = c.renewAt
	}
	c.ordering = false
	renewAt = c.renewAt
	m.mu.Unlock()
	return renewal, renewAt
}

// ready serves cert as j's certificate, logs msg and calls OnReady;
// only then is the schedule looked at again, so that the next due time
// is reckoned on a clock OnReady has seen the certificate at.
func (m *ACME) ready(j acmeJob, cert *tls.Certificate, msg string) {
	renewal, renewAt := m.settle(j.id, cert)
	m.log.Info(msg, "id", j.id, "names", j.names, "notAfter", cert.Leaf.NotAfter, "renewAt", renewAt)
	if m.cfg.OnReady != nil {
		m.cfg.OnReady(ACMEReady{ID: j.id, Names: slices.Clone(j.names), NotAfter: cert.Leaf.NotAfter, Renewal: renewal})
	}
	m.wake()
}

// seen has the certificate stored at key looked at again, unless an
// order of the manager's own is under way: another manager may have
// stored it.
func (m *ACME) seen(key string) {
	m.mu.Lock()
	kick := false
	for id, c := range m.certs {
		if !c.ordering && m.certKey(id) == key {
			c.next, kick = time.Time{}, true
		}
	}
	m.mu.Unlock()
	if kick {
		m.wake()
	}
}

// Stats returns the counters and the state of every managed certificate.
func (m *ACME) Stats() ACMEStats {
	st := ACMEStats{Orders: m.orders.Load(), Obtained: m.obtained.Load(), Failed: m.failed.Load(), Adopted: m.adopted.Load()}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range slices.Sorted(maps.Keys(m.certs)) {
		c := m.certs[id]
		s := ACMEStatus{ID: id, Names: slices.Clone(c.names), Ordering: c.ordering, NextOrder: c.next, Failures: c.failures, LastErrorAt: c.errAt}
		if c.cert != nil {
			s.NotAfter, s.RenewAt = c.cert.Leaf.NotAfter, c.renewAt
		}
		if c.lastErr != nil {
			s.LastError = c.lastErr.Error()
		}
		st.Certificates = append(st.Certificates, s)
	}
	return st
}
