package edge

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/paduraksa/paduraksa/connlimit"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/listenlimits"
	"github.com/paduraksa/paduraksa/proxyproto"
)

// Config describes the listeners. It is a plain value; [Start] validates
// it and copies what it keeps.
//
// Each listener (plain HTTP, HTTPS over TCP, HTTP/3 over UDP) is named
// either by an address, which Start binds, or by a socket the embedder
// bound: one inherited from the process it replaces in a binary upgrade,
// or handed over by systemd's socket activation (net.FileListener,
// net.FilePacketConn). Both go through the same stack.
type Config struct {
	// Handler serves every request; required.
	Handler http.Handler

	// HTTP is the address of the plain HTTP listener ("127.0.0.1:8080");
	// empty means none, unless HTTPListener is set.
	HTTP string
	// HTTPListener serves plain HTTP on a listener the embedder bound;
	// nil means none, unless HTTP is set. Not with HTTP.
	HTTPListener net.Listener

	// HTTPS is the address of the TLS listener over TCP (HTTP/1.1 and
	// HTTP/2) and, with HTTP3, of the QUIC one on the same port of UDP;
	// empty means none, unless HTTPSListener is set.
	HTTPS string
	// HTTPSListener serves TLS on a listener the embedder bound; nil
	// means none, unless HTTPS is set. Not with HTTPS. With HTTP3 and no
	// HTTP3Conn, UDP is bound on its address, which must then be TCP.
	HTTPSListener net.Listener
	// TLS is the server's TLS config; required with HTTPS or
	// HTTPSListener, and for HTTP/3 unless QUICTLS is set. Set its
	// GetConfigForClient to pick a prebuilt config per SNI (a
	// tlsselect.Selector) and give each returned config its own
	// NextProtos. It is not modified.
	TLS *tls.Config

	// HTTP3 serves QUIC on the UDP port of the HTTPS listener's address.
	HTTP3 bool
	// HTTP3Conn serves QUIC on a UDP socket the embedder bound, whether
	// HTTP3 is set or not; nil means HTTP3 decides.
	HTTP3Conn net.PacketConn
	// QUICTLS is the TLS config of the QUIC listener; nil means TLS. A
	// per-SNI table keeps QUIC's configs apart from TCP's (a host without
	// HTTP/3 is refused there): pass tlsselect.Selector's QUICConfig. The
	// listener sets h3 on whatever it returns.
	QUICTLS *tls.Config

	// ProxyProtocol, when its TrustedProxies is not empty, makes the
	// load balancers it names send a PROXY header on every TCP
	// connection (plain and TLS), and refuses every other peer. Its
	// Logger, when nil, is Logger.
	ProxyProtocol proxyproto.Config
	// Connections is the deny list and per-address cap, on TCP and QUIC;
	// the zero value gives connlimit's defaults. Its Logger, when nil, is
	// Logger.
	Connections connlimit.Config
	// Limits are the listener limits; the zero value gives listenlimits'
	// defaults.
	Limits listenlimits.Limits
	// QUIC overrides the QUIC connection settings; nil means
	// DefaultQUICConfig.
	QUIC *quic.Config

	// OnHandshakeFailure, when set, is told of each TLS handshake over
	// TCP that failed, after [Stats].TLSHandshakeFailures counted it and
	// before the connection is closed, on the connection's goroutine; it
	// must not block. QUIC handshakes are quic-go's and are not reported.
	// Nil means none.
	OnHandshakeFailure func(HandshakeFailure)

	// Logger receives the servers' own errors and the connection stage's
	// refusals (Debug); nil discards them.
	Logger *slog.Logger
}

// HandshakeFailure is a TLS handshake over TCP that failed, as
// Config.OnHandshakeFailure is told of it.
type HandshakeFailure struct {
	// Remote is the client's address as its connection reports it (under
	// PROXY protocol, the PROXY source); the zero AddrPort when that is
	// not an IP address and port.
	Remote netip.AddrPort
	// Reason is why, as net/http's server reports it: crypto/tls's error
	// ("tls: client offered only unsupported versions: [302 301]"), or a
	// read that failed or passed its deadline.
	Reason string
}

// DefaultQUICConfig returns the QUIC settings used when Config.QUIC is
// nil: no 0-RTT (early data replays are the application's risk), a 10 s
// handshake, the listener limits' idle timeout, and HTTP/2's stream limit.
func DefaultQUICConfig(l listenlimits.Limits) *quic.Config {
	r := l.WithDefaults()
	return &quic.Config{
		HandshakeIdleTimeout: max(r.TLSHandshakeTimeout, time.Second),
		MaxIdleTimeout:       max(r.IdleTimeout, time.Second),
		MaxIncomingStreams:   int64(max(r.HTTP2MaxConcurrentStreams, 1)),
		Allow0RTT:            false,
	}
}

// Server is a running edge, made by [Start]. The zero Server serves
// nothing: Addr returns nil, Err never delivers, Stats are zero, and
// Shutdown and Close do nothing.
type Server struct {
	log       *slog.Logger
	limiter   *connlimit.Limiter
	onFailure func(HandshakeFailure)
	servers   []*http.Server
	lns       []net.Listener // closed by closeAll: a server only closes those it served
	h3        *http3.Server
	udp       net.PacketConn
	quicTr    *quic.Transport
	addrs     map[string]net.Addr
	wg        sync.WaitGroup
	errOnce   sync.Once
	err       chan error
	shutdown  sync.Once
	counts    counts

	// Handlers in flight, upgrades included (net/http's Shutdown does
	// not wait for a hijacked connection): Shutdown waits for inflight to
	// reach zero, told by idle once draining is set.
	inflight paddedInt64 // on a cache line of its own: every request writes it
	draining atomic.Bool
	idle     chan struct{}
	h3Once   sync.Once

	// Drain's first phase: HTTP/1.x answers carry Connection: close,
	// and connClosed tells of each TCP connection that ends.
	closing    atomic.Bool
	connClosed chan struct{}
}

// Errors of Start.
var (
	ErrNoHandler        = errors.New("edge: no handler")
	ErrNoListener       = errors.New("edge: no listener: neither HTTP, HTTPS nor HTTP/3 is set")
	ErrNoTLS            = errors.New("edge: HTTPS or HTTP/3 without a TLS config")
	ErrHTTP3            = errors.New("edge: HTTP3 without HTTPS or HTTP3Conn")
	ErrAddressAndSocket = errors.New("edge: a listener given both as an address and as a socket")
)

// Start validates cfg, binds every listener it names by address, and
// serves them and the sockets it was given in the background.
//
// On error nothing Start bound stays bound, and the sockets cfg gave are
// left open, as the caller's still. Once Start returned a Server, those
// sockets are the Server's: Shutdown and Close close them (a process
// that hands them on to another keeps a duplicate, as os.File's Fd and
// net.FileListener make).
func Start(cfg Config) (*Server, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	limiter, err := connlimit.New(withLogger(cfg.Connections, cfg.Logger))
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sk, err := bind(&cfg)
	if err != nil {
		return nil, err
	}
	s := &Server{log: log, limiter: limiter, onFailure: cfg.OnHandshakeFailure, addrs: map[string]net.Addr{}, err: make(chan error, 1), idle: make(chan struct{}, 1), connClosed: make(chan struct{}, 1)}
	if err := s.build(&cfg, sk); err != nil {
		s.abandon(sk)
		return nil, err
	}
	return s, nil
}

// check validates cfg and returns every problem at once.
func (cfg *Config) check() error {
	var errs []error
	if cfg.Handler == nil {
		errs = append(errs, ErrNoHandler)
	}
	if cfg.HTTP != "" && cfg.HTTPListener != nil {
		errs = append(errs, fmt.Errorf("%w: HTTP and HTTPListener", ErrAddressAndSocket))
	}
	if cfg.HTTPS != "" && cfg.HTTPSListener != nil {
		errs = append(errs, fmt.Errorf("%w: HTTPS and HTTPSListener", ErrAddressAndSocket))
	}
	plain, https := cfg.HTTP != "" || cfg.HTTPListener != nil, cfg.HTTPS != "" || cfg.HTTPSListener != nil
	h3 := cfg.HTTP3 || cfg.HTTP3Conn != nil
	if !plain && !https && !h3 {
		errs = append(errs, ErrNoListener)
	}
	if https && cfg.TLS == nil || h3 && cfg.TLS == nil && cfg.QUICTLS == nil {
		errs = append(errs, ErrNoTLS)
	}
	if cfg.HTTP3 && cfg.HTTP3Conn == nil && !https {
		errs = append(errs, ErrHTTP3)
	}
	if err := cfg.Limits.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := cfg.Connections.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func withLogger(c connlimit.Config, log *slog.Logger) connlimit.Config {
	if c.Logger == nil {
		c.Logger = log
	}
	return c
}

// sockets are the listening sockets a Server serves: the embedder's and
// those Start bound.
type sockets struct {
	http, https net.Listener
	h3          net.PacketConn
	bound       []io.Closer // what Start bound: closed when it fails
}

func (sk *sockets) closeBound() {
	for _, c := range sk.bound {
		c.Close()
	}
}

// bind returns the sockets of cfg, binding those named by address. On
// error it closes what it bound.
func bind(cfg *Config) (*sockets, error) {
	sk := &sockets{http: cfg.HTTPListener, https: cfg.HTTPSListener, h3: cfg.HTTP3Conn}
	listen := func(addr string) (net.Listener, error) {
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			sk.bound = append(sk.bound, ln)
		}
		return ln, err
	}
	var err error
	if cfg.HTTP != "" {
		if sk.http, err = listen(cfg.HTTP); err != nil {
			sk.closeBound()
			return nil, err
		}
	}
	if cfg.HTTPS != "" && cfg.HTTP3 && sk.h3 == nil {
		if sk.https, sk.h3, err = listenBoth(cfg.HTTPS); err != nil {
			sk.closeBound()
			return nil, err
		}
		sk.bound = append(sk.bound, sk.https, sk.h3)
		return sk, nil
	}
	if cfg.HTTPS != "" {
		if sk.https, err = listen(cfg.HTTPS); err != nil {
			sk.closeBound()
			return nil, err
		}
	}
	if cfg.HTTP3 && sk.h3 == nil {
		udp, err := listenUDP(sk.https.Addr())
		if err != nil {
			sk.closeBound()
			return nil, err
		}
		sk.h3 = udp
		sk.bound = append(sk.bound, udp)
	}
	return sk, nil
}

// listenBoth binds TCP on addr and UDP on the port TCP got. With port 0
// the kernel picks the TCP port alone, and another program may hold that
// port's UDP side: then both are tried again on a new port, a few times,
// before the error is returned.
func listenBoth(addr string) (net.Listener, *net.UDPConn, error) {
	_, port, _ := net.SplitHostPort(addr)
	for try := 0; ; try++ {
		ln, err := listenTCP("tcp", addr)
		if err != nil {
			return nil, nil, err
		}
		udp, err := listenUDP(ln.Addr())
		if err == nil {
			return ln, udp, nil
		}
		ln.Close()
		if port != "0" || try == 15 || !errors.Is(err, syscall.EADDRINUSE) {
			return nil, nil, err
		}
	}
}

// listenTCP is net.Listen; a test picks the port the kernel would.
var listenTCP = net.Listen

// listenUDP binds UDP on the port of the HTTPS listener's address.
func listenUDP(a net.Addr) (*net.UDPConn, error) {
	at, ok := a.(*net.TCPAddr)
	if !ok {
		return nil, fmt.Errorf("edge: HTTP/3 on the HTTPS port: the HTTPS listener's address %s is not TCP; give HTTP3Conn", a)
	}
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: at.IP, Port: at.Port, Zone: at.Zone})
	if err != nil {
		return nil, fmt.Errorf("edge: HTTP/3 on the HTTPS port: %w", err)
	}
	return udp, nil
}

// build stacks the servers on the sockets and starts serving them; it
// starts nothing when it fails.
func (s *Server) build(cfg *Config, sk *sockets) error {
	var starts []func()
	if sk.http != nil {
		srv, ln, err := s.tcp(cfg, sk.http, kindHTTP, cfg.Limits)
		if err != nil {
			return err
		}
		starts = append(starts, func() { s.serve(func() error { return srv.Serve(ln) }) })
	}
	if sk.https != nil {
		// Idle connections under crypto/tls cannot be parked, so the
		// listener needs no accepting goroutine for it.
		lim := cfg.Limits
		lim.IdleRelease = listenlimits.Off
		srv, ln, err := s.tcp(cfg, sk.https, kindHTTPS, lim)
		if err != nil {
			return err
		}
		srv.TLSConfig = cfg.TLS.Clone()
		starts = append(starts, func() { s.serve(func() error { return srv.ServeTLS(ln, "", "") }) })
	}
	if sk.h3 != nil {
		ql, err := s.quic(cfg, sk.h3)
		if err != nil {
			return err
		}
		starts = append(starts, func() { s.serve(func() error { return s.h3.ServeListener(ql) }) })
	}
	for _, start := range starts {
		start()
	}
	return nil
}

// abandon undoes a build that failed: it closes what Start bound and
// leaves the embedder's sockets open. Nothing was served and the QUIC
// transport, built last, did not start, so the listener wrappers hold no
// goroutine and no connection.
func (s *Server) abandon(sk *sockets) { sk.closeBound() }

// tcp builds the server of one TCP listener: the listener stack of the
// package documentation on raw, net/http with the listener limits lim;
// kind says which listener it is.
func (s *Server) tcp(cfg *Config, raw net.Listener, kind int, lim listenlimits.Limits) (*http.Server, net.Listener, error) {
	ln := raw
	if len(cfg.ProxyProtocol.TrustedProxies) > 0 {
		pc := cfg.ProxyProtocol
		if pc.Logger == nil {
			pc.Logger = cfg.Logger
		}
		pln, err := proxyproto.NewListener(ln, pc)
		if err != nil {
			return nil, nil, fmt.Errorf("edge: ProxyProtocol: %w", err)
		}
		ln = pln
		s.counts.pp = append(s.counts.pp, pln)
	}
	lln := lim.Listener(&connlimit.Listener{Listener: ln, Limiter: s.limiter})
	s.counts.limits[kind] = lln
	ln = lln
	s.lns = append(s.lns, ln)
	s.addrs[listenerNames[kind]] = raw.Addr()
	srv := &http.Server{
		Handler:     s.track(lim.Handler(cfg.Handler)),
		ConnContext: gate.ConnContext,
		ErrorLog:    log.New(errorLog{s, slog.NewLogLogger(s.log.Handler(), slog.LevelWarn).Writer()}, "", 0),
		ConnState:   s.connState(kind),
	}
	if err := lim.Apply(srv); err != nil {
		return nil, nil, err
	}
	s.servers = append(s.servers, srv)
	return srv, ln, nil
}

// quic builds the HTTP/3 server on udp: connlimit's first QUIC step on
// the transport, the second in the HTTP/3 server's ConnContext.
func (s *Server) quic(cfg *Config, udp net.PacketConn) (*quic.EarlyListener, error) {
	tr := &quic.Transport{Conn: udp, ConnContext: s.limiter.QUICConnContext}
	qc := cfg.QUIC
	if qc == nil {
		qc = DefaultQUICConfig(cfg.Limits)
	}
	tc := cfg.QUICTLS
	if tc == nil {
		tc = cfg.TLS
	}
	// ListenEarly fails only before the transport has started (bad
	// settings), so a failure leaves nothing to close.
	ql, err := tr.ListenEarly(http3.ConfigureTLSConfig(tc.Clone()), qc)
	if err != nil {
		return nil, fmt.Errorf("edge: HTTP/3: %w", err)
	}
	s.udp, s.quicTr = udp, tr
	s.addrs[ListenerHTTP3] = udp.LocalAddr()
	lim := cfg.Limits.WithDefaults()
	s.h3 = &http3.Server{
		Handler:        s.track(cfg.Limits.Handler(cfg.Handler)),
		MaxHeaderBytes: max(lim.MaxHeaderBytes, 0),
		IdleTimeout:    max(lim.IdleTimeout, 0),
		Logger:         s.log,
		ConnContext: func(ctx context.Context, c *quic.Conn) context.Context {
			s.quicOpened(c)
			ctx = s.limiter.HTTP3ConnContext(ctx, c)
			return gate.WithConnInfo(ctx, quicConnInfo(c))
		},
	}
	return ql, nil
}

// quicConnInfo is what the gate knows of a QUIC connection: its peer, and
// TLS 1.3 with h3.
func quicConnInfo(c *quic.Conn) *gate.ConnInfo {
	ci := &gate.ConnInfo{HTTP3: true, TLSVersion: tls.VersionTLS13, ALPN: http3.NextProtoH3}
	if ua, ok := c.RemoteAddr().(*net.UDPAddr); ok {
		ap := ua.AddrPort()
		ci.Peer = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	return ci
}

func (s *Server) serve(run func() error) {
	s.wg.Go(func() {
		if err := run(); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, quic.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			s.errOnce.Do(func() { s.err <- err })
		}
	})
}

// Addr returns the address of a listener: ListenerHTTP, ListenerHTTPS or
// ListenerHTTP3; nil when it is not served.
func (s *Server) Addr(name string) net.Addr { return s.addrs[name] }

// Err delivers the first error a server stopped with, other than by
// Shutdown or Close.
func (s *Server) Err() <-chan error { return s.err }

// Limiter returns the connection stage's limiter, for its counters.
func (s *Server) Limiter() *connlimit.Limiter { return s.limiter }

// paddedInt64 is an atomic counter alone on its cache line.
type paddedInt64 struct {
	_ [64]byte
	atomic.Int64
	_ [56]byte
}

// track counts the calls of h in flight, for Shutdown. An upgrade's
// handler runs until its tunnel ends, so an upgrade is in flight until
// then.
func (s *Server) track(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.inflight.Add(1)
		defer s.untrack()
		if r.ProtoMajor == 1 && s.closing.Load() {
			w.Header().Set("Connection", "close") // Drain: this connection's last answer
		}
		h.ServeHTTP(w, r)
	})
}

func (s *Server) untrack() {
	if s.inflight.Add(-1) == 0 && s.draining.Load() {
		select {
		case s.idle <- struct{}{}:
		default:
		}
	}
}

// InFlight returns the number of requests being handled, upgrades
// (WebSockets, CONNECT tunnels) included until their tunnel ends.
func (s *Server) InFlight() int64 { return s.inflight.Load() }

// waitIdle waits until no handler is in flight or ctx is done.
func (s *Server) waitIdle(ctx context.Context) error {
	s.draining.Store(true)
	for s.inflight.Load() > 0 {
		select {
		case <-s.idle:
		case <-ctx.Done():
			return fmt.Errorf("edge: %d requests still in flight: %w", s.inflight.Load(), ctx.Err())
		}
	}
	return nil
}

// Shutdown stops accepting on every listener, waits for requests in
// flight until ctx is done, then closes what is left. Requests in flight
// include upgrades (WebSockets and other tunnels, which net/http's own
// Shutdown does not wait for) until their tunnel ends; one still open
// when ctx ends is its handler's, which Shutdown does not close (a
// process that exits after Shutdown ends it). It returns ctx's error when
// it had to cut connections or leave upgrades open. After Shutdown or
// Close it does nothing.
func (s *Server) Shutdown(ctx context.Context) error {
	var err error
	s.shutdown.Do(func() {
		var wg sync.WaitGroup
		errs := make([]error, len(s.servers)+2)
		for i, srv := range s.servers {
			wg.Go(func() { errs[i] = srv.Shutdown(ctx) })
		}
		if s.h3 != nil {
			wg.Go(func() { errs[len(s.servers)] = s.h3.Shutdown(ctx) })
		}
		wg.Wait()
		errs[len(s.servers)+1] = s.waitIdle(ctx)
		s.closeAll()
		s.wg.Wait()
		err = errors.Join(errs...)
	})
	return err
}

// Drain is Shutdown for a server that hands its sockets to another
// process or leaves a load balancer's rotation. Shutdown closes idle
// HTTP/1.x connections at once, and a client that sent a request on one
// as it closed sees a reset (wrk, a keep-alive loop: a client only
// retries such a request when it knows it idempotent). Drain first stops
// accepting on the TCP listeners and answers the next request on every
// HTTP/1.x connection with Connection: close, so the client closes it
// knowing, until no TCP connection is left or linger has passed (HTTP/2
// connections stay until Shutdown, which sends them GOAWAY); then it is
// Shutdown(ctx). A connection that sends nothing within linger is closed
// by Shutdown as before.
func (s *Server) Drain(ctx context.Context, linger time.Duration) error {
	s.closing.Store(true)
	for _, ln := range s.lns {
		ln.Close()
	}
	t := time.NewTimer(linger)
	defer t.Stop()
	for s.counts.open[kindHTTP].Load()+s.counts.open[kindHTTPS].Load() > 0 {
		select {
		case <-s.connClosed:
		case <-t.C:
			return s.Shutdown(ctx)
		case <-ctx.Done():
			return s.Shutdown(ctx)
		}
	}
	return s.Shutdown(ctx)
}

// CloseHTTP3 closes the HTTP/3 listener and its connections at once
// (each gets a CONNECTION_CLOSE, so its client opens a new one), and the
// UDP socket, leaving the TCP listeners serving. It is for a binary
// upgrade: the new process serves a duplicate of the same UDP socket,
// and while two processes read one socket, each datagram reaches only
// one of them, which for the other's connections is loss. Closing the
// old process's side at the hand-over sends every datagram to the new
// one at once; the HTTP/3 requests in flight then are lost (their
// clients retry on a new connection). It does nothing without HTTP/3 or
// after Shutdown or Close.
func (s *Server) CloseHTTP3() {
	if s.h3 == nil {
		return
	}
	s.h3Once.Do(func() {
		s.h3.Close()
		s.quicTr.Close()
		s.udp.Close()
	})
}

// Close closes every listener and connection at once, requests in flight
// included, and returns once the serving goroutines have ended. After
// Shutdown or Close it does nothing.
func (s *Server) Close() error {
	s.shutdown.Do(func() {
		s.closeAll()
		s.wg.Wait()
	})
	return nil
}

// closeAll closes every server and socket; for the end of Shutdown and
// Close.
func (s *Server) closeAll() {
	for _, srv := range s.servers {
		srv.Close()
	}
	for _, ln := range s.lns {
		ln.Close()
	}
	if s.h3 != nil {
		s.h3Once.Do(func() {
			s.h3.Close()
			s.quicTr.Close()
			s.udp.Close()
		})
	}
}
