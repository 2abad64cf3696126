package main

// The unsendable suite: requests that one of the daemon's servers
// (HTTP/1.1, HTTP/2, HTTP/3) lets through and that a client toward
// upstreams would refuse to send, or could not send as received. Each
// is written byte for byte (HTTP/2 and HTTP/3 frame by frame, so no Go
// client checks it first) and sent toward an upstream over each of the
// forwarder's ways out. None may reach the upstream, none may count
// against its destination, and each gets a clear answer: the server's
// own refusal, or the gateway's 400 (431, 404 for a Host that names no
// host).

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/internal/promtest"
	"github.com/paduraksa/paduraksa/internal/rawhttp"
	"github.com/paduraksa/paduraksa/tlsselect"
	"github.com/quic-go/quic-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stage is where a spelling must be stopped.
type stage uint8

const (
	skip        stage = iota // the protocol cannot spell it
	byServer                 // the HTTP server answers it before the gate (a 400 of its own, a reset) or closes the connection
	byGate                   // the gate answers 400
	unknownHost              // the Host names no host: the unknown host's 404
	byProxy                  // the forwarder answers 400: the outgoing client refused it
	tooLarge                 // 431, from the forwarder or from the upstream's server
)

var stageNames = [...]string{"skip", "the server", "the gate", "the unknown host", "the forwarder", "431"}

func (s stage) String() string { return stageNames[s] }

// spelling is one request in each protocol. "{host}" stands for the
// host of the way out it is sent on.
type spelling struct {
	name string
	// h1 is the request head, without the blank line ending it.
	h1 string
	// fields are HTTP/2's and HTTP/3's; :scheme https is added.
	fields []rawhttp.Field
	want   [3]stage // HTTP/1.1, HTTP/2, HTTP/3
	// only names the ways out it is sent on (upgrades); empty: all.
	only []string
	// body sends a body whatever the way out.
	body bool
}

func f(name, value string) rawhttp.Field { return rawhttp.Field{Name: name, Value: value} }

// req is the fields of a request with method, :authority and :path.
func req(method, authority, path string, extra ...rawhttp.Field) []rawhttp.Field {
	return append([]rawhttp.Field{f(":method", method), f(":scheme", "https"), f(":authority", authority), f(":path", path)}, extra...)
}

var big = strings.Repeat("x", 8<<10)

var spellings = []spelling{
	// Methods: HTTP/2's server takes any non-empty :method.
	{name: "method with a space", h1: "GET /x / HTTP/1.1\r\nHost: {host}", fields: req("GET /x", "{host}", "/"), want: [3]stage{byServer, byGate, byServer}},
	{name: "method with a parenthesis", h1: "GE(T / HTTP/1.1\r\nHost: {host}", fields: req("GE(T", "{host}", "/"), want: [3]stage{byServer, byGate, byServer}},
	{name: "method with a tab", h1: "GET\t / HTTP/1.1\r\nHost: {host}", fields: req("GET\t", "{host}", "/"), want: [3]stage{byServer, byGate, byServer}},
	{name: "method in UTF-8", h1: "G\xc3\x89T / HTTP/1.1\r\nHost: {host}", fields: req("G\xc3\x89T", "{host}", "/"), want: [3]stage{byServer, byGate, byServer}},
	{name: "empty method", h1: " / HTTP/1.1\r\nHost: {host}", fields: req("", "{host}", "/"), want: [3]stage{byServer, byServer, byServer}},

	// Field names and values: every server checks them as the clients do.
	{name: "field name with a space", h1: "GET / HTTP/1.1\r\nHost: {host}\r\nX Y: 1", fields: req("GET", "{host}", "/", f("x y", "1")), want: [3]stage{byServer, byServer, byServer}},
	{name: "field name with a parenthesis", h1: "GET / HTTP/1.1\r\nHost: {host}\r\nX(y): 1", fields: req("GET", "{host}", "/", f("x(y)", "1")), want: [3]stage{byServer, byServer, byServer}},
	{name: "field value with a control character", h1: "GET / HTTP/1.1\r\nHost: {host}\r\nX-A: a\x01b", fields: req("GET", "{host}", "/", f("x-a", "a\x01b")), want: [3]stage{byServer, byServer, byServer}},
	{name: "field value with DEL", h1: "GET / HTTP/1.1\r\nHost: {host}\r\nX-A: a\x7fb", fields: req("GET", "{host}", "/", f("x-a", "a\x7fb")), want: [3]stage{byServer, byServer, byServer}},
	{name: "field name in upper case", fields: req("GET", "{host}", "/", f("X-Up", "1")), want: [3]stage{skip, byServer, byServer}},
	{name: "connection-specific field", fields: req("GET", "{host}", "/", f("upgrade", "websocket")), want: [3]stage{skip, byServer, byServer}},

	// Hosts: HTTP/2's and HTTP/3's :authority and HTTP/1.1's
	// absolute-form host are not checked by the servers.
	{name: "host with a space", h1: "GET / HTTP/1.1\r\nHost: a b.{host}", fields: req("GET", "a b.{host}", "/"), want: [3]stage{byServer, unknownHost, unknownHost}},
	{name: "host with a slash", h1: "GET / HTTP/1.1\r\nHost: a/b.{host}", fields: req("GET", "a/b.{host}", "/"), want: [3]stage{byServer, unknownHost, unknownHost}},
	{name: "host with an angle bracket", h1: "GET http://a<b.{host}/ HTTP/1.1\r\nHost: {host}", fields: req("GET", "a<b.{host}", "/"), want: [3]stage{unknownHost, unknownHost, unknownHost}},
	{name: "host with a quote", h1: "GET http://a\"b.{host}/ HTTP/1.1\r\nHost: {host}", fields: req("GET", "a\"b.{host}", "/"), want: [3]stage{unknownHost, unknownHost, unknownHost}},
	{name: "host that is no IDNA name", h1: "GET http://xn--%C3%BC.{host}/ HTTP/1.1\r\nHost: {host}", fields: req("GET", "xn--\xc3\xbc.{host}", "/"), want: [3]stage{unknownHost, unknownHost, unknownHost}},
	{name: "host in UTF-8", h1: "GET / HTTP/1.1\r\nHost: \xc3\xbc.{host}", fields: req("GET", "\xc3\xbc.{host}", "/"), want: [3]stage{byServer, unknownHost, unknownHost}},

	// Targets.
	{name: "space in the query", h1: "GET /?a b HTTP/1.1\r\nHost: {host}", fields: req("GET", "{host}", "/?a b"), want: [3]stage{byServer, byGate, byGate}},
	{name: "space in the path", h1: "GET /a b HTTP/1.1\r\nHost: {host}", fields: req("GET", "{host}", "/a b"), want: [3]stage{byServer, byGate, byGate}},
	{name: "control character in the target", h1: "GET /a\x01 HTTP/1.1\r\nHost: {host}", fields: req("GET", "{host}", "/a\x01"), want: [3]stage{byServer, byServer, byServer}},
	{name: "DEL in the query", h1: "GET /?a\x7f HTTP/1.1\r\nHost: {host}", fields: req("GET", "{host}", "/?a\x7f"), want: [3]stage{byServer, byServer, byServer}},
	{name: "asterisk target of a GET", h1: "GET * HTTP/1.1\r\nHost: {host}", fields: req("GET", "{host}", "*"), want: [3]stage{byGate, byGate, byServer}},
	// net/http's HTTP/1.1 and HTTP/2 servers answer OPTIONS * themselves.
	{name: "asterisk target of an OPTIONS", h1: "OPTIONS * HTTP/1.1\r\nHost: {host}", fields: req("OPTIONS", "{host}", "*"), want: [3]stage{byServer, byServer, byGate}},

	// Trailers: the servers declare the Trailer field's names unchecked.
	{name: "trailer name that is no token", h1: "POST / HTTP/1.1\r\nHost: {host}\r\nTrailer: X(y)", fields: req("POST", "{host}", "/", f("trailer", "x(y)")), want: [3]stage{byGate, byGate, byGate}, body: true},
	{name: "empty trailer name", fields: req("POST", "{host}", "/", f("trailer", ",")), want: [3]stage{skip, byGate, byGate}, body: true},

	// Upgrades: HTTP/2 has none (net/http sends websocket over HTTP/1.1
	// on TLS connections, to any cluster).
	{name: "upgrade HTTP/2 cannot carry", h1: "GET / HTTP/1.1\r\nHost: {host}\r\nConnection: Upgrade\r\nUpgrade: foo/1", want: [3]stage{byProxy, skip, skip}, only: []string{"h2c", "HTTP/2 over TLS"}},
	{name: "websocket upgrade to h2c", h1: "GET / HTTP/1.1\r\nHost: {host}\r\nConnection: Upgrade\r\nUpgrade: websocket", want: [3]stage{byProxy, skip, skip}, only: []string{"h2c"}},

	// The HTTP/2 upstreams' servers take 4 KiB of fields and say so in
	// their SETTINGS.
	{name: "field list over the upstream's limit", h1: "GET / HTTP/1.1\r\nHost: {host}\r\nX-Big: " + big, fields: req("GET", "{host}", "/", f("x-big", big)),
		want: [3]stage{tooLarge, tooLarge, tooLarge}, only: []string{"h2c", "HTTP/2 over TLS"}},
}

// wayOut is one of the forwarder's ways to an upstream.
type wayOut struct {
	name     string
	host     string // its host; "*."+host is the same host
	upstream string
	// body sends every request with a body of unknown length, which the
	// direct HTTP/1.1 client hands to net/http's.
	body bool
}

var waysOut = []wayOut{
	{"direct HTTP/1.1", "direct.test", "direct", false},
	{"net/http HTTP/1.1", "direct.test", "direct", true},
	{"h2c", "h2c.test", "h2c", false},
	{"HTTP/2 over TLS", "h2tls.test", "h2tls", false},
}

// countingUpstream counts the requests that reach its handler and
// answers "ok"; its server takes about 4 KiB of fields (over HTTP/2,
// exactly 4 KiB and 320 bytes, announced in its SETTINGS).
type countingUpstream struct {
	addr string
	n    atomic.Int32
}

func startCounting(t *testing.T, mode string) *countingUpstream {
	t.Helper()
	u := &countingUpstream{}
	srv := &http.Server{MaxHeaderBytes: 4 << 10, ReadHeaderTimeout: wireTimeout, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.n.Add(1)
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "ok")
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	switch mode {
	case "h2c":
		var p http.Protocols
		p.SetHTTP1(true)
		p.SetUnencryptedHTTP2(true)
		srv.Protocols = &p
	case "tls":
		cert, err := tlsselect.SelfSigned(time.Hour, "upstream.test")
		require.NoError(t, err)
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}})
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	u.addr = ln.Addr().String()
	return u
}

// TestSecurityUnsendable: every spelling, over HTTP/1.1, HTTP/2 and
// HTTP/3, toward an upstream over the direct HTTP/1.1 client, net/http's
// HTTP/1.1 client, h2c and HTTP/2 over TLS (versionPolicy exact), is
// stopped where its row says, reaches no upstream and counts against no
// destination: each is sent more often than the passive check needs to
// eject one, and every destination still serves after all of them.
func TestSecurityUnsendable(t *testing.T) {
	t.Parallel()
	ups := map[string]*countingUpstream{"direct": startCounting(t, "h1"), "h2c": startCounting(t, "h2c"), "h2tls": startCounting(t, "tls")}
	var hosts []wayOut // one per host
	var names []string
	for _, w := range waysOut {
		if len(hosts) == 0 || hosts[len(hosts)-1].host != w.host {
			hosts = append(hosts, w)
			names = append(names, w.host, "*."+w.host)
		}
	}
	cert, err := tlsselect.SelfSigned(time.Hour, names...)
	require.NoError(t, err)
	certFile, keyFile := writeKeyPair(t, t.TempDir(), "edge", cert)
	doc := config.Document{Certificates: []config.Certificate{{ID: "edge", CertFile: certFile, KeyFile: keyFile}}}
	for _, w := range hosts {
		u := upstreamOf(w.upstream, ups[w.upstream].addr)
		u.Health = passive
		switch w.upstream {
		case "h2c":
			u.HTTP = config.UpstreamHTTP{Version: "2", VersionPolicy: "exact"}
		case "h2tls":
			u.Destinations[0].Address = "https://" + ups[w.upstream].addr
			u.HTTP = config.UpstreamHTTP{Version: "2", VersionPolicy: "exact", TLS: config.UpstreamTLS{Trust: "any"}}
		}
		doc.Upstreams = append(doc.Upstreams, u)
		doc.Hosts = append(doc.Hosts, config.Host{Names: []string{w.host, "*." + w.host}, Certificate: "edge",
			TLS: &config.HostTLS{HTTP3: true}, Routes: []config.Route{{Path: "/", Upstream: w.upstream}}})
	}
	d := startWithDoc(t, doc, "-https", "127.0.0.1:0", "-access-log", "off")
	// One good request each first: the HTTP/2 connections to the
	// upstreams have their SETTINGS in before the header list row, so the
	// client refuses those at once rather than each costing a new
	// connection the upstream closes after a second.
	for _, w := range hosts {
		r := roundTrip(t, d.addr, get(w.host, "/"))
		require.Equal(t, http.StatusOK, r.status, "%s: %s", w.host, r.body)
	}

	const rounds = 4 // more than the passive check's minimum of 3
	refused, large := map[string]int{}, map[string]int{}
	for _, w := range waysOut {
		for _, sp := range spellings {
			if len(sp.only) > 0 && !slices.Contains(sp.only, w.name) {
				continue
			}
			for proto, want := range sp.want {
				if want == skip {
					continue
				}
				name := w.name + "/" + []string{"HTTP/1.1", "HTTP/2", "HTTP/3"}[proto] + "/" + sp.name
				t.Run(name, func(t *testing.T) {
					for range rounds {
						a := sendSpelling(t, d, w, sp, proto)
						checkStage(t, a, want)
					}
				})
				switch want {
				case byProxy:
					refused[w.upstream] += rounds
				case tooLarge:
					large[w.upstream] += rounds
				}
			}
		}
	}

	for id, u := range ups {
		assert.Equal(t, int32(1), u.n.Load(), "upstream %s received none of them", id)
	}
	f := d.scrape(t)
	for id := range ups {
		// The forwarder's refusals, and only those: a header list over
		// the upstream's limit is the client's refusal once the
		// upstream's SETTINGS arrived, before that the upstream's own 431.
		v, _ := promtest.Value(f, "paduraksa_upstream_requests_total", "upstream", id, "outcome", "requestInvalid")
		assert.GreaterOrEqual(t, v, float64(refused[id]), id)
		assert.LessOrEqual(t, v, float64(refused[id]+large[id]), id)
		for _, out := range []string{"connectError", "tlsError", "timeout", "responseHeaderError", "bodyError"} {
			v, _ := promtest.Value(f, "paduraksa_destination_exchanges_total", "upstream", id, "destination", "d0", "outcome", out)
			assert.Zero(t, v, "%s: no %s", id, out)
			v, _ = promtest.Value(f, "paduraksa_upstream_requests_total", "upstream", id, "outcome", out)
			assert.Zero(t, v, "%s: no %s", id, out)
		}
		assert.Equal(t, 1.0, metric(t, f, "paduraksa_destination_available", "upstream", id, "destination", "d0"), id)
	}
	for _, w := range hosts {
		r := roundTrip(t, d.addr, get(w.host, "/"))
		assert.Equal(t, http.StatusOK, r.status, "%s still serves: %s", w.host, r.body)
		assert.Equal(t, int32(2), ups[w.upstream].n.Load(), w.upstream)
	}
}

// sendSpelling sends sp on a new connection in protocol proto (0, 1, 2:
// HTTP/1.1, HTTP/2, HTTP/3) toward w, and returns the answer.
func sendSpelling(t *testing.T, d *daemon, w wayOut, sp spelling, proto int) rawhttp.Answer {
	t.Helper()
	withBody := w.body || sp.body
	if proto == 0 {
		raw := strings.ReplaceAll(sp.h1, "{host}", w.host) + "\r\nConnection: close\r\n"
		if withBody {
			raw += "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
		} else {
			raw += "\r\n"
		}
		c := dialWire(t, d.addr)
		c.send(raw)
		r, err := c.read("GET")
		if err != nil {
			// The server closed the connection without an answer.
			return rawhttp.Answer{Reset: true}
		}
		return rawhttp.Answer{Status: r.status, Header: r.header}
	}
	rq := rawhttp.Request{}
	for _, fl := range sp.fields {
		rq.Fields = append(rq.Fields, f(fl.Name, strings.ReplaceAll(fl.Value, "{host}", w.host)))
	}
	if withBody {
		rq.Body = []byte("abc") // no content-length: a body of unknown length
	}
	ctx, cancel := context.WithTimeout(context.Background(), wireTimeout)
	defer cancel()
	tc := &tls.Config{ServerName: w.host, InsecureSkipVerify: true}
	if proto == 1 {
		tc.NextProtos = []string{"h2"}
		c, err := (&tls.Dialer{Config: tc}).DialContext(ctx, "tcp", d.tlsAddr)
		require.NoError(t, err)
		defer c.Close()
		require.Equal(t, "h2", c.(*tls.Conn).ConnectionState().NegotiatedProtocol)
		a, err := rawhttp.H2(ctx, c, rq)
		require.NoError(t, err)
		return a
	}
	tc.NextProtos = []string{"h3"}
	conn, err := quic.DialAddr(ctx, d.tlsAddr, tc, &quic.Config{})
	require.NoError(t, err)
	defer conn.CloseWithError(0, "")
	a, err := rawhttp.H3(ctx, conn, rq)
	require.NoError(t, err)
	return a
}

// checkStage asserts that a is the answer of stage want.
func checkStage(t *testing.T, a rawhttp.Answer, want stage) {
	t.Helper()
	ours := a.Header.Get("Server") == "Paduraksa" // the gateway's answers carry its Server header
	switch want {
	case byServer:
		assert.True(t, a.Reset || (a.Status != 0 && !ours), "want %s's answer, got %+v", want, a)
	case byGate, byProxy:
		assert.True(t, a.Status == http.StatusBadRequest && ours, "want %s's 400, got %+v", want, a)
	case unknownHost:
		assert.Equal(t, http.StatusNotFound, a.Status, "want %s, got %+v", want, a)
	case tooLarge:
		assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, a.Status, "got %+v", a)
	}
}
