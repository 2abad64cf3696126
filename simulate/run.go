package simulate

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/quic-go/quic-go/http3"

	"github.com/paduraksa/paduraksa/connlimit"
	"github.com/paduraksa/paduraksa/edge"
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
// stage: the edge's listener stack ([edge.Start] over an in-memory
// connection: the PROXY-protocol listener, connlimit's decision, the
// listener limits, a TLS handshake through the target's tlsselect table,
// net/http's server with HTTP/1.1 or HTTP/2, or quic-go's with HTTP/3)
// and [gate.Gate.Simulate] with a recording tracer. Nothing outside the
// simulation changes: no counter moves, no rate-limit token is taken, no
// forward-auth call is made, no request reaches an upstream.
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
	s := &sim{rq: rq, t: target, res: res, g: res.snap.Gate(), table: res.snap.TLS(), handled: make(chan struct{})}
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
	served   bool          // the gate saw the request
	handled  chan struct{} // closed when the handler has recorded what it saw
	wrote    int           // the recorder's status: 0 when the gate wrote nothing
	handOver http.Header   // the headers the gate set before a hand-over
	proto    string
	hs       *Step // the handshake that succeeded
	accepted bool  // the PROXY-protocol listener (or the socket) accepted
	sel      tlsselect.Selection
	selected bool
	backend  backendFacts   // the split's side and the mirror, at the hand-over
	local    netip.AddrPort // the address the client reached, as the server saw it
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
	srvConn := newPipeConn(srvEnd, net.TCPAddrFromAddrPort(local), net.TCPAddrFromAddrPort(rq.peer))

	// The server side: the edge, on the in-memory connection.
	ppLog := &logCapture{}
	cfg := s.edgeConfig(ppLog)
	if rq.https {
		cfg.HTTPSListener = newOneListener(srvConn)
	} else {
		cfg.HTTPListener = newOneListener(srvConn)
	}
	srv, err := edge.Start(cfg)
	if err != nil {
		return listenerProblem(err)
	}
	defer srv.Close()

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
		// The server side knows what a failure was: every stage records
		// its verdict before it closes the connection, and the handler
		// before it returns. Wait until one of them has.
		cli.Close()
		select {
		case <-srvConn.closed:
		case <-s.handled:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	refusal, served := s.refusal, s.served
	s.mu.Unlock()
	if err != nil && refusal == nil && !served {
		if reason := ppLog.last(); reason != "" {
			refusal = &Outcome{Kind: ConnectionRefused, Stage: "proxyProtocol", Reason: reason}
		} else {
			refusal = &Outcome{Kind: ServerRefused, Stage: "server", Reason: "connection closed: " + err.Error()}
		}
	}
	s.accepted = refusal == nil || refusal.Stage != "proxyProtocol"
	if resp != nil {
		resp.Body.Close()
	}
	return s.finish(refusal, resp)
}

// edgeConfig is the edge a simulated connection goes through: the
// target's listener settings, as the daemon gives them to edge.Start,
// with what a simulation changes and nothing else. The handler is the
// gate's simulation; the TLS configs select from the target's table, as
// the Store's Selector does, without its counters; connlimit runs dry (it
// decides, counts nothing and logs nothing) and tells the simulation what
// it refused, as does a failed TLS handshake; the PROXY-protocol
// listener's refusals are kept for their reason, and its header timeout
// is at most the simulation's patience.
func (s *sim) edgeConfig(ppLog *logCapture) edge.Config {
	l := s.t.Listener
	cc := l.Connections
	cc.Logger, cc.DryRun = nil, true
	cc.OnRefusal = func(r connlimit.Refusal) { s.refuse(ConnectionRefused, "connections", r.Err.Error()) }
	pp := l.ProxyProtocol
	pp.Logger = slog.New(ppLog)
	if pp.HeaderTimeout <= 0 || pp.HeaderTimeout > patience {
		pp.HeaderTimeout = patience
	}
	return edge.Config{
		Handler:       http.HandlerFunc(s.serveHTTP),
		TLS:           &tls.Config{GetConfigForClient: s.getConfig(tlsselect.TCP)},
		QUICTLS:       &tls.Config{GetConfigForClient: s.getConfig(tlsselect.QUIC), NextProtos: []string{http3.NextProtoH3}, MinVersion: tls.VersionTLS13},
		ProxyProtocol: pp,
		Connections:   cc,
		Limits:        l.Limits,
		OnHandshakeFailure: func(f edge.HandshakeFailure) {
			reason := s.tlsReason(f.Reason)
			s.refuse(TLSRefused, "handshake", reason)
		},
	}
}

// listenerProblem is the problem of an edge that would not start. The
// target's connection-stage settings and listener limits were checked
// when it was resolved; what is left is the PROXY-protocol listener's.
func listenerProblem(err error) error {
	return &ProbeError{Code: CodeTargetListener, Path: "listener.proxyProtocol", Msg: err.Error()}
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

// tlsReason explains a failed server handshake; failure is what
// crypto/tls or quic-go said of it.
func (s *sim) tlsReason(failure string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.table == nil:
		return "the config serves no TLS (no certificate): " + failure
	case s.selected && s.sel.Match == tlsselect.MatchRefused:
		return "server name refused (" + s.sel.Reason.String() + ")"
	}
	return failure
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
	var fwd *Forward
	tr := &gate.Tracer{OnStep: func(st gate.Step) {
		if st.Kind == gate.StepHandOver && st.Request != nil {
			fwd = forwardFacts(&st, steps, r)
			st.Request = nil // the gate reuses it
		}
		steps = append(steps, st)
	}}
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
	if !s.served {
		close(s.handled)
	}
	s.served, s.steps, s.wrote, s.handOver, s.proto = true, steps, rec.status, hand, r.Proto
	s.backend = handOverFacts(steps, r)
	s.backend.forward = fwd
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr); ok {
		s.local = a.AddrPort()
	}
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
