package upstream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
)

// ClassifyRoundTrip returns the outcome of a round trip to a destination
// that returned err before any response header: the forwarder's and the
// active probes' one classifier. A nil err is Success.
//
// ctx is the context of the request: when it was cancelled, the requester
// went away and the outcome is ClientAbort, whatever err says; when its
// deadline passed, the destination did not answer in time (Timeout). A nil
// ctx is read as one that is never done.
//
// An error in err's tree with a method Outcome() Outcome names its own
// outcome, so a transport can classify a refusal of its own; otherwise
// timeouts (context.DeadlineExceeded, a [net.Error] whose Timeout is true)
// are Timeout; TLS record, alert and certificate errors ([tls.RecordHeaderError],
// [tls.AlertError], [*tls.CertificateVerificationError] and the x509
// verification errors) are TLSError; a failed dial is ConnectError; any
// other context.Canceled is ClientAbort; and everything else is a broken or
// malformed response, ResponseHeaderError. It has only the error: the
// proxy's forwarder reads a ResponseHeaderError again against the request
// and makes it RequestInvalid when the outgoing client refused what the
// request holds.
func ClassifyRoundTrip(ctx context.Context, err error) Outcome {
	if err == nil {
		return Success
	}
	if ctx != nil && errors.Is(ctx.Err(), context.Canceled) {
		return ClientAbort
	}
	var own interface{ Outcome() Outcome }
	if errors.As(err, &own) {
		return own.Outcome()
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return Timeout
	}
	if isTLSError(err) {
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

// isTLSError reports whether err comes from a TLS handshake: a record that
// is not TLS, an alert, or a certificate that failed verification.
func isTLSError(err error) bool {
	var (
		rec   tls.RecordHeaderError
		alert tls.AlertError
		verr  *tls.CertificateVerificationError
		unk   x509.UnknownAuthorityError
		host  x509.HostnameError
		inv   x509.CertificateInvalidError
	)
	return errors.As(err, &rec) || errors.As(err, &alert) || errors.As(err, &verr) ||
		errors.As(err, &unk) || errors.As(err, &host) || errors.As(err, &inv)
}
