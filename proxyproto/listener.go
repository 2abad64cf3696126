package proxyproto

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paduraksa/paduraksa/internal/ipaddr"
)

// Defaults applied by [NewListener] to zero [Config] fields.
const (
	// DefaultHeaderTimeout is the time a client has, from accept, to
	// deliver its header. The specification asks for at least 3 s, to cover
	// a TCP retransmission.
	DefaultHeaderTimeout = 5 * time.Second
	// DefaultMaxPending is the default for [Config.MaxPending].
	DefaultMaxPending = 1024
)

// Config configures a [Listener]. It is a plain value: the Listener keeps
// its own copy, so changing a Config after [NewListener] has no effect.
type Config struct {
	// TrustedProxies lists the source prefixes of the proxies allowed to
	// send a header. A connection from anywhere else is closed at once,
	// before any byte is read. An IPv4-mapped IPv6 peer is matched as its
	// IPv4 address, an IPv4-mapped prefix of /96 or longer as the IPv4
	// prefix it maps (NewListener refuses a shorter one), and an IPv6
	// prefix holds no IPv4 peer (::/0 is all of IPv6). Required: an empty
	// list is refused by NewListener. Peers that are not TCP (a UNIX socket
	// listener) are never trusted.
	TrustedProxies []netip.Prefix

	// HeaderTimeout bounds the time from accept until the header is
	// complete; a header dribbled slowly cannot extend it. Zero means
	// DefaultHeaderTimeout; a negative value disables the timeout, which
	// leaves slow clients holding Config.MaxPending slots.
	HeaderTimeout time.Duration

	// MaxHeaderLength caps the length of a v2 header, a resource limit:
	// longer headers are refused with ErrHeaderTooLarge. Zero means
	// MaxV2Len, which accepts every valid header.
	MaxHeaderLength int

	// MaxPending bounds the connections accepted from the socket but not
	// yet returned by Accept (header in flight, or waiting for Accept).
	// When it is reached the Listener stops accepting from the socket until
	// a slot frees. Zero means DefaultMaxPending.
	MaxPending int

	// Logger receives a Debug record for each refused connection. Nil
	// discards them.
	Logger *slog.Logger
}

// Listener wraps a [net.Listener] whose clients are PROXY protocol proxies.
// Accept returns only [*Conn] values whose header is complete and valid;
// the header is mandatory.
//
// Each connection from a trusted proxy has its header read by its own
// goroutine, which hands the ready Conn to Accept through a channel; a
// background goroutine accepts from the socket. So a client that stalls
// in its header never delays another client's Accept, and RemoteAddr is
// final, never blocking, when Accept returns the Conn. Connections that fail
// (untrusted source, missing or invalid header, timeout) are closed and
// never seen by Accept, so they cannot stop an accept loop such as
// [net/http.Server.Serve]. The background goroutine starts with the first
// Accept and ends when the Listener is closed or the socket fails; header
// goroutines end by their deadline or at Close, which closes the
// connections they hold.
//
// A Listener is safe for concurrent use. Make it with [NewListener]: a
// zero Listener accepts nothing (Accept returns [ErrNotNew] and starts no
// goroutine), and its Close and Addr do nothing.
type Listener struct {
	inner     net.Listener
	trusted   ipaddr.PrefixSet
	timeout   time.Duration
	maxLen    int
	log       *slog.Logger
	start     sync.Once
	ctx       context.Context
	cancel    context.CancelFunc
	slots     chan struct{}
	ready     chan *Conn
	errc      chan error
	done      chan struct{}
	acceptErr error // set before done is closed

	untrusted, invalid, timedOut atomic.Uint64
}

// ListenerStats count the connections a [Listener] refused, by reason.
type ListenerStats struct {
	// Untrusted were from a source outside Config.TrustedProxies;
	// Invalid sent a header that is missing, malformed or too large;
	// Timeout did not complete it within Config.HeaderTimeout.
	Untrusted, Invalid, Timeout uint64
}

// Stats returns the listener's refusal counts.
func (l *Listener) Stats() ListenerStats {
	return ListenerStats{Untrusted: l.untrusted.Load(), Invalid: l.invalid.Load(), Timeout: l.timedOut.Load()}
}

var _ net.Listener = (*Listener)(nil)

// NewListener returns a Listener accepting from inner. It validates cfg and
// reports every problem at once.
func NewListener(inner net.Listener, cfg Config) (*Listener, error) {
	var errs []error
	if inner == nil {
		errs = append(errs, errors.New("proxyproto: NewListener: nil net.Listener"))
	}
	if len(cfg.TrustedProxies) == 0 {
		errs = append(errs, errors.New("proxyproto: Config.TrustedProxies: empty, every connection would be refused"))
	}
	for i, p := range cfg.TrustedProxies {
		if err := ipaddr.CheckPrefix(p); err != nil {
			errs = append(errs, fmt.Errorf("proxyproto: Config.TrustedProxies[%d]: %w", i, err))
		}
	}
	if cfg.MaxHeaderLength < 0 || cfg.MaxHeaderLength > MaxV2Len {
		errs = append(errs, fmt.Errorf("proxyproto: Config.MaxHeaderLength: %d not in [0, %d]", cfg.MaxHeaderLength, MaxV2Len))
	}
	if cfg.MaxPending < 0 {
		errs = append(errs, fmt.Errorf("proxyproto: Config.MaxPending: %d is negative", cfg.MaxPending))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.HeaderTimeout == 0 {
		cfg.HeaderTimeout = DefaultHeaderTimeout
	}
	if cfg.MaxHeaderLength == 0 {
		cfg.MaxHeaderLength = MaxV2Len
	}
	if cfg.MaxPending == 0 {
		cfg.MaxPending = DefaultMaxPending
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Listener{
		inner:   inner,
		trusted: ipaddr.NewPrefixSet(cfg.TrustedProxies),
		timeout: cfg.HeaderTimeout,
		maxLen:  cfg.MaxHeaderLength,
		log:     cfg.Logger,
		ctx:     ctx,
		cancel:  cancel,
		slots:   make(chan struct{}, cfg.MaxPending),
		ready:   make(chan *Conn),
		errc:    make(chan error),
		done:    make(chan struct{}),
	}, nil
}

// Accept waits for the next connection whose header is complete and valid
// and returns it as a [*Conn]. It returns an error only for errors of the
// underlying listener; after Close it returns an error matching
// [net.ErrClosed].
func (l *Listener) Accept() (net.Conn, error) {
	if l.inner == nil {
		return nil, ErrNotNew
	}
	l.start.Do(func() { go l.acceptLoop() })
	select {
	case c := <-l.ready:
		return c, nil
	case err := <-l.errc:
		return nil, err
	case <-l.done:
		return nil, l.acceptErr
	}
}

// Close stops accepting, closes the underlying listener and the
// connections whose header is still in flight or not yet accepted.
// Connections already returned by Accept are not affected.
func (l *Listener) Close() error {
	if l.inner == nil {
		return nil
	}
	l.cancel()
	return l.inner.Close()
}

// Addr returns the underlying listener's address (nil for a zero
// Listener).
func (l *Listener) Addr() net.Addr {
	if l.inner == nil {
		return nil
	}
	return l.inner.Addr()
}

// ErrNotNew is the error of Accept on a zero [Listener], one not made by
// [NewListener].
var ErrNotNew = errors.New("proxyproto: a Listener not made by NewListener accepts nothing")

func (l *Listener) acceptLoop() {
	defer close(l.done)
	defer l.cancel()
	for {
		select {
		case l.slots <- struct{}{}:
		case <-l.ctx.Done():
			l.acceptErr = net.ErrClosed
			return
		}
		raw, err := l.inner.Accept()
		if err != nil {
			<-l.slots
			if errors.Is(err, net.ErrClosed) || l.ctx.Err() != nil {
				l.acceptErr = err
				return
			}
			// Hand the error to Accept (the caller decides on backoff) and
			// go on; waiting for Accept paces a persistent error.
			select {
			case l.errc <- err:
				continue
			case <-l.ctx.Done():
				l.acceptErr = net.ErrClosed
				return
			}
		}
		accepted := time.Now()
		if !l.isTrusted(raw.RemoteAddr()) {
			l.untrusted.Add(1)
			l.log.Debug("proxyproto: connection from untrusted source closed", "remote", raw.RemoteAddr())
			raw.Close()
			<-l.slots
			continue
		}
		go l.handshake(raw, accepted)
	}
}

// handshake reads the header of raw, accepted at accepted, and hands the
// Conn to Accept. It owns raw until then.
func (l *Listener) handshake(raw net.Conn, accepted time.Time) {
	defer func() { <-l.slots }()
	var deadline time.Time
	if l.timeout > 0 {
		deadline = accepted.Add(l.timeout)
	}
	// Close interrupts the read through the deadline.
	stop := context.AfterFunc(l.ctx, func() { raw.SetReadDeadline(time.Unix(1, 0)) })
	c, err := ReadConn(raw, deadline, l.maxLen)
	if !stop() {
		raw.Close()
		return
	}
	if err != nil {
		if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
			l.timedOut.Add(1)
		} else {
			l.invalid.Add(1)
		}
		l.log.Debug("proxyproto: connection without a valid header closed", "remote", raw.RemoteAddr(), "err", err)
		raw.Close()
		return
	}
	select {
	case l.ready <- c:
	case <-l.ctx.Done():
		raw.Close()
	}
}

// isTrusted reports whether a is in a trusted prefix.
func (l *Listener) isTrusted(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return false
	}
	return l.trusted.Contains(ta.AddrPort().Addr())
}
