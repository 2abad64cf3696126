package proxy_test

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/proxy"
	"github.com/paduraksa/paduraksa/upstream"
)

// seen is what an upstream received.
type seen struct {
	uri     string
	header  http.Header
	trailer http.Header
	bodyErr error
}

// recordingUpstream answers 200 after reading the whole body, and passes
// on what it received.
func recordingUpstream(t *testing.T) (string, <-chan seen) {
	t.Helper()
	got := make(chan seen, 16)
	addr := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.Copy(io.Discard, r.Body)
		got <- seen{uri: r.RequestURI, header: r.Header.Clone(), trailer: r.Trailer.Clone(), bodyErr: err}
	}))
	return addr, got
}

func receive(t *testing.T, got <-chan seen) seen {
	t.Helper()
	select {
	case s := <-got:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream received nothing")
		return seen{}
	}
}

// exchange sends raw bytes on a new connection and reads one response
// with a deadline. With halfClose it closes its sending side after the
// bytes and reports whether the server closed the connection after the
// response (without, it does not wait for that).
func exchange(t *testing.T, addr, raw string, halfClose bool) (res *http.Response, body string, closed bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = io.WriteString(c, raw)
	require.NoError(t, err)
	if halfClose {
		require.NoError(t, c.(*net.TCPConn).CloseWrite())
	}
	br := bufio.NewReader(c)
	res, err = http.ReadResponse(br, nil)
	for err == nil && res.StatusCode < 200 {
		res, err = http.ReadResponse(br, nil) // relayed 1xx
	}
	require.NoError(t, err)
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	if !halfClose && !res.Close {
		return res, string(b), false
	}
	_, err = br.ReadByte()
	return res, string(b), err == io.EOF
}

// identityAuth is a forward-auth service: "Bearer good" is alice.
func identityAuth(t *testing.T) string {
	t.Helper()
	return "http://" + listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer good" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("X-Auth-User", "alice")
	}))
}

func TestIdentityCannotBeForged(t *testing.T) {
	up, got := recordingUpstream(t)
	fa, err := gate.NewForwardAuth(gate.ForwardAuthConfig{ID: "auth", URL: identityAuth(t), RequestHeaders: []string{"Authorization"}, IdentityHeaders: []string{"X-Auth-User"}})
	require.NoError(t, err)
	addr, _ := setup{policies: []gate.PolicyUse{{Policy: fa}}}.start(t, up)
	for _, tc := range []struct{ name, header string }{
		{"hyphens", "X-Auth-User: admin\r\n"},
		{"underscores", "X_Auth_User: admin\r\n"},
		{"lower-case underscores", "x_auth_user: admin\r\n"},
		{"mixed", "X-Auth_User: admin\r\n"},
		{"Connection names the identity", "Connection: X-Auth-User\r\n"},
		{"Connection names it twice", "Connection: keep-alive, x-auth-user, X-Auth-User\r\n"},
		{"forwarding spellings", "X_Forwarded_For: 10.0.0.1\r\nX_Real_IP: 10.0.0.1\r\nCF_Connecting_IP: 10.0.0.1\r\nX_Forwarded_Host: evil\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _, _ := exchange(t, addr, "GET / HTTP/1.1\r\nHost: app.test\r\nAuthorization: Bearer good\r\n"+tc.header+"\r\n", false)
			require.Equal(t, 200, res.StatusCode)
			s := receive(t, got)
			assert.Equal(t, []string{"alice"}, s.header["X-Auth-User"], "exactly the auth service's identity")
			for k := range s.header {
				assert.NotContains(t, k, "_", "no underscore name reaches the upstream")
			}
			assert.Equal(t, []string{"127.0.0.1"}, s.header["X-Forwarded-For"])
			assert.Equal(t, []string{"127.0.0.1"}, s.header["X-Real-Ip"])
		})
	}
	t.Run("trailers", func(t *testing.T) {
		raw := "POST / HTTP/1.1\r\nHost: app.test\r\nAuthorization: Bearer good\r\nTransfer-Encoding: chunked\r\n" +
			"Trailer: X-Auth-User, X-Forwarded-For, X-Real-Ip, X-Checksum\r\n\r\n" +
			"3\r\nabc\r\n0\r\nX-Auth-User: admin\r\nX-Forwarded-For: 10.0.0.1\r\nX-Real-Ip: 10.0.0.1\r\nX-Checksum: 42\r\n\r\n"
		res, _, _ := exchange(t, addr, raw, false)
		require.Equal(t, 200, res.StatusCode)
		s := receive(t, got)
		require.NoError(t, s.bodyErr)
		assert.Equal(t, http.Header{"X-Checksum": {"42"}}, s.trailer, "only trailers the gateway does not own")
		assert.Equal(t, []string{"alice"}, s.header["X-Auth-User"])
	})
	t.Run("refused", func(t *testing.T) {
		res, _, _ := exchange(t, addr, "GET / HTTP/1.1\r\nHost: app.test\r\nX-Auth-User: admin\r\n\r\n", false)
		assert.Equal(t, 401, res.StatusCode)
	})
}

func TestUnderscoreHeadersKeptOnlyWhereAllowedAndNeverOwned(t *testing.T) {
	up, got := recordingUpstream(t)
	addr, _ := setup{site: &proxy.SiteConfig{KeepUnderscoreHeaders: true}}.start(t, up)
	res, _, _ := exchange(t, addr, "GET / HTTP/1.1\r\nHost: app.test\r\nX_Custom: 1\r\nX_Forwarded_For: 10.0.0.1\r\nX_Request_ID: x\r\nCF_Ray: 1\r\n\r\n", false)
	require.Equal(t, 200, res.StatusCode)
	s := receive(t, got)
	assert.Equal(t, []string{"1"}, s.header["X_custom"], "kept on a host that keeps them")
	for _, k := range []string{"X_forwarded_for", "X_request_id", "Cf_ray"} {
		assert.NotContains(t, s.header, k, "an underscore spelling of an owned header")
	}
}

// TestClientBodyFailuresAreTheClients: a body the client fails to deliver
// is answered 400, 408 or 413 with the connection closed, and never
// reaches passive health, however often it happens.
func TestClientBodyFailuresAreTheClients(t *testing.T) {
	up, got := recordingUpstream(t)
	obs := new(recorder)
	stats := new(proxy.Stats)
	addr, _ := setup{observer: obs, stats: stats, maxBody: 8}.start(t, up)
	for _, tc := range []struct {
		name      string
		raw       string
		halfClose bool
		status    int
	}{
		{"malformed chunk size", "POST / HTTP/1.1\r\nHost: app.test\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n", false, 400},
		{"chunk without its CRLF", "POST / HTTP/1.1\r\nHost: app.test\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXX0\r\n\r\n", false, 400},
		{"shorter than Content-Length", "POST / HTTP/1.1\r\nHost: app.test\r\nContent-Length: 6\r\n\r\nabc", true, 400},
		{"cut chunked", "POST / HTTP/1.1\r\nHost: app.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", true, 400},
		{"chunked over the limit", "POST / HTTP/1.1\r\nHost: app.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n5\r\nfghij\r\n0\r\n\r\n", false, 413},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 5 {
				res, _, closed := exchange(t, addr, tc.raw, tc.halfClose)
				assert.Equal(t, tc.status, res.StatusCode)
				assert.True(t, closed, "the connection is closed: its framing is lost")
			}
		})
	}
	drain(got)
	assert.Empty(t, obs.outcomes(), "no client body failure is an observation")
	assert.Equal(t, uint64(25), stats.Count(upstream.ClientBodyError))
	res, _ := do(t, addr, mustReq("GET", "/"))
	assert.Equal(t, 200, res.StatusCode)
}

func drain(got <-chan seen) {
	for {
		select {
		case <-got:
		default:
			return
		}
	}
}

// rawUpstream answers every request with raw bytes.
func rawUpstream(t *testing.T, answer string) string {
	t.Helper()
	return rawUpstreamWriting(t, answer, len(answer))
}

// rawUpstreamWriting answers with raw bytes written in pieces of at most
// step bytes, each a write of its own.
func rawUpstreamWriting(t *testing.T, answer string, step int) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return serveRaw(t, ln, answer, step)
}

// rawUpstreamTLS answers every request with raw bytes over TLS, with a
// self-signed certificate for app.test.
func rawUpstreamTLS(t *testing.T, answer string) string {
	t.Helper()
	cert, _ := selfSigned(t, "app.test")
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}})
	require.NoError(t, err)
	return serveRaw(t, ln, answer, len(answer))
}

func serveRaw(t *testing.T, ln net.Listener, answer string, step int) string {
	t.Helper()
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
					return
				}
				for rest := answer; rest != ""; {
					n := min(step, len(rest))
					if _, err := io.WriteString(c, rest[:n]); err != nil {
						return
					}
					rest = rest[n:]
				}
			}()
		}
	}()
	return ln.Addr().String()
}

type badAnswer struct {
	name   string
	answer string
	status int
}

// badAnswers returns answers no client path forwards: status 502, or 0
// for a response whose header went out and whose body the client sees
// cut. The direct client refuses them by its rules (RFC 9112), and
// net/http's client, whose own reader takes many of them, reads them
// through the same rules. They are built when a test asks: one is over a
// megabyte, which as a package variable would stay live through every
// benchmark of the package and make its collector run more often.
func badAnswers() []badAnswer {
	return []badAnswer{
		{"status 000", "HTTP/1.1 000 Zero\r\nContent-Length: 0\r\n\r\n", 502},
		{"status 099", "HTTP/1.1 099 Low\r\nContent-Length: 0\r\n\r\n", 502},
		{"status 600", "HTTP/1.1 600 High\r\nContent-Length: 0\r\n\r\n", 502},
		{"status 999", "HTTP/1.1 999 Top\r\nContent-Length: 0\r\n\r\n", 502},
		{"101 unasked", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", 502},
		{"garbage", "NOT HTTP AT ALL\r\n\r\n", 502},
		{"HTTP/2.0", "HTTP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n", 502},
		{"control character in the reason", "HTTP/1.1 200 O\x01K\r\nContent-Length: 0\r\n\r\n", 502},
		{"two lengths", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 502},
		{"length list", "HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok", 502},
		{"signed length", "HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok", 502},
		{"length and chunked", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", 502},
		{"chunked on 1.0", "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", 502},
		{"gzip coding", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 502},
		{"bad header line", "HTTP/1.1 200 OK\r\nX Bad: 1\r\nContent-Length: 0\r\n\r\n", 502},
		{"space before colon", "HTTP/1.1 200 OK\r\nX-Bad : 1\r\nContent-Length: 0\r\n\r\n", 502},
		{"obs-fold", "HTTP/1.1 200 OK\r\nX-A: 1\r\n 2\r\nContent-Length: 0\r\n\r\n", 502},
		{"bare LF", "HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n", 502},
		{"bare LF ends the head", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\n", 502},
		{"bare CR", "HTTP/1.1 200 OK\r\nX-A: 1\r2\r\nContent-Length: 0\r\n\r\n", 502},
		{"NUL in a value", "HTTP/1.1 200 OK\r\nX-A: 1\x002\r\nContent-Length: 0\r\n\r\n", 502},
		{"head over the limit", "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-A: "+strings.Repeat("a", 1000)+"\r\n", 1100) + "\r\n", 502},
		{"six informational", strings.Repeat("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n", 6) + "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 502},
		{"bad informational", "HTTP/1.1 103 Early Hints\r\nX Bad: 1\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 502},
		{"short body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", 0},
		{"huge length", "HTTP/1.1 200 OK\r\nContent-Length: 2000000000\r\n\r\nabc", 0},
		{"bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nok\r\n0\r\n\r\n", 0},
		{"chunk without CRLF", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokXX0\r\n\r\n", 0},
		{"bare LF in a chunk line", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\nok\r\n0\r\n\r\n", 0},
		{"chunk extension over the limit", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;" + strings.Repeat("e", 5000) + "\r\nok\r\n0\r\n\r\n", 0},
		{"length in the trailers", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nContent-Length: 5\r\n\r\n", 0},
		{"obs-fold in the trailers", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-T: 1\r\n 2\r\n\r\n", 0},
		{"bare LF in the trailers", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-T: 1\n\r\n", 0},
	}
}

// clientPaths are the ways a request reaches an HTTP/1.1 upstream: the
// direct client, a request it leaves to net/http's (Expect), and
// net/http's alone.
var clientPaths = []struct {
	name   string
	http1  proxy.HTTP1Client
	expect bool
}{
	{"direct", proxy.HTTP1Direct, false},
	{"fallback", proxy.HTTP1Direct, true},
	{"netHTTP", proxy.HTTP1NetHTTP, false},
}

// TestMalformedUpstreamAnswers: every bad answer gets the same status on
// every client path, plain and over TLS, with nothing of it forwarded;
// nothing an upstream sends panics the handler or leaks the
// destination's in-flight count.
func TestMalformedUpstreamAnswers(t *testing.T) {
	if proxy.DefaultHTTP1() != proxy.HTTP1Direct {
		t.Skip("runs every client path itself")
	}
	for _, tc := range badAnswers() {
		t.Run(tc.name, func(t *testing.T) {
			for _, scheme := range []string{"http", "https"} {
				up := rawUpstream(t, tc.answer)
				if scheme == "https" {
					up = rawUpstreamTLS(t, tc.answer)
				}
				for _, p := range clientPaths {
					stats := new(proxy.Stats)
					cfg := proxy.ClientConfig{HTTP1: p.http1, Trust: proxy.TrustAny}
					addr, cl := setup{scheme: scheme, client: cfg, stats: stats}.start(t, up)
					status, res := badAnswerStatus(t, addr, p.expect)
					assert.Equal(t, tc.status, status, "%s over %s", p.name, scheme)
					if res != nil {
						assert.Empty(t, res.Header["X Bad"])
						assert.Empty(t, res.Header["X-Bad"])
					}
					if p.expect {
						assert.Equal(t, uint64(1), stats.HTTP1Fallbacks(proxy.FallbackExpectContinue), "%s over %s", p.name, scheme)
					}
					d := cl.Upstream.Members().All[0]
					assert.Eventually(t, func() bool { return d.InFlight() == 0 }, 10*time.Second, 5*time.Millisecond, "in-flight count released")
				}
			}
		})
	}
}

// badAnswerStatus sends one request to the gateway at addr and returns
// the status it answers, 0 when its body is cut; expect sends a body with
// Expect: 100-continue.
func badAnswerStatus(t *testing.T, addr string, expect bool) (int, *http.Response) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	if expect {
		io.WriteString(c, "PUT / HTTP/1.1\r\nHost: app.test\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx")
	} else {
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: app.test\r\n\r\n")
	}
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	for err == nil && res.StatusCode < 200 {
		res, err = http.ReadResponse(br, nil) // relayed 1xx
	}
	if err != nil {
		return 0, nil
	}
	if _, err := io.ReadAll(res.Body); err != nil {
		return 0, res
	}
	return res.StatusCode, res
}

// TestInformationalResponsesAreBounded: at most two 1xx per exchange,
// none to an HTTP/1.0 client, never 100 Continue.
func TestInformationalResponsesAreBounded(t *testing.T) {
	answer := "HTTP/1.1 100 Continue\r\n\r\n" + strings.Repeat("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n", 4) +
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	addr, _ := setup{}.start(t, rawUpstream(t, answer))
	for _, tc := range []struct {
		proto string
		want  []int
	}{
		{"HTTP/1.1", []int{103, 103, 200}},
		{"HTTP/1.0", []int{200}},
	} {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
		fmt.Fprintf(c, "GET / %s\r\nHost: app.test\r\n\r\n", tc.proto)
		br := bufio.NewReader(c)
		var statuses []int
		for {
			res, err := http.ReadResponse(br, nil)
			require.NoError(t, err, tc.proto)
			statuses = append(statuses, res.StatusCode)
			if res.StatusCode >= 200 {
				break
			}
		}
		c.Close()
		assert.Equal(t, tc.want, statuses, tc.proto)
	}
}

// TestConnectionListedNamesNeverReachTheClient: the names an upstream's
// Connection field lists are hop-by-hop, also when it says close (which
// makes net/http's client delete the field before the forwarder sees it).
func TestConnectionListedNamesNeverReachTheClient(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer string
		step   int
	}{
		{"close last", "HTTP/1.1 200 OK\r\nConnection: X-Secret, close\r\nX-Secret: 1\r\nX-Public: 1\r\nContent-Length: 2\r\n\r\nok", 1 << 10},
		{"close first, upper case", "HTTP/1.1 200 OK\r\nCONNECTION: close,x-secret\r\nX-Secret: 1\r\nX-Public: 1\r\nContent-Length: 2\r\n\r\nok", 1 << 10},
		{"two lines", "HTTP/1.1 200 OK\r\nConnection: close\r\nConnection: X-Secret\r\nX-Secret: 1\r\nX-Public: 1\r\nContent-Length: 2\r\n\r\nok", 1 << 10},
		{"byte by byte", "HTTP/1.1 200 OK\r\nConnection: X-Secret, close\r\nX-Secret: 1\r\nX-Public: 1\r\nContent-Length: 2\r\n\r\nok", 1},
		{"after an informational head", "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nConnection: X-Secret, close\r\nX-Secret: 1\r\nX-Public: 1\r\nContent-Length: 2\r\n\r\nok", 7},
		{"keep-alive", "HTTP/1.1 200 OK\r\nConnection: X-Secret\r\nX-Secret: 1\r\nX-Public: 1\r\nContent-Length: 2\r\n\r\nok", 1 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, _ := setup{}.start(t, rawUpstreamWriting(t, tc.answer, tc.step))
			res, body, _ := exchange(t, addr, "GET / HTTP/1.1\r\nHost: app.test\r\n\r\n", false)
			require.Equal(t, 200, res.StatusCode)
			assert.Equal(t, "ok", body)
			assert.Empty(t, res.Header.Get("X-Secret"), "a name the upstream listed as hop-by-hop")
			assert.Equal(t, "1", res.Header.Get("X-Public"))
		})
	}
}
