package listenlimits_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/listenlimits"
)

// parkServer serves ok-style answers (the request's path) through
// limits' Listener with limits applied, and reports every connection
// state the server sees on states.
func parkServer(t *testing.T, limits listenlimits.Limits) (*http.Server, *listenlimits.Listener, chan http.ConnState) {
	t.Helper()
	states := make(chan http.ConnState, 64)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, r.URL.Path) }),
		ConnState: func(_ net.Conn, s http.ConnState) {
			select {
			case states <- s:
			default:
			}
		},
	}
	require.NoError(t, limits.Apply(srv))
	var ln *listenlimits.Listener
	serve(t, srv, func(raw net.Listener) net.Listener { ln = limits.Listener(raw); return ln })
	return srv, ln, states
}

// awaitState waits for the server to report want, skipping the others.
func awaitState(t *testing.T, states <-chan http.ConnState, want http.ConnState) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case s := <-states:
			if s == want {
				return
			}
		case <-timeout:
			t.Fatalf("the server did not report %v", want)
		}
	}
}

// get sends a GET for path on c and returns the answer's status and body.
func get(t *testing.T, c net.Conn, br *bufio.Reader, path string) (int, string) {
	t.Helper()
	_, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	return readAnswer(t, br)
}

func readAnswer(t *testing.T, br *bufio.Reader) (int, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// An idle keep-alive connection is parked after IdleRelease (the server
// sees it close) and served again as a new one when its next request
// comes, on the same client connection, framing guard included.
func TestIdleConnectionParksAndComesBack(t *testing.T) {
	_, ln, states := parkServer(t, listenlimits.Limits{IdleRelease: 20 * time.Millisecond})
	c := dial(t, ln.Addr().String())
	br := bufio.NewReader(c)

	code, body := get(t, c, br, "/one")
	require.Equal(t, 200, code)
	require.Equal(t, "/one", body)
	awaitState(t, states, http.StateClosed)
	require.Equal(t, 1, ln.Parked())
	require.EqualValues(t, 1, ln.Active(), "a parked connection keeps its place")

	// Two pipelined requests wake it: the first byte the parked
	// connection waited for is the start of the first.
	_, err := io.WriteString(c, "GET /two HTTP/1.1\r\nHost: x\r\n\r\nGET /three HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	awaitState(t, states, http.StateNew)
	for _, want := range []string{"/two", "/three"} {
		code, body = readAnswer(t, br)
		require.Equal(t, 200, code)
		require.Equal(t, want, body)
	}
	require.Zero(t, ln.Parked())

	// Parked again, the guard still follows the byte stream.
	awaitState(t, states, http.StateClosed)
	_, err = io.WriteString(c, "POST /smuggle HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
	require.NoError(t, err)
	code, _ = readAnswer(t, br)
	require.Equal(t, http.StatusBadRequest, code)
	readUntilClosed(t, c)
}

// A parked connection keeps the idle deadline the server asked for: it is
// closed when IdleTimeout has passed since its last answer, not at the
// release and not later.
func TestParkedConnectionKeepsIdleTimeout(t *testing.T) {
	const idle = 400 * time.Millisecond
	_, ln, states := parkServer(t, listenlimits.Limits{IdleRelease: 20 * time.Millisecond, IdleTimeout: idle})
	c := dial(t, ln.Addr().String())
	br := bufio.NewReader(c)
	code, _ := get(t, c, br, "/")
	require.Equal(t, 200, code)
	answered := time.Now()
	awaitState(t, states, http.StateClosed)
	require.Equal(t, 1, ln.Parked())

	require.Equal(t, "", readUntilClosed(t, c))
	require.GreaterOrEqual(t, time.Since(answered), idle-50*time.Millisecond, "closed before the idle timeout")
	require.Zero(t, ln.Parked())
	require.Zero(t, ln.Active(), "the closed connection gave its place back")
}

// Shutting the server down closes its parked connections with the
// listener, and ends their waits.
func TestShutdownClosesParkedConnections(t *testing.T) {
	srv, ln, states := parkServer(t, listenlimits.Limits{IdleRelease: 20 * time.Millisecond})
	conns := make([]net.Conn, 3)
	for i := range conns {
		conns[i] = dial(t, ln.Addr().String())
		code, _ := get(t, conns[i], bufio.NewReader(conns[i]), "/")
		require.Equal(t, 200, code)
		awaitState(t, states, http.StateClosed)
	}
	require.Equal(t, 3, ln.Parked())

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, srv.Shutdown(ctx))
	for _, c := range conns {
		require.Equal(t, "", readUntilClosed(t, c))
	}
	require.Zero(t, ln.Parked())
	require.Zero(t, ln.Active())
	_, err := ln.Accept()
	require.ErrorIs(t, err, net.ErrClosed)
}

// A connection under crypto/tls is never parked (the Listener sees only
// ciphertext below it), nor is one with IdleRelease off.
func TestNoParkUnderTLSOrWhenOff(t *testing.T) {
	const release = 20 * time.Millisecond
	for _, tc := range []struct {
		name   string
		limits listenlimits.Limits
		tls    bool
	}{
		{"tls", listenlimits.Limits{IdleRelease: release}, true},
		{"off", listenlimits.Limits{IdleRelease: listenlimits.Off}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var parked atomic.Int64
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, "ok")
			}))
			srv.Config.ConnState = func(nc net.Conn, s http.ConnState) {
				if s == http.StateClosed {
					parked.Add(1)
				}
			}
			require.NoError(t, tc.limits.Apply(srv.Config))
			ln := tc.limits.Listener(srv.Listener)
			srv.Listener = ln
			if tc.tls {
				srv.StartTLS()
			} else {
				srv.Start()
			}
			defer srv.Close()
			tr := &http.Transport{}
			if tc.tls {
				tr.TLSClientConfig = &tls.Config{RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
			}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
			for i := range 2 {
				resp, err := client.Get(srv.URL)
				require.NoError(t, err)
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				require.Equal(t, "ok", string(b))
				if i == 0 {
					// Ten times the release, idle.
					time.Sleep(10 * release)
					require.Zero(t, ln.Parked())
				}
			}
			require.Zero(t, parked.Load(), "the connection was let go of")
			require.EqualValues(t, 1, ln.Active(), "one connection served both requests")
		})
	}
}

// Parking is on by default, at DefaultIdleRelease.
func TestIdleReleaseDefault(t *testing.T) {
	require.Equal(t, time.Second, listenlimits.Limits{}.WithDefaults().IdleRelease)
	require.Equal(t, time.Duration(listenlimits.Off), listenlimits.Limits{IdleRelease: listenlimits.Off}.WithDefaults().IdleRelease)
	require.True(t, strings.Contains(listenlimits.DefaultIdleRelease.String(), "1s"))
}
