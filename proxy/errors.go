package proxy

import (
	"context"
	"errors"
	"net"
)

// ErrorKind classifies a failed exchange with an upstream, for passive
// health and metrics.
type ErrorKind uint8

const (
	ErrorNone        ErrorKind = iota
	ErrorConnect               // the connection could not be made
	ErrorTLS                   // the TLS handshake failed
	ErrorTimeout               // connect, response header or idle timeout
	ErrorResponse              // the response header was malformed or cut
	ErrorBody                  // the body was cut mid-way
	ErrorClientAbort           // the client went away: not the upstream's fault
	ErrorClientBody            // the client's request body failed: not the upstream's fault
	errorKindCount
)

var errorKindNames = [...]string{"none", "connect", "tls", "timeout", "response", "body", "client-abort", "client-body"}

// String returns the kind's name.
func (k ErrorKind) String() string {
	if int(k) < len(errorKindNames) {
		return errorKindNames[k]
	}
	return "invalid"
}

// ClassifyError says what kind of failure err is. ctx is the client
// request's context: when it is done, the failure is a client abort whatever
// err says.
func ClassifyError(ctx context.Context, err error) ErrorKind {
	if err == nil {
		return ErrorNone
	}
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return ErrorClientAbort
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return ErrorTimeout
	}
	var recErr tlsRecordHeaderError
	if errors.As(err, &recErr) || isTLSError(err) {
		return ErrorTLS
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return ErrorConnect
	}
	if errors.Is(err, errTooManyNames) {
		return ErrorTLS
	}
	return ErrorResponse
}
