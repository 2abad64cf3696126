package health

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strconv"
)

// Outcome is how a proxied request to a destination ended, as the forwarder
// reports it to [Monitor.Record].
type Outcome uint8

const (
	// Success: a response came back and its body was relayed (whatever its
	// status, except 5xx when the forwarder reports ServerError).
	Success Outcome = iota
	// ConnectError: no connection could be made.
	ConnectError
	// TLSError: the TLS handshake with the destination failed.
	TLSError
	// Timeout: the destination did not answer in time.
	Timeout
	// ResponseHeaderError: the connection broke or the answer was
	// malformed before the response header was complete.
	ResponseHeaderError
	// BodyError: the destination's response body broke off (or the
	// request body could not be sent to it).
	BodyError
	// ServerError: the destination answered 5xx. Only FailureRateWith5xx
	// counts it.
	ServerError
	// ClientAbort: the client went away. It never counts against the
	// destination, in any policy: it is not even counted as a request.
	ClientAbort
)

// String returns the outcome's name.
func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case ConnectError:
		return "connect error"
	case TLSError:
		return "TLS error"
	case Timeout:
		return "timeout"
	case ResponseHeaderError:
		return "response header error"
	case BodyError:
		return "body error"
	case ServerError:
		return "5xx"
	case ClientAbort:
		return "client abort"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// TransportFailure reports whether o is a failure of the transport to the
// destination: connect, TLS, timeout, response header or body errors.
func (o Outcome) TransportFailure() bool {
	return o >= ConnectError && o <= BodyError
}

// ClassifyRoundTrip maps the error of an upstream round trip (before any
// response header) to an outcome. requestCtx is the client request's
// context: when it is done, the client went away and the outcome is
// ClientAbort whatever the error says. A nil error is Success.
func ClassifyRoundTrip(requestCtx context.Context, err error) Outcome {
	if err == nil {
		return Success
	}
	if requestCtx != nil && requestCtx.Err() != nil && !errors.Is(requestCtx.Err(), context.DeadlineExceeded) {
		return ClientAbort
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return Timeout
	}
	var (
		rh  tls.RecordHeaderError
		ae  tls.AlertError
		cv  *tls.CertificateVerificationError
		ua  x509.UnknownAuthorityError
		hn  x509.HostnameError
		cie x509.CertificateInvalidError
	)
	if errors.As(err, &rh) || errors.As(err, &ae) || errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &cie) {
		return TLSError
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return ConnectError
	}
	if errors.Is(err, context.Canceled) {
		return ClientAbort
	}
	return ResponseHeaderError
}
