// Package rawhttp writes HTTP/2 and HTTP/3 requests frame by frame for
// the library's tests: the header fields go out exactly as given (any
// name, any value, pseudo-fields in any order), which Go's own clients
// refuse to send. A test uses it to prove what a server lets through and
// what the gateway then does with it.
//
// [H2] speaks HTTP/2 on a connection the caller dialed (TLS with "h2" in
// ALPN, or plain TCP for h2c with prior knowledge); [H3] speaks HTTP/3
// on a QUIC connection the caller dialed with "h3". Each sends one
// request on a stream of its own and reads the answer, or the server's
// refusal, under the context's deadline.
package rawhttp
