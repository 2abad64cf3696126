package edge

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
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
type Config struct {
	// Handler serves every request; required.
	Handler http.Handler
	// HTTP is the address of the plain HTTP listener ("127.0.0.1:8080");
	// empty means none.
	HTTP string
	// HTTPS is the address of the TLS listener over TCP (HTTP/1.1 and
	// HTTP/2) and, with HTTP3, of the QUIC one on the same port of UDP;
	// empty means none.
	HTTPS string
	// TLS is the server's TLS config; required with HTTPS. Set its
	// GetConfigForClient to pick a prebuilt config per SNI (a
	// tlsselect.Selector) and give each returned config its own
	// NextProtos. It is not modified.
	TLS *tls.Config
	// HTTP3 serves QUIC on the HTTPS port.
	HTTP3 bool
	// QUICTLS is the TLS config of the QUIC listener; nil means TLS. A
	// per-SNI table keeps QUIC's configs apart from TCP's (a host without
	// HTTP/3 is refused there): pass tlsselect.Selector's QUICConfig. The
	// listener sets h3 on whatever it returns.
	QUICTLS *tls.Config
	// ProxyProtocol, when its TrustedProxies is not empty, makes the
	// load balancers it names send a PROXY header on every TCP
	// connection (plain and TLS), and refuses every other peer.
	ProxyProtocol proxyproto.Config
	// Connections is the deny list and per-address cap, on TCP and QUIC;
	// the zero value gives connlimit's defaults.
	Connections connlimit.Config
	// Limits are the listener limits; the zero value gives listenlimits'
	// defaults.
	Limits listenlimits.Limits
	// QUIC overrides the QUIC connection settings; nil means
	// DefaultQUICConfig.
	QUIC *quic.Config
	// Logger receives the servers' own errors and the connection stage's
	// refusals (Debug); nil discards them.
	Logger *slog.Logger
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

// Server is a running edge.
type Server struct {
	log      *slog.Logger
	limiter  *connlimit.Limiter
	servers  []*http.Server
	lns      []net.Listener // closed by closeAll: a server only closes those it served
	h3       *http3.Server
	udp      net.PacketConn
	quicTr   *quic.Transport
	addrs    map[string]net.Addr
	wg       sync.WaitGroup
	errOnce  sync.Once
	err      chan error
	shutdown sync.Once
	counts   counts
}

// Errors of Start.
var (
	ErrNoHandler  = errors.New("edge: no handler")
	ErrNoListener = errors.New("edge: neither HTTP nor HTTPS is set")
	ErrNoTLS      = errors.New("edge: HTTPS without a TLS config")
	ErrHTTP3      = errors.New("edge: HTTP3 without HTTPS")
)

// Start validates cfg, binds every listener and serves them in the
// background. On error nothing stays bound.
func Start(cfg Config) (*Server, error) {
	var errs []error
	if cfg.Handler == nil {
		errs = append(errs, ErrNoHandler)
	}
	if cfg.HTTP == "" && cfg.HTTPS == "" {
		errs = append(errs, ErrNoListener)
	}
	if cfg.HTTPS != "" && cfg.TLS == nil {
		errs = append(errs, ErrNoTLS)
	}
	if cfg.HTTP3 && cfg.HTTPS == "" {
		errs = append(errs, ErrHTTP3)
	}
	if err := cfg.Limits.Validate(); err != nil {
		errs = append(errs, err)
	}
	limiter, err := connlimit.New(withLogger(cfg.Connections, cfg.Logger))
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{log: log, limiter: limiter, addrs: map[string]net.Addr{}, err: make(chan error, 1)}
	var starts []func()
	fail := func(err error) (*Server, error) {
		s.closeAll()
		return nil, err
	}
	if cfg.HTTP != "" {
		srv, ln, err := s.tcp(cfg, cfg.HTTP, 0, cfg.Limits)
		if err != nil {
			return fail(err)
		}
		s.addrs["http"] = ln.Addr()
		starts = append(starts, func() { s.serve(func() error { return srv.Serve(ln) }) })
	}
	if cfg.HTTPS != "" {
		// Idle connections under crypto/tls cannot be parked, so the
		// listener needs no accepting goroutine for it.
		lim := cfg.Limits
		lim.IdleRelease = listenlimits.Off
		srv, ln, err := s.tcp(cfg, cfg.HTTPS, 1, lim)
		if err != nil {
			return fail(err)
		}
		srv.TLSConfig = cfg.TLS.Clone()
		s.addrs["https"] = ln.Addr()
		starts = append(starts, func() { s.serve(func() error { return srv.ServeTLS(ln, "", "") }) })
		if cfg.HTTP3 {
			ql, err := s.quic(cfg, ln.Addr().(*net.TCPAddr))
			if err != nil {
				return fail(err)
			}
			starts = append(starts, func() { s.serve(func() error { return s.h3.ServeListener(ql) }) })
		}
	}
	for _, start := range starts {
		start()
	}
	return s, nil
}

func withLogger(c connlimit.Config, log *slog.Logger) connlimit.Config {
	if c.Logger == nil {
		c.Logger = log
	}
	return c
}

// tcp binds addr and builds its server: the listener stack of the package
// documentation, net/http with the listener limits lim; kind is its
// index in the open-connection counts.
func (s *Server) tcp(cfg Config, addr string, kind int, lim listenlimits.Limits) (*http.Server, net.Listener, error) {
	raw, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	var ln net.Listener = raw
	if len(cfg.ProxyProtocol.TrustedProxies) > 0 {
		pc := cfg.ProxyProtocol
		if pc.Logger == nil {
			pc.Logger = cfg.Logger
		}
		pln, err := proxyproto.NewListener(ln, pc)
		if err != nil {
			raw.Close()
			return nil, nil, err
		}
		ln = pln
		s.counts.pp = append(s.counts.pp, pln)
	}
	lln := lim.Listener(&connlimit.Listener{Listener: ln, Limiter: s.limiter})
	s.counts.limits[kind] = lln
	ln = lln
	s.lns = append(s.lns, ln)
	srv := &http.Server{
		Handler:     lim.Handler(cfg.Handler),
		ConnContext: gate.ConnContext,
		ErrorLog:    log.New(errorLog{s, slog.NewLogLogger(s.log.Handler(), slog.LevelWarn).Writer()}, "", 0),
		ConnState:   s.connState(kind),
	}
	if err := lim.Apply(srv); err != nil {
		ln.Close()
		return nil, nil, err
	}
	s.servers = append(s.servers, srv)
	return srv, ln, nil
}

// quic binds UDP on the TCP listener's port and builds the HTTP/3 server.
func (s *Server) quic(cfg Config, at *net.TCPAddr) (*quic.EarlyListener, error) {
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: at.IP, Port: at.Port, Zone: at.Zone})
	if err != nil {
		return nil, fmt.Errorf("edge: HTTP/3 on the HTTPS port: %w", err)
	}
	s.udp = udp
	s.addrs["http3"] = udp.LocalAddr()
	s.quicTr = &quic.Transport{Conn: udp, ConnContext: s.limiter.QUICConnContext}
	qc := cfg.QUIC
	if qc == nil {
		qc = DefaultQUICConfig(cfg.Limits)
	}
	tc := cfg.QUICTLS
	if tc == nil {
		tc = cfg.TLS
	}
	ql, err := s.quicTr.ListenEarly(http3.ConfigureTLSConfig(tc.Clone()), qc)
	if err != nil {
		return nil, err
	}
	lim := cfg.Limits.WithDefaults()
	s.h3 = &http3.Server{
		Handler:        cfg.Limits.Handler(cfg.Handler),
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

// Addr returns the bound address of a listener: "http", "https" or
// "http3"; nil when it is not served.
func (s *Server) Addr(name string) net.Addr { return s.addrs[name] }

// Err delivers the first error a server stopped with, other than by
// Shutdown.
func (s *Server) Err() <-chan error { return s.err }

// Limiter returns the connection stage's limiter, for its counters.
func (s *Server) Limiter() *connlimit.Limiter { return s.limiter }

// Shutdown stops accepting on every listener, waits for requests in
// flight until ctx is done, then closes what is left. It returns ctx's
// error when it had to cut connections.
func (s *Server) Shutdown(ctx context.Context) error {
	var err error
	s.shutdown.Do(func() {
		var wg sync.WaitGroup
		errs := make([]error, len(s.servers)+1)
		for i, srv := range s.servers {
			wg.Go(func() { errs[i] = srv.Shutdown(ctx) })
		}
		if s.h3 != nil {
			wg.Go(func() { errs[len(s.servers)] = s.h3.Shutdown(ctx) })
		}
		wg.Wait()
		s.closeAll()
		s.wg.Wait()
		err = errors.Join(errs...)
	})
	return err
}

// closeAll closes every server and socket; for a failed Start and the end
// of Shutdown.
func (s *Server) closeAll() {
	for _, srv := range s.servers {
		srv.Close()
	}
	for _, ln := range s.lns {
		ln.Close()
	}
	if s.h3 != nil {
		s.h3.Close()
	}
	if s.quicTr != nil {
		s.quicTr.Close()
	}
	if s.udp != nil {
		s.udp.Close()
	}
}
