package upstream_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/upstream"
)

// patience bounds every wait on the loopback peers below.
const patience = 10 * time.Second

// TestClassifyRoundTrip classifies the errors real round trips return on
// loopback, and the client's context over them.
func TestClassifyRoundTrip(t *testing.T) {
	bg := context.Background()
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are the point
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	plainSrv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(plainSrv.Close)
	silent := peer(t, func(c net.Conn) { io.Copy(io.Discard, c) })
	garbage := peer(t, func(c net.Conn) {
		bufio.NewReader(c).ReadString('\n')
		io.WriteString(c, "NOT HTTP\r\n\r\n")
	})
	hangUp := peer(t, func(c net.Conn) { bufio.NewReader(c).ReadString('\n') })

	rt := func(t *testing.T, ctx context.Context, url string, tune func(*http.Transport)) error {
		t.Helper()
		tr := &http.Transport{}
		if tune != nil {
			tune(tr)
		}
		t.Cleanup(tr.CloseIdleConnections)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		require.NoError(t, err)
		res, err := tr.RoundTrip(req)
		if err == nil {
			res.Body.Close()
		}
		return err
	}
	late := func() context.Context {
		ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
		t.Cleanup(cancel)
		return ctx
	}
	pinned := func(tr *http.Transport) {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true, VerifyConnection: func(tls.ConnectionState) error {
			return &tls.CertificateVerificationError{Err: errors.New("matches no pin")}
		}}
	}

	for _, tc := range []struct {
		name string
		ctx  func() context.Context // the request's; nil means background
		err  func(t *testing.T, ctx context.Context) error
		want upstream.Outcome
	}{
		{"no error", nil, func(*testing.T, context.Context) error { return nil }, upstream.Success},
		{"untrusted certificate", nil, func(t *testing.T, ctx context.Context) error { return rt(t, ctx, tlsSrv.URL, nil) }, upstream.TLSError},
		{"certificate refused by a pin check", nil, func(t *testing.T, ctx context.Context) error { return rt(t, ctx, tlsSrv.URL, pinned) }, upstream.TLSError},
		{"https to a plain HTTP server", nil, func(t *testing.T, ctx context.Context) error {
			return rt(t, ctx, "https://"+strings.TrimPrefix(plainSrv.URL, "http://"), nil)
		}, upstream.TLSError},
		{"alert", nil, func(*testing.T, context.Context) error { return fmt.Errorf("handshake: %w", tls.AlertError(40)) }, upstream.TLSError},
		{"connection refused", nil, func(t *testing.T, ctx context.Context) error { return rt(t, ctx, "http://127.0.0.1:0/", nil) }, upstream.ConnectError},
		{"response header timeout", nil, func(t *testing.T, ctx context.Context) error {
			return rt(t, ctx, "http://"+silent+"/", func(tr *http.Transport) { tr.ResponseHeaderTimeout = 50 * time.Millisecond })
		}, upstream.Timeout},
		{"the request's deadline passed", late, func(t *testing.T, ctx context.Context) error {
			return rt(t, ctx, "http://"+silent+"/", nil)
		}, upstream.Timeout},
		{"garbage for a header", nil, func(t *testing.T, ctx context.Context) error { return rt(t, ctx, "http://"+garbage+"/", nil) }, upstream.ResponseHeaderError},
		{"hung up before answering", nil, func(t *testing.T, ctx context.Context) error { return rt(t, ctx, "http://"+hangUp+"/", nil) }, upstream.ResponseHeaderError},
		{"cancelled by someone else", nil, func(*testing.T, context.Context) error { return fmt.Errorf("read: %w", context.Canceled) }, upstream.ClientAbort},
		{"the client went away, whatever the error", canceled, func(t *testing.T, _ context.Context) error { return rt(t, bg, tlsSrv.URL, nil) }, upstream.ClientAbort},
		{"a nil context is never done", func() context.Context { return nil }, func(*testing.T, context.Context) error { return io.EOF }, upstream.ResponseHeaderError},
		{"an error that names its outcome", nil, func(*testing.T, context.Context) error { return fmt.Errorf("pool: %w", ownError{upstream.TLSError}) }, upstream.TLSError},
		{"the client's going away wins over it", canceled, func(*testing.T, context.Context) error { return ownError{upstream.TLSError} }, upstream.ClientAbort},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := bg
			if tc.ctx != nil {
				ctx = tc.ctx()
			}
			err := tc.err(t, ctx)
			assert.Equal(t, tc.want, upstream.ClassifyRoundTrip(ctx, err), "%v", err)
		})
	}
}

// ownError is a transport's own refusal that names its outcome.
type ownError struct{ o upstream.Outcome }

func (e ownError) Error() string             { return "refused: " + e.o.String() }
func (e ownError) Outcome() upstream.Outcome { return e.o }

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// peer serves each loopback connection with f, under a deadline, and
// returns its address.
func peer(t *testing.T, f func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(patience))
				f(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// TestOutcomeNames: every outcome has its name, and each is exactly one of
// a success, a transport failure and a client-side end.
func TestOutcomeNames(t *testing.T) {
	names := upstream.OutcomeNames()
	assert.Equal(t, []string{"success", "connectError", "tlsError", "timeout", "responseHeaderError", "bodyError", "clientAbort", "clientBodyError", "requestInvalid"}, names)
	require.Equal(t, int(upstream.RequestInvalid)+1, len(names), "RequestInvalid is the last outcome")
	require.Equal(t, upstream.NumOutcomes, len(names))
	for i, n := range names {
		o := upstream.Outcome(i)
		assert.Equal(t, n, o.String())
		groups := 0
		for _, in := range []bool{o == upstream.Success, o.TransportFailure(), o.ClientSide()} {
			if in {
				groups++
			}
		}
		assert.Equal(t, 1, groups, "%v is in %d groups", o, groups)
	}
	assert.True(t, upstream.BodyError.TransportFailure())
	assert.True(t, upstream.ClientBodyError.ClientSide())
	assert.True(t, upstream.RequestInvalid.ClientSide())
	assert.False(t, upstream.RequestInvalid.TransportFailure())
	assert.False(t, upstream.ClientAbort.TransportFailure())
	assert.Equal(t, "invalid(9)", upstream.Outcome(len(names)).String())
}
