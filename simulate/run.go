package simulate

import (
	"bufio"
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
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/paduraksa/paduraksa/connlimit"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/proxyproto"
	"github.com/paduraksa/paduraksa/tlsselect"
)

// Result is a simulation's answer: what the request gets and why.
type Result struct {
	Outcome Outcome `json:"outcome"`
	Trace   []Step  `json:"trace"`
}

// patience bounds each simulation: every stage runs in memory, so only a
// bug (or a deadline of the caller's, which comes first) can take this
// long, and then the simulation fails instead of hanging.
const patience = 10 * time.Second

// Run simulates probe against target. It runs the real code of every
// stage: the PROXY-protocol listener and connlimit's decision, a TLS
// handshake through the target's tlsselect table, net/http's server (over
// an in-memory connection, HTTP/1.1 or HTTP/2) and [gate.Gate.Simulate]
// with a recording tracer. Nothing outside the simulation changes: no
// counter moves, no rate-limit token is taken, no forward-auth call is
// made, no request reaches an upstream.
//
// It returns the problems of the probe or the target as errors
// ([ProbeError] with a stable code, [DraftRefused] for a draft a publish
// would refuse). Run is safe for concurrent use.
func Run(target Target, probe Probe) (*Result, error) {
	return RunContext(context.Background(), target, probe)
}

// RunContext is [Run] under ctx: the simulation's connections and
// handshakes take ctx's deadline, and a simulation that ctx ended returns
// no result but an error in which errors.Is finds ctx's error and, when
// the deadline passed, errors.As a [ProbeError] of code [CodeDeadline]. A
// draft compiles whole before ctx is looked at: the compile is not cut
// short.
func RunContext(ctx context.Context, target Target, probe Probe) (*Result, error) {
	rq, err := probe.check()
	if err != nil {
		return nil, err
	}
	res, err := target.resolve()
	if err != nil {
		return nil, err
	}
	return runResolved(ctx, &target, res, rq)
}

// runResolved runs a checked probe against a resolved target. An answer
// found while ctx ended is not one: the closed connections may have made
// it, so it is never returned.
func runResolved(ctx context.Context, target *Target, res *resolved, rq *request) (*Result, error) {
	if err := ended(ctx); err != nil {
		return nil, err
	}
	s := &sim{rq: rq, t: target, res: res, g: res.snap.Gate(), table: res.snap.TLS()}
	err := s.run(ctx)
	if err := ended(ctx); err != nil {
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	return &s.result, nil
}

// ended returns nil while ctx lasts, and then the error of a simulation
// that ctx stopped.
func ended(ctx context.Context) error {
	switch err := ctx.Err(); {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		return &stopped{problem: &ProbeError{Code: CodeDeadline, Msg: "the simulation reached its deadline"}, cause: err}
	default:
		return fmt.Errorf("simulate: %w", err)
	}
}

// stopped is the error of a simulation whose deadline passed: its problem
// for errors.As and the problem lists, the context's error for errors.Is.
type stopped struct {
	problem *ProbeError
	cause   error
}

func (e *stopped) Error() string        { return e.problem.Error() }
func (e *stopped) Unwrap() error        { return e.problem }
func (e *stopped) Is(target error) bool { return errors.Is(e.cause, target) }

// sim is one simulation.
type sim struct {
	rq    *request
	t     *Target
	res   *resolved
	g     *gate.Gate
	table *tlsselect.Table

	result Result

	mu       sync.Mutex // guards what the server side records
	refusal  *Outcome   // a stage that closed the connection
	steps    []gate.Step
	served   bool        // the gate saw the request
	wrote    int         // the recorder's status: 0 when the gate wrote nothing
	handOver http.Header // the headers the gate set before a hand-over
	proto    string
	hs       *Step // the handshake that succeeded
	accepted bool  // the PROXY-protocol listener (or the socket) accepted
	sel      tlsselect.Selection
	selected bool
}

func (s *sim) refuse(kind Kind, stage, reason string) {
	s.mu.Lock()
	if s.refusal == nil {
		s.refusal = &Outcome{Kind: kind, Stage: stage, Reason: reason}
	}
	s.mu.Unlock()
}

func (s *sim) run(ctx context.Context) error {
	rq := s.rq
	ctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()

	if rq.version == 3 {
		return s.runHTTP3(ctx)
	}
	port := 80
	if rq.https {
		port = 443
	}
	port = portOf(rq.url.Port(), port)
	local := netip.AddrPortFrom(netip.MustParseAddr("192.0.2.1"), uint16(port))
	if rq.peer.Addr().Is6() {
		local = netip.AddrPortFrom(netip.MustParseAddr("2001:db8::1"), uint16(port))
	}
	var wg sync.WaitGroup
	defer wg.Wait() // after everything below is closed
	cliEnd, srvEnd := memPipe()
	defer cliEnd.Close()
	defer srvEnd.Close()
	dl, _ := ctx.Deadline() // the caller's, or patience
	cliEnd.SetDeadline(dl)
	srvConn := &pipeConn{Conn: srvEnd, local: net.TCPAddrFromAddrPort(local), remote: net.TCPAddrFromAddrPort(rq.peer)}

	// The server side: the listener stack of the edge package, in its
	// order, on the in-memory connection.
	var ln net.Listener = newOneListener(srvConn)
	ppLog := &logCapture{}
	if pp := s.t.Listener.ProxyProtocol; len(pp.TrustedProxies) > 0 {
		pp.Logger = slog.New(ppLog)
		if pp.HeaderTimeout <= 0 || pp.HeaderTimeout > patience {
			pp.HeaderTimeout = patience
		}
		pln, err := proxyproto.NewListener(ln, pp)
		if err != nil {
			return &ProbeError{Code: CodeTargetListener, Path: "listener.proxyProtocol", Msg: err.Error()}
		}
		ln = pln
	}
	defer ln.Close()
	lim, err := s.limiter()
	if err != nil {
		return err
	}
	limits := s.t.Listener.Limits
	srv := &http.Server{
		Handler:     limits.Handler(http.HandlerFunc(s.serveHTTP)),
		ConnContext: gate.ConnContext,
		ErrorLog:    log.New(io.Discard, "", 0),
	}
	if err := limits.Apply(srv); err != nil {
		return &ProbeError{Code: CodeTargetListener, Path: "listener.limits", Msg: err.Error()}
	}
	defer srv.Close()
	// stages is closed once the server side has passed or refused the
	// connection stage and the handshake.
	stages := make(chan struct{})
	wg.Go(func() {
		c, err := ln.Accept()
		if err != nil {
			close(stages)
			return
		}
		s.mu.Lock()
		s.accepted = true
		s.mu.Unlock()
		if err := lim.Check(connlimit.AddrOf(c.RemoteAddr()), connlimit.TCP); err != nil {
			s.refuse(ConnectionRefused, "connections", err.Error())
			c.Close()
			close(stages)
			return
		}
		// The listener limits sit between the connection stage and TLS.
		if c, err = limits.Listener(newOneListener(c)).Accept(); err != nil {
			s.refuse(ServerRefused, "server", "the listener limits closed the connection: "+err.Error())
			close(stages)
			return
		}
		if rq.https {
			tc := tls.Server(c, &tls.Config{GetConfigForClient: s.getConfig(tlsselect.TCP)})
			err := tc.HandshakeContext(ctx)
			if err != nil {
				s.refuse(TLSRefused, "handshake", s.tlsReason(err))
				tc.Close()
				close(stages)
				return
			}
			c = tc
		}
		close(stages)
		srv.Serve(newOneListener(c))
	})

	// The client side.
	var cli net.Conn = cliEnd
	if rq.proxy.IsValid() {
		hdr := proxyproto.Header{Version: 2, Command: proxyproto.Proxy, Protocol: proxyproto.TCP4, Source: rq.proxy, Destination: local}
		if rq.proxy.Addr().Is6() {
			hdr.Protocol = proxyproto.TCP6
			hdr.Destination = netip.AddrPortFrom(netip.MustParseAddr("2001:db8::1"), local.Port())
		} else if local.Addr().Is6() {
			hdr.Destination = netip.AddrPortFrom(netip.MustParseAddr("192.0.2.1"), local.Port())
		}
		b, err := hdr.AppendTo(nil)
		if err != nil {
			return &ProbeError{Code: CodeProbePeerInvalid, Path: "proxyProtocol", Msg: err.Error()}
		}
		// A refusal before the header is read shows up on the next
		// read or write.
		cli.Write(b)
	}
	var resp *http.Response
	negotiated := ""
	if rq.https {
		tc := tls.Client(cli, &tls.Config{
			ServerName:         rq.sni,
			NextProtos:         rq.alpn,
			MinVersion:         tls.VersionTLS10,
			MaxVersion:         rq.tlsMax,
			InsecureSkipVerify: true, // the simulation looks at what is served, not whom to trust
		})
		err = tc.HandshakeContext(ctx)
		if err == nil {
			st := tc.ConnectionState()
			negotiated = st.NegotiatedProtocol
			hs := s.handshakeStep(&st)
			s.hs = &hs
			cli = tc
		}
	}
	if err == nil {
		if negotiated == "h2" {
			resp, err = s.roundTripH2(ctx, cli)
		} else {
			resp, err = s.roundTripH1(cli, &wg)
		}
	}
	if err != nil {
		// The server side knows what a failure was: wait until it has
		// said.
		cli.Close()
		ln.Close()
		select {
		case <-stages:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	refusal, served, accepted := s.refusal, s.served, s.accepted
	s.mu.Unlock()
	if err != nil && refusal == nil && !served {
		if accepted {
			refusal = &Outcome{Kind: ServerRefused, Stage: "server", Reason: "connection closed: " + err.Error()}
		} else {
			reason := ppLog.last()
			if reason == "" {
				reason = err.Error()
			}
			refusal = &Outcome{Kind: ConnectionRefused, Stage: "proxyProtocol", Reason: reason}
		}
	}
	if resp != nil {
		resp.Body.Close()
	}
	return s.finish(refusal, resp)
}

// limiter builds the connection stage's decision from the listener's
// config, with counters and a table of its own.
func (s *sim) limiter() (*connlimit.Limiter, error) {
	cc := s.t.Listener.Connections
	cc.Logger, cc.TableSize = nil, connlimit.MinTableSize
	lim, err := connlimit.New(cc)
	if err != nil {
		return nil, &ProbeError{Code: CodeTargetListener, Path: "listener.connections", Msg: err.Error()}
	}
	return lim, nil
}

// getConfig is the server's GetConfigForClient: the target's table, as
// the Store's Selector serves it, without the Selector's counters.
func (s *sim) getConfig(tr tlsselect.Transport) func(*tls.ClientHelloInfo) (*tls.Config, error) {
	return func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		if s.table == nil {
			return nil, tlsselect.ErrNoTable
		}
		sel := s.table.Select(hello.ServerName, tr)
		s.mu.Lock()
		s.sel, s.selected = sel, true
		s.mu.Unlock()
		return sel.Config, nil
	}
}

// tlsReason explains a failed server handshake.
func (s *sim) tlsReason(err error) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.table == nil:
		return "the config serves no TLS (no certificate): " + err.Error()
	case s.selected && s.sel.Match == tlsselect.MatchRefused:
		return "server name refused (" + s.sel.Reason.String() + ")"
	}
	return err.Error()
}

// handshakeStep reports the handshake that succeeded.
func (s *sim) handshakeStep(st *tls.ConnectionState) Step {
	s.mu.Lock()
	sel := s.sel
	s.mu.Unlock()
	f := map[string]string{
		"sni":     s.rq.sni,
		"match":   sel.Match.String(),
		"version": tls.VersionName(st.Version),
		"alpn":    st.NegotiatedProtocol,
	}
	if sel.Reason != tlsselect.ReasonNone {
		f["fallback"] = sel.Reason.String()
	}
	sum := tls.VersionName(st.Version) + ", certificate of the " + sel.Match.String() + " match"
	if s.rq.sni == "" {
		sum += " (no SNI)"
	} else {
		sum += " for " + strconv.Quote(s.rq.sni)
	}
	if st.NegotiatedProtocol != "" {
		sum += ", ALPN " + st.NegotiatedProtocol
	}
	if s.rq.version == 2 && st.NegotiatedProtocol != "h2" {
		sum += "; the HTTP/2 client sends HTTP/1.1"
	}
	for k, v := range f {
		if v == "" {
			delete(f, k)
		}
	}
	return Step{Kind: "handshake", Summary: sum, Facts: f}
}

// serveHTTP is the server's handler: the gate's simulation, recorded.
func (s *sim) serveHTTP(w http.ResponseWriter, r *http.Request) {
	rec := &recorder{ResponseWriter: w}
	var steps []gate.Step
	tr := &gate.Tracer{OnStep: func(st gate.Step) { steps = append(steps, st) }}
	s.g.Simulate(rec, r, tr)
	var hand http.Header
	if rec.status == 0 {
		hand = w.Header().Clone()
		if n := len(steps); n > 0 && steps[n-1].Kind == gate.StepHandOver && steps[n-1].Route != nil {
			if ah, ok := steps[n-1].Route.Target.(gate.AnswerHeaders); ok {
				ah.SetAnswerHeaders(hand, r)
			}
		}
		// Something must go back on the wire for the client to finish;
		// the outcome does not read it.
		w.WriteHeader(http.StatusNoContent)
	}
	s.mu.Lock()
	s.served, s.steps, s.wrote, s.handOver, s.proto = true, steps, rec.status, hand, r.Proto
	s.mu.Unlock()
}

// newRequest builds the client's request.
func (s *sim) newRequest() *http.Request {
	rq := s.rq
	r := &http.Request{
		Method: rq.method,
		URL:    rq.url,
		Host:   rq.host,
		Header: rq.header.Clone(),
		Body:   http.NoBody,
	}
	if _, ok := r.Header["User-Agent"]; !ok {
		r.Header["User-Agent"] = []string{""} // no client default: the probe sends what it says
	}
	if rq.body > 0 {
		delete(r.Header, "Content-Length") // the client sends it from ContentLength
		r.ContentLength = rq.body
		r.Body = io.NopCloser(&bodyReader{left: rq.body})
	}
	return r
}

// roundTripH1 writes the request as HTTP/1.1 bytes, exactly the probe's
// headers, and reads the answer. The request is written by a goroutine of
// its own (in wg), as a client's socket sends while the server answers:
// a server that answers before it has read it all (a 431, a 413) is read
// at once, and the writer waits for room or for the connection to close.
func (s *sim) roundTripH1(c net.Conn, wg *sync.WaitGroup) (*http.Response, error) {
	rq := s.rq
	var b strings.Builder
	b.WriteString(rq.method + " " + rq.url.RequestURI() + " HTTP/1.1\r\nHost: " + rq.host + "\r\n")
	keys := make([]string, 0, len(rq.header))
	for k := range rq.header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range rq.header[k] {
			b.WriteString(k + ": " + v + "\r\n")
		}
	}
	b.WriteString("\r\n")
	head, body := b.String(), wireBody(rq.body, rq.chunked)
	wg.Go(func() {
		// An error here is the connection's, which the reader meets too.
		if _, err := io.WriteString(c, head); err == nil && body != nil {
			io.Copy(c, body)
		}
	})
	return http.ReadResponse(bufio.NewReader(c), &http.Request{Method: rq.method})
}

// roundTripH2 sends the request over HTTP/2 on the negotiated connection.
func (s *sim) roundTripH2(ctx context.Context, c net.Conn) (*http.Response, error) {
	t := &http.Transport{
		DialTLSContext:     func(context.Context, string, string) (net.Conn, error) { return c, nil },
		DisableCompression: true, // send the probe's Accept-Encoding, not the client's
		Protocols:          new(http.Protocols),
	}
	t.Protocols.SetHTTP2(true)
	cc, err := t.NewClientConn(ctx, "https", net.JoinHostPort(s.rq.url.Hostname(), "443"))
	if err != nil {
		return nil, err
	}
	defer cc.Close()
	return cc.RoundTrip(s.newRequest().WithContext(ctx))
}

// portOf returns the port p names, or def.
func portOf(p string, def int) int {
	if n, err := strconv.Atoi(p); err == nil && n > 0 && n < 1<<16 {
		return n
	}
	return def
}
