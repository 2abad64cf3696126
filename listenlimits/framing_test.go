package listenlimits_test

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/listenlimits"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingServer serves h, counting its calls, through limits' Listener,
// with limits applied to the server unless bare.
func countingServer(t *testing.T, limits listenlimits.Limits, bare bool, h http.HandlerFunc) (string, *atomic.Int64) {
	t.Helper()
	calls := new(atomic.Int64)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		h(w, r)
	})}
	if !bare {
		require.NoError(t, limits.Apply(srv))
	}
	addr := serve(t, srv, func(raw net.Listener) net.Listener { return limits.Listener(raw) })
	return addr, calls
}

// echoBody answers with the method, path, body and trailer it was sent.
func echoBody(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	fmt.Fprintf(w, "%s %s %q %q", r.Method, r.URL.Path, b, r.Trailer.Get("X-Sum"))
}

// dial connects to addr with a deadline on everything that follows.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	return c
}

const after = "GET /after HTTP/1.1\r\nHost: x\r\n\r\n"

func TestFramingConflictIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name     string
		request  string
		bytewise bool // one TCP write per byte
	}{
		{"CL then TE", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", false},
		{"TE then CL", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n", false},
		{"lower case, Chunked", "POST / HTTP/1.1\r\nhost: x\r\ntransfer-encoding: Chunked\r\ncontent-length: 5\r\n\r\n0\r\n\r\n", false},
		{"Content-Length 0", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", false},
		{"TE twice", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n", false},
		{"TE folded", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n", false},
		{"byte by byte", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", true},
		{"HTTP/1.0 with TE", "POST / HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", false},
		{"HTTP/1.0 with TE and CL", "POST / HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", false},
		{"Upgrade asked", "POST / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, calls := countingServer(t, listenlimits.Limits{}, false, echoBody)
			c := dial(t, addr)
			msg := tc.request + after
			if tc.bytewise {
				for i := range len(msg) {
					if _, err := c.Write([]byte{msg[i]}); err != nil {
						break // refused and closed before the last byte
					}
				}
			} else {
				_, err := io.WriteString(c, msg)
				require.NoError(t, err)
			}
			got := readUntilClosed(t, c)
			assert.True(t, strings.HasPrefix(got, "HTTP/1.1 400 Bad Request\r\n"), "got %q", got)
			assert.Contains(t, got, "\r\nConnection: close\r\n")
			assert.Equal(t, 1, strings.Count(got, "HTTP/1.1 "), "one answer, then the close: %q", got)
			assert.Zero(t, calls.Load(), "neither request reached the handler")
		})
	}
}

// Without the guard, net/http serves the smuggled framing and what is
// pipelined after it: what the guard is for.
func TestLaxFramingServesConflict(t *testing.T) {
	addr, calls := countingServer(t, listenlimits.Limits{LaxFraming: true}, false, echoBody)
	c := dial(t, addr)
	_, err := io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"+after)
	require.NoError(t, err)
	br := bufio.NewReader(c)
	for range 2 {
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	}
	assert.Equal(t, int64(2), calls.Load())
}

// An upgrade the handler refuses does not turn the guard off for the
// requests after it.
func TestFramingAfterRefusedUpgrade(t *testing.T) {
	addr, calls := countingServer(t, listenlimits.Limits{}, false, echoBody)
	c := dial(t, addr)
	_, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n"+
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"+after)
	require.NoError(t, err)
	got := readUntilClosed(t, c)
	first, rest, _ := strings.Cut(got, "HTTP/1.1 400 Bad Request\r\n")
	assert.True(t, strings.HasPrefix(first, "HTTP/1.1 200 OK\r\n"), "got %q", got)
	assert.Contains(t, rest, "Connection: close")
	assert.NotContains(t, rest, "HTTP/1.1 ")
	assert.Equal(t, int64(1), calls.Load())
}

func TestFramingKeepAliveIsServed(t *testing.T) {
	addr, calls := countingServer(t, listenlimits.Limits{}, false, echoBody)
	c := dial(t, addr)
	_, err := io.WriteString(c, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"+
		"GET /b HTTP/1.1\r\nHost: x\r\nUpgrade-Insecure-Requests: 1\r\n\r\n"+
		"POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n"+
		"5;name=x\r\nhello\r\n6\r\n world\r\n0\r\nX-Sum: 11\r\n\r\n"+
		"POST /d HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"+
		"GET /e HTTP/1.0\r\n\r\n")
	require.NoError(t, err)
	br := bufio.NewReader(c)
	for _, want := range []string{
		`GET /a "" ""`,
		`GET /b "" ""`,
		`POST /c "hello world" "11"`,
		`POST /d "abc" ""`,
		`GET /e "" ""`,
	} {
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, want, string(body))
	}
	assert.Equal(t, int64(5), calls.Load())
}

// After a real upgrade, any bytes pass untouched, even ones that look like
// a forbidden request; with and without Apply's word of hijacks.
func TestFramingUpgradePassesThrough(t *testing.T) {
	tunnel := "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n" +
		"\x16\x03\x01\x00\xff\x00\r\n:\x81\x05hello"
	upgrade := func(w http.ResponseWriter, r *http.Request) {
		c, brw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: raw\r\nConnection: Upgrade\r\n\r\n")
		_, _ = io.Copy(c, brw)
	}
	for _, bare := range []bool{false, true} {
		t.Run(fmt.Sprintf("bare=%v", bare), func(t *testing.T) {
			addr, _ := countingServer(t, listenlimits.Limits{}, bare, upgrade)
			c, br := upgraded(t, addr, "\r\n")
			_, err := io.WriteString(c, tunnel)
			require.NoError(t, err)
			require.NoError(t, c.(*net.TCPConn).CloseWrite())
			echo, err := io.ReadAll(br)
			require.NoError(t, err)
			assert.Equal(t, tunnel, string(echo))
		})
	}
}

// Under crypto/tls the guard sees ciphertext and steps aside; HTTP/1.1
// and h2 keep working. (A body of unknown length goes chunked on
// HTTP/1.1.)
// upgraded asks addr for an upgrade to "raw", with rest (the end of the
// head, and any body) after the Upgrade fields, and returns the connection
// and its reader after the 101.
func upgraded(t *testing.T, addr, rest string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c := dial(t, addr)
	_, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: raw\r\nConnection: Upgrade\r\n"+rest)
	require.NoError(t, err)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	return c, br
}

func TestFramingUnderTLS(t *testing.T) {
	limits := listenlimits.Limits{}
	srv := &http.Server{Handler: http.HandlerFunc(echoBody)}
	require.NoError(t, limits.Apply(srv))
	cfg := &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}, NextProtos: []string{"h2", "http/1.1"}}
	addr := serve(t, srv, func(raw net.Listener) net.Listener {
		return tls.NewListener(limits.Listener(raw), cfg)
	})
	for _, proto := range []string{"h2", "http/1.1"} {
		t.Run(proto, func(t *testing.T) {
			tr := &http.Transport{
				TLSClientConfig:   &tls.Config{InsecureSkipVerify: true, NextProtos: []string{proto}},
				ForceAttemptHTTP2: proto == "h2",
			}
			defer tr.CloseIdleConnections()
			major := 1
			if proto == "h2" {
				major = 2
			}
			postTwice(t, tr, "https://"+addr+"/up", major)
		})
	}
}

func TestFramingH2CPriorKnowledge(t *testing.T) {
	limits := listenlimits.Limits{}
	srv := &http.Server{Handler: http.HandlerFunc(echoBody), Protocols: new(http.Protocols)}
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	require.NoError(t, limits.Apply(srv))
	addr := serve(t, srv, func(raw net.Listener) net.Listener { return limits.Listener(raw) })

	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	defer tr.CloseIdleConnections()
	postTwice(t, tr, "http://"+addr+"/up", 2)
}

// postTwice posts "hello" twice to url, a server answering with echoBody,
// and checks the answers and their HTTP major version.
func postTwice(t *testing.T, tr *http.Transport, url string, major int) {
	t.Helper()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	for range 2 {
		resp, err := client.Post(url, "text/plain", io.MultiReader(strings.NewReader("hello")))
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, major, resp.ProtoMajor)
		assert.Equal(t, `POST /up "hello" ""`, string(body))
	}
}

// Apply chains its ConnState hook in front of the one already set.
func TestApplyKeepsConnState(t *testing.T) {
	states := make(chan http.ConnState, 16)
	srv := &http.Server{Handler: http.HandlerFunc(echoBody), ConnState: func(_ net.Conn, s http.ConnState) {
		select {
		case states <- s:
		default:
		}
	}}
	limits := listenlimits.Limits{}
	require.NoError(t, limits.Apply(srv))
	addr := serve(t, srv, func(raw net.Listener) net.Listener { return limits.Listener(raw) })
	c := dial(t, addr)
	_, err := io.WriteString(c, after)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	_ = resp.Body.Close()
	select {
	case s := <-states:
		assert.Equal(t, http.StateNew, s)
	case <-time.After(10 * time.Second):
		t.Fatal("the hook set before Apply was not called")
	}
}
