// Package redact is the one rule for credentials in what the gateway
// shows of a request: the simulator's traces and outcomes, the recent
// requests of its sample, the admin API and the console. A header whose
// name is a credential's has its value shown as [Shown].
//
// The names redacted, compared without regard to case: Authorization,
// Proxy-Authorization, Cookie, Set-Cookie, and every name ending in -Key,
// -Token or -Secret (X-Api-Key, X-Auth-Token, X-Client-Secret). Near
// misses keep their value: X-Keyboard, Tokens, X-Secretary.
//
// The functions never change what they are given: a header or list that
// holds a credential is copied, one that holds none is returned as is.
// They are safe for concurrent use.
package redact
