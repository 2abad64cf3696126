package upstream

import "github.com/paduraksa/paduraksa/internal/enum"

// Outcome is how one exchange with a destination ended: a proxied request
// as the forwarder saw it, or an active probe. The forwarder, its
// counters and passive health all speak it.
//
// The outcomes fall in three groups. Success is an exchange that
// completed, whatever its status: a 5xx answer is Success with an
// [Observation.Status] of 500 or more, and only a policy that asks for it
// (health's FailureRateWith5xx) holds it against the destination. The
// transport failures, ConnectError to BodyError ([Outcome.TransportFailure]),
// are the destination's. The client-side ends, ClientAbort,
// ClientBodyError and RequestInvalid ([Outcome.ClientSide]), are the
// client's doing and never count against a destination, in any policy: the
// forwarder does not report them to an [Observer], and health ignores them
// if it is told.
type Outcome uint8

const (
	// Success: a response came back and was relayed whole (or the
	// connection was upgraded).
	Success Outcome = iota
	// ConnectError: no connection could be made to the destination.
	ConnectError
	// TLSError: the TLS handshake with the destination failed: a record
	// that is not TLS, an alert, a certificate that failed verification
	// or matched no pin.
	TLSError
	// Timeout: the destination did not answer in time (connect, TLS
	// handshake, response header, or no data for the idle timeout), or
	// the requester's deadline passed while it waited.
	Timeout
	// ResponseHeaderError: the connection broke, or the answer was not
	// valid HTTP, before the response header was complete (a status
	// outside 100-599 and an unasked 101 included).
	ResponseHeaderError
	// BodyError: the destination's response body broke off, or the
	// request body could not be sent to it.
	BodyError
	// ClientAbort: the client went away. Client-side: never counted
	// against the destination.
	ClientAbort
	// ClientBodyError: the client's request body failed (malformed or cut
	// chunks, shorter than its Content-Length, too slow, over a limit).
	// Client-side: never counted against the destination.
	ClientBodyError
	// RequestInvalid: the outgoing client refused the request before any
	// of it was sent, for what the request itself holds (its method, a
	// field name or value, its Host or target, a trailer, an upgrade the
	// upstream's protocol cannot carry, more header bytes than the
	// upstream takes). Client-side: the destination never saw it.
	RequestInvalid
)

var outcomeNames = enum.Names[Outcome]{
	"success", "connectError", "tlsError", "timeout",
	"responseHeaderError", "bodyError", "clientAbort", "clientBodyError",
	"requestInvalid",
}

// String returns the outcome's name, one of [OutcomeNames].
func (o Outcome) String() string { return outcomeNames.Name(o) }

// OutcomeNames returns the names of the outcomes, Success first; the
// outcome n is OutcomeNames()[n]. They are stable, for logs and metric
// labels.
func OutcomeNames() []string { return outcomeNames }

// TransportFailure reports whether o is a failure of the exchange with
// the destination: ConnectError, TLSError, Timeout, ResponseHeaderError or
// BodyError.
func (o Outcome) TransportFailure() bool { return o >= ConnectError && o <= BodyError }

// ClientSide reports whether the client ended the exchange or made it
// impossible (ClientAbort, ClientBodyError, RequestInvalid): such an
// outcome never counts against the destination.
func (o Outcome) ClientSide() bool { return o >= ClientAbort && o <= RequestInvalid }

// Observation is the outcome of one exchange with a destination.
type Observation struct {
	// Destination is the destination the exchange was with.
	Destination *Destination
	// Outcome is how it ended.
	Outcome Outcome
	// Status is the destination's status code when a response header
	// arrived, else 0. A Success with a Status of 500 or more is a 5xx
	// answer.
	Status int
	// NotSent reports that the exchange failed before any byte of the
	// request was written: the connection was refused or reset while it
	// was made, the connect timed out, the TLS handshake or the PROXY
	// header failed. The outcome is then ConnectError, TLSError or
	// Timeout. The destination is the one to blame, and the request may
	// go to another, whatever its method.
	NotSent bool
}

// Observer is told the outcome of exchanges with destinations, for
// passive health (health.Monitor is one). The forwarder calls Observe once
// per exchange that reached a destination's round trip, and never with a
// client-side outcome. Observe runs on the request path: it must not
// block, should not allocate, and must be safe for concurrent use.
type Observer interface {
	Observe(Observation)
}
