// Package cowmap is a copy-on-write map for state that many goroutines
// read on the request path and a few write rarely: the gate's pending
// ACME challenges and the proxy's per-server-name transports.
//
// # Main types
//
// A [Map] keeps a map behind one atomic pointer. A read is one atomic load
// and a map lookup, with no lock and no allocation; a write takes the
// writers' lock, copies the map, changes the copy and publishes it, so a
// reader always sees a whole map, the one before a write or the one after.
// Writes cost O(len) each, which is right for a handful of entries or a
// bounded set filled once, and wrong for a map that changes per request.
//
// # Concurrency
//
// The zero Map is empty and ready to use; every method is safe for
// concurrent use. A Map must not be copied after first use.
package cowmap
