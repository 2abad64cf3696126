// Package testcert makes throwaway TLS certificates for the library's
// tests: self-signed server certificates ([New]), which real crypto/tls
// listeners on loopback need, and a certificate authority issuing client
// certificates ([NewCA]), for the tests of client certificate checks.
// Every package that tests TLS needs the same ones.
package testcert
