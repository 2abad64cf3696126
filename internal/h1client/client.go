package h1client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Config holds a [Client]'s settings. The zero value dials without a
// timeout, waits for a response head as long as the context allows, has
// no TLS, and keeps DefaultMaxIdle idle connections per destination for
// DefaultIdleTimeout.
type Config struct {
	// ConnectTimeout covers the TCP connect and the TLS handshake; 0
	// means none beyond the context's.
	ConnectTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for the response head once
	// the request is written; 0 means none.
	ResponseHeaderTimeout time.Duration
	// TLS is the configuration TLS destinations are dialed with, cloned
	// per connection with the destination's server name when it names
	// none; nil refuses TLS destinations ([ErrNoTLS]). It must not be
	// modified after [New].
	TLS *tls.Config
	// MaxIdle bounds the idle connections kept per destination; 0 means
	// DefaultMaxIdle.
	MaxIdle int
	// IdleTimeout closes a connection idle for this long; 0 means
	// DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxIdleProxied bounds the destinations with a PROXY header
	// ([Destination.Proxy]) that keep an idle connection: each is one
	// client's, so without a bound the clients of the last IdleTimeout
	// would each hold an upstream connection. Past it a connection is
	// closed when its exchange ends. 0 means DefaultMaxIdleProxied.
	MaxIdleProxied int
	// MaxConnsPerDestination bounds the connections open to one address
	// (idle or carrying an exchange, whatever their server name or PROXY
	// header); a request past it waits for one to go idle or close, as
	// long as its context allows (see [WaitError]). 0 means no bound.
	MaxConnsPerDestination int
	// MaxPending bounds the requests waiting for a connection at once
	// (dialing, or waiting at MaxConnsPerDestination); past it a request
	// is refused at once with [ErrPending]. 0 means no bound.
	MaxPending int
}

// Defaults of [Config].
const (
	DefaultMaxIdle        = 1024
	DefaultIdleTimeout    = 90 * time.Second
	DefaultMaxIdleProxied = 1024
)

// Destination is where an exchange goes: an address and, over TLS, the
// server name it is made for. Connections are pooled per Destination, so
// that one made for a name never carries a request for another.
type Destination struct {
	// Addr is host:port.
	Addr string
	// TLS speaks TLS to Addr.
	TLS bool
	// ServerName is the TLS server name (SNI and, as Config.TLS checks,
	// the certificate's name); "" means Config.TLS.ServerName, or Addr's
	// host when that is empty too.
	ServerName string
	// Proxy is the PROXY protocol header every connection to the
	// destination starts with, before TLS; its zero value sends none.
	Proxy ProxyHeader
}

// ErrNoTLS refuses a TLS destination of a Client without Config.TLS.
var ErrNoTLS = errors.New("h1client: no TLS configuration for a TLS destination")

// Client is a pool of HTTP/1.1 connections: idle ones per [Destination],
// reused last in first out, closed after the idle timeout by one timer
// for the whole pool. It is safe for concurrent use; a connection carries
// one exchange at a time.
type Client struct {
	cfg    Config
	dialer net.Dialer

	mu      sync.Mutex
	idle    map[Destination]*idleList
	proxied int         // the keys of idle with a PROXY header; their lists are never empty
	sweep   *time.Timer // closes expired idle connections; nil until first idle
	armed   bool        // sweep will run

	dials atomic.Uint64

	slots     map[string]*connSlots // per address, with MaxConnsPerDestination; under mu
	pending   atomic.Int64          // requests waiting for a connection
	connWaits atomic.Uint64
}

// New returns a client for cfg.
func New(cfg Config) *Client {
	if cfg.MaxIdle <= 0 {
		cfg.MaxIdle = DefaultMaxIdle
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MaxIdleProxied <= 0 {
		cfg.MaxIdleProxied = DefaultMaxIdleProxied
	}
	return &Client{
		cfg:    cfg,
		dialer: net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second},
		idle:   make(map[Destination]*idleList),
		slots:  make(map[string]*connSlots),
	}
}

// get returns an idle connection to d, or a new one dialed by connectBy
// (zero: no bound beyond the connect timeout); see idleConn for bodyless.
// A request that finds no idle one waits for its connection (see
// limits.go).
func (cl *Client) get(ctx context.Context, d Destination, bodyless bool, connectBy time.Time) (*conn, error) {
	if c := cl.idleConn(d, bodyless); c != nil {
		return c, nil
	}
	if err := cl.beginWait(); err != nil {
		return nil, err
	}
	defer cl.pending.Add(-1)
	if cl.cfg.MaxConnsPerDestination > 0 {
		c, err := cl.reserve(ctx, d, bodyless)
		if c != nil || err != nil {
			return c, err
		}
	}
	cl.dials.Add(1)
	if !connectBy.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, connectBy)
		defer cancel()
	}
	nc, err := cl.dial(ctx, d)
	if err != nil {
		if cl.cfg.MaxConnsPerDestination > 0 {
			cl.release(d.Addr)
		}
		if err == ErrNoTLS {
			return nil, err // the client's configuration, not the upstream
		}
		return nil, &DialError{Err: err}
	}
	if cl.cfg.MaxConnsPerDestination > 0 {
		nc = &slotConn{Conn: nc, cl: cl, addr: d.Addr}
	}
	return newConn(nc, cl, d), nil
}

// idleConn returns an idle connection to d, or nil. It skips (and
// closes) idle connections the upstream closed or wrote on: bytes there
// are no answer to the next request, and parsed as one they would
// answer it wrongly. A request without a body on plain TCP (bodyless,
// and the connection's raw path) is checked as it is written, in the
// same read wait (writeRead); the others are checked here with a peek.
func (cl *Client) idleConn(d Destination, bodyless bool) *conn {
	now := time.Now()
	cl.mu.Lock()
	l := cl.idle[d]
	for l != nil && len(l.conns) > 0 {
		list := l.conns
		c := list[len(list)-1]
		list[len(list)-1] = nil
		l.conns = list[:len(list)-1]
		cl.dropEmpty(d, l)
		if now.Sub(c.idle) >= cl.cfg.IdleTimeout {
			cl.mu.Unlock()
			c.nc.Close()
			cl.mu.Lock()
			l = cl.idle[d]
			continue
		}
		if !bodyless || c.raw == nil {
			cl.mu.Unlock()
			if !closedWhileIdle(c.nc) {
				return c
			}
			c.nc.Close()
			cl.mu.Lock()
			l = cl.idle[d]
			continue
		}
		cl.mu.Unlock()
		return c
	}
	cl.mu.Unlock()
	return nil
}

// DialError is a failure to make a connection to the upstream: the TCP
// connect (refused, reset, timed out), the PROXY header or the TLS
// handshake. Nothing of the request was written on the connection that
// failed, so the request may go elsewhere whatever its method; one that
// had first failed on a stale idle connection is sent again only when it
// could be, as [Client.Do] says. Err is the dial's own error, which
// Unwrap returns for errors.Is and errors.As.
type DialError struct{ Err error }

func (e *DialError) Error() string { return e.Err.Error() }

// Unwrap returns the dial's error.
func (e *DialError) Unwrap() error { return e.Err }

// Dials returns how many connections the client dialed (or tried to).
func (cl *Client) Dials() uint64 { return cl.dials.Load() }

// dial connects to d: TCP, and over TLS the handshake for its server
// name, both within the connect timeout.
func (cl *Client) dial(ctx context.Context, d Destination) (net.Conn, error) {
	if d.Proxy.Version != 0 {
		return cl.dialProxy(ctx, d)
	}
	if !d.TLS {
		return cl.dialer.DialContext(ctx, "tcp", d.Addr)
	}
	if cl.cfg.TLS == nil {
		return nil, ErrNoTLS
	}
	cfg := cl.cfg.TLS.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName = d.ServerName
		if cfg.ServerName == "" {
			cfg.ServerName = HostOnly(d.Addr)
		}
	}
	if t := cl.dialer.Timeout; t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	td := tls.Dialer{NetDialer: &cl.dialer, Config: cfg}
	return td.DialContext(ctx, "tcp", d.Addr)
}

// tlsConfig returns the TLS configuration of a connection to d.
func (cl *Client) tlsConfig(d Destination) *tls.Config {
	cfg := cl.cfg.TLS.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName = d.ServerName
		if cfg.ServerName == "" {
			cfg.ServerName = HostOnly(d.Addr)
		}
	}
	return cfg
}

// dialProxy connects to d and writes its PROXY header, then over TLS
// makes the handshake, all within the connect timeout.
func (cl *Client) dialProxy(ctx context.Context, d Destination) (net.Conn, error) {
	if d.TLS && cl.cfg.TLS == nil {
		return nil, ErrNoTLS
	}
	if t := cl.dialer.Timeout; t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	nc, err := cl.dialer.DialContext(ctx, "tcp", d.Addr)
	if err != nil {
		return nil, err
	}
	if err := WriteProxyHeader(ctx, nc, d.Proxy); err != nil {
		nc.Close()
		// A dial error: nothing of the request left.
		return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: nc.RemoteAddr(), Err: fmt.Errorf("h1client: PROXY header: %w", err)}
	}
	if !d.TLS {
		return nc, nil
	}
	tc := tls.Client(nc, cl.tlsConfig(d))
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	return tc, nil
}

// HostOnly returns the host of a host[:port], without brackets.
func HostOnly(h string) string {
	if len(h) > 0 && h[0] == '[' {
		for i := 1; i < len(h); i++ {
			if h[i] == ']' {
				return h[1:i]
			}
		}
		return h
	}
	colons, last := 0, -1
	for i := 0; i < len(h); i++ {
		if h[i] == ':' {
			colons, last = colons+1, i
		}
	}
	if colons == 1 {
		return h[:last]
	}
	return h
}

// idleList is a destination's idle connections, oldest first. It is
// kept in the pool's map by pointer, so that taking a connection or
// putting one back looks the destination up once; its first connection
// needs no allocation beside the list's.
type idleList struct {
	conns []*conn
	first [1]*conn
}

func newIdleList() *idleList {
	l := new(idleList)
	l.conns = l.first[:0]
	return l
}

// dropEmpty removes the idle list l of d, with the lock held, when it is
// empty and d has a PROXY header: such a key goes with its last
// connection, so that the keys count the clients that hold one.
func (cl *Client) dropEmpty(d Destination, l *idleList) {
	if len(l.conns) == 0 && d.Proxy.Version != 0 {
		delete(cl.idle, d)
		cl.proxied--
	}
}

// put makes c idle, or closes it when it holds unread bytes (an upstream
// that sent more than its response) or the pool is full.
func (cl *Client) put(c *conn) {
	if c.r != c.w {
		c.nc.Close()
		return
	}
	c.r, c.w = 0, 0
	if len(c.rbuf) > keepBuffer {
		c.rbuf = make([]byte, readBuffer)
	}
	if cap(c.wbuf) > keepBuffer {
		c.wbuf = make([]byte, 0, writeBuffer)
	}
	c.used, c.idle = true, time.Now()
	cl.mu.Lock()
	l := cl.idle[c.key]
	n := 0
	if l != nil {
		n = len(l.conns)
	}
	proxied := c.key.Proxy.Version != 0
	if n < cl.cfg.MaxIdle && (!proxied || n > 0 || cl.proxied < cl.cfg.MaxIdleProxied) {
		if l == nil {
			// A key with a PROXY header is in the map only while its
			// list holds a connection.
			l = newIdleList()
			cl.idle[c.key] = l
			if proxied {
				cl.proxied++
			}
		}
		l.conns = append(l.conns, c)
		cl.idled(c.key.Addr)
		c = nil
		if !cl.armed {
			cl.armed = true
			if cl.sweep == nil {
				cl.sweep = time.AfterFunc(cl.cfg.IdleTimeout, cl.sweepIdle)
			} else {
				cl.sweep.Reset(cl.cfg.IdleTimeout)
			}
		}
	}
	cl.mu.Unlock()
	if c != nil {
		c.nc.Close()
	}
}

// sweepIdle closes the connections idle for the idle timeout (the oldest
// are first in each list), and runs again while any stay idle: one timer
// per pool, not per connection, and none while the pool is empty.
func (cl *Client) sweepIdle() {
	now := time.Now()
	var expired []*conn
	cl.mu.Lock()
	for k, l := range cl.idle {
		list := l.conns
		n := 0
		for n < len(list) && now.Sub(list[n].idle) >= cl.cfg.IdleTimeout {
			n++
		}
		if n > 0 {
			expired = append(expired, list[:n]...)
			clear(list[:n])
			list = list[n:]
		}
		if len(list) == 0 {
			delete(cl.idle, k)
			if k.Proxy.Version != 0 {
				cl.proxied--
			}
			continue
		}
		l.conns = list
	}
	cl.armed = len(cl.idle) > 0
	if cl.armed {
		cl.sweep.Reset(cl.cfg.IdleTimeout / 2)
	}
	cl.mu.Unlock()
	for _, c := range expired {
		c.nc.Close()
	}
}

// CloseIdle closes the idle connections; those in use close when their
// exchange ends.
func (cl *Client) CloseIdle() {
	cl.mu.Lock()
	idle := cl.idle
	cl.idle, cl.proxied = make(map[Destination]*idleList), 0
	cl.mu.Unlock()
	for _, l := range idle {
		for _, c := range l.conns {
			c.nc.Close()
		}
	}
}
