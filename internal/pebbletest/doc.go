// Package pebbletest runs a real ACME server for the library's tests:
// pebble, the test CA of Let's Encrypt, with pebble-challtestsrv as the DNS
// server it resolves every name with, to 127.0.0.1, so it validates HTTP-01
// challenges against a gateway listening on loopback.
//
// [Start] runs both as children of a test, their ports chosen free and
// their state in a temporary directory, and returns a [Server] once pebble
// serves its directory; both are killed at the test's cleanup, and their
// output is logged when the test failed. The binaries are Debian's pebble
// package; a machine without them fails the test with how to install it
// rather than skipping it.
//
// The package is imported only by tests. A Server is safe for concurrent
// use.
package pebbletest
