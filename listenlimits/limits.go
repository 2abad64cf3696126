package listenlimits

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/paduraksa/paduraksa/internal/problem"
)

// Defaults of the zero Limits.
const (
	DefaultRequestHeaderTimeout      = 15 * time.Second
	DefaultIdleTimeout               = 120 * time.Second
	DefaultTLSHandshakeTimeout       = 10 * time.Second
	DefaultMaxHeaderBytes            = 32 << 10
	DefaultMaxConnections            = 10_000
	DefaultMaxUpgradedConnections    = 2_000
	DefaultHTTP2MaxConcurrentStreams = 100
	DefaultMinRequestBodyRate        = 120 // bytes per second
	DefaultMinRequestBodyGrace       = 10 * time.Second
	DefaultMinResponseRate           = 240 // bytes per second
	DefaultMinResponseGrace          = 10 * time.Second
	DefaultIdleRelease               = time.Second

	// MinGrace is the shortest grace a minimum data rate accepts: shorter
	// graces judge a rate on too few bytes.
	MinGrace = time.Second
)

// Off, as any count or rate of Limits, turns that limit off. Any negative
// value does the same, and so does a negative duration.
const Off = -1

// Validation codes. They are stable: tools match on them.
const (
	CodeMinRequestBodyGraceInvalid = "listenlimits.minRequestBodyGrace.invalid"
	CodeMinResponseGraceInvalid    = "listenlimits.minResponseGrace.invalid"
	CodeMaxHeaderBytesInvalid      = "listenlimits.maxHeaderBytes.invalid"
	CodeHTTP2StreamsInvalid        = "listenlimits.http2MaxConcurrentStreams.invalid"
)

// Limits are the limits a public listener puts on its clients. The zero
// value gives every default; in each field 0 means its default and a
// negative value turns the limit off. Limits is a plain value: copy it,
// compare it, serialise it.
type Limits struct {
	// RequestHeaderTimeout bounds the time to read a request's headers:
	// from the end of the TLS handshake for the first request, from its
	// first byte for the next ones. A slower client is closed (net/http
	// closes without answering 408). Default 15 s.
	RequestHeaderTimeout time.Duration

	// IdleTimeout bounds the wait for the next request on an idle
	// keep-alive connection (HTTP/1.1 and HTTP/2). Default 120 s.
	IdleTimeout time.Duration

	// TLSHandshakeTimeout bounds the TLS handshake, from accept. net/http
	// has no setting of its own for it (see the package documentation); it
	// is enforced by Listener. Default 10 s.
	TLSHandshakeTimeout time.Duration

	// MaxHeaderBytes bounds the request line and headers (net/http adds
	// 4096 bytes of slack). Default 32 KiB.
	MaxHeaderBytes int

	// MaxConnections bounds the open connections of a Listener; it sheds
	// the ones above. Default 10 000.
	MaxConnections int

	// MaxUpgradedConnections bounds the requests that ask for an upgrade
	// (WebSockets, CONNECT tunnels) while they are served, which for one
	// that became an upgrade is its whole life; one more is answered 503.
	// Enforced by Handler. Default 2 000.
	MaxUpgradedConnections int

	// HTTP2MaxConcurrentStreams bounds the concurrent streams of one
	// HTTP/2 connection. Default 100. HTTP/3 has its own setting
	// (quic.Config.MaxIncomingStreams, also 100 by default).
	HTTP2MaxConcurrentStreams int

	// MinRequestBodyRate is the average rate, in bytes per second, a
	// request body must keep once MinRequestBodyGrace has passed since the
	// handler began to read it. Default 120 B/s over 10 s. Enforced by
	// MinRateReader (Handler installs it).
	MinRequestBodyRate  int
	MinRequestBodyGrace time.Duration

	// MinResponseRate is the rate, in bytes per second, a client must read
	// a response at while a write waits for it, after a grace of
	// MinResponseGrace per write. Default 240 B/s over 10 s. Enforced by
	// MinRateWriter (Handler installs it).
	MinResponseRate  int
	MinResponseGrace time.Duration

	// IdleRelease is how long an idle HTTP/1.1 keep-alive connection of
	// a Listener keeps its net/http state: the serving goroutine with its
	// stack (8 KiB once a request has been served) and its two 4 KiB
	// buffers. After that the connection is parked: net/http lets go of it
	// as if it had closed, a small goroutine of the Listener's waits for
	// the next request's first byte (under what is left of IdleTimeout),
	// and Accept hands the connection back to the server, which serves it
	// as a new one. Only plain HTTP/1.1 parks (a connection under
	// crypto/tls or hijacked never does), and only on a server that Apply
	// configured; the release is timed from the server's IdleTimeout as
	// Apply set it (a server whose IdleTimeout is changed afterwards
	// parks at IdleRelease plus the difference). The server's ConnState
	// sees a parked connection close and come back new. Default 1 s.
	IdleRelease time.Duration

	// LaxFraming turns off the framing guard of Listener, which refuses
	// with 400 and a close an HTTP/1.x request with both Content-Length
	// and Transfer-Encoding, or with Transfer-Encoding on HTTP/1.0 (see
	// the package documentation). The zero value keeps it on.
	LaxFraming bool
}

// ValidationError reports one invalid field of Limits: a stable Code (one
// of the Code* constants), the field's Path ("minRequestBodyGrace") and a
// message. It is the one problem type of the library's configs: errors.As
// finds it whichever package reported it.
type ValidationError = problem.Error

// WithDefaults returns l with every zero field set to its default; off
// (negative) fields stay as they are.
func (l Limits) WithDefaults() Limits {
	setD := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	setI := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	setD(&l.RequestHeaderTimeout, DefaultRequestHeaderTimeout)
	setD(&l.IdleTimeout, DefaultIdleTimeout)
	setD(&l.TLSHandshakeTimeout, DefaultTLSHandshakeTimeout)
	setI(&l.MaxHeaderBytes, DefaultMaxHeaderBytes)
	setI(&l.MaxConnections, DefaultMaxConnections)
	setI(&l.MaxUpgradedConnections, DefaultMaxUpgradedConnections)
	setI(&l.HTTP2MaxConcurrentStreams, DefaultHTTP2MaxConcurrentStreams)
	setI(&l.MinRequestBodyRate, DefaultMinRequestBodyRate)
	setD(&l.MinRequestBodyGrace, DefaultMinRequestBodyGrace)
	setI(&l.MinResponseRate, DefaultMinResponseRate)
	setD(&l.MinResponseGrace, DefaultMinResponseGrace)
	setD(&l.IdleRelease, DefaultIdleRelease)
	return l
}

// Validate reports every problem of l at once, each a *ValidationError,
// joined with errors.Join.
func (l Limits) Validate() error {
	var errs []error
	add := func(code, path, format string, args ...any) {
		errs = append(errs, &ValidationError{Code: code, Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	r := l.WithDefaults()
	if r.MinRequestBodyRate > 0 && r.MinRequestBodyGrace > 0 && r.MinRequestBodyGrace <= MinGrace {
		add(CodeMinRequestBodyGraceInvalid, "minRequestBodyGrace", "%v must exceed %v", r.MinRequestBodyGrace, MinGrace)
	}
	if r.MinResponseRate > 0 && r.MinResponseGrace > 0 && r.MinResponseGrace <= MinGrace {
		add(CodeMinResponseGraceInvalid, "minResponseGrace", "%v must exceed %v", r.MinResponseGrace, MinGrace)
	}
	if r.MaxHeaderBytes > 16<<20 {
		add(CodeMaxHeaderBytesInvalid, "maxHeaderBytes", "%d exceeds 16 MiB", r.MaxHeaderBytes)
	}
	if r.HTTP2MaxConcurrentStreams > 1<<31-1 {
		add(CodeHTTP2StreamsInvalid, "http2MaxConcurrentStreams", "%d exceeds 2^31-1", r.HTTP2MaxConcurrentStreams)
	}
	return errors.Join(errs...)
}

// on returns v when it turns a limit on, 0 when it is off.
func on[T int | time.Duration](v T) T { return max(v, 0) }

// Apply validates l and sets, with its defaults, the limits net/http
// enforces itself on srv:
//
//   - ReadHeaderTimeout = RequestHeaderTimeout
//   - IdleTimeout = IdleTimeout
//   - MaxHeaderBytes = MaxHeaderBytes
//   - HTTP2.MaxConcurrentStreams = HTTP2MaxConcurrentStreams (a copy of
//     srv.HTTP2, or a new config, so a shared *http.HTTP2Config is never
//     modified)
//
// Apply leaves ReadTimeout and WriteTimeout alone: they bound a whole
// request or response, which would cut long downloads, uploads and
// streams; the minimum data rates judge those instead. Note that net/http
// uses the smallest of ReadHeaderTimeout (or ReadTimeout when that is
// zero) and WriteTimeout as the TLS handshake deadline, so with Apply
// alone the handshake gets RequestHeaderTimeout; Listener tightens it to
// TLSHandshakeTimeout. An off field sets 0, net/http's "no limit", except
// MaxHeaderBytes, where net/http's 0 means its 1 MiB default.
//
// Apply also wraps srv.ConnState (calling the hook already there, if any)
// to tell a Listener's connections when a handler hijacks them, so the
// framing guard follows a request that asks for an upgrade and stops only
// at a real upgrade. Without that hook the guard stops following a
// connection at its first such request. Call Apply once per server, and
// set ConnState before it.
func (l Limits) Apply(srv *http.Server) error {
	if err := l.Validate(); err != nil {
		return err
	}
	r := l.WithDefaults()
	srv.ReadHeaderTimeout = on(r.RequestHeaderTimeout)
	// With IdleTimeout 0, net/http falls back to ReadTimeout, and waits
	// forever when that is 0 too.
	srv.IdleTimeout = on(r.IdleTimeout)
	srv.MaxHeaderBytes = on(r.MaxHeaderBytes)
	var h2 http.HTTP2Config
	if srv.HTTP2 != nil {
		h2 = *srv.HTTP2
	}
	h2.MaxConcurrentStreams = on(r.HTTP2MaxConcurrentStreams)
	if r.HTTP2MaxConcurrentStreams < 0 {
		// net/http has no "unlimited": 0 means its default of 100 or more.
		h2.MaxConcurrentStreams = 1<<31 - 1
	}
	srv.HTTP2 = &h2
	prev := srv.ConnState
	srv.ConnState = func(c net.Conn, s http.ConnState) {
		reportState(c, s)
		if prev != nil {
			prev(c, s)
		}
	}
	return nil
}
