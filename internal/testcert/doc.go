// Package testcert makes throwaway self-signed TLS certificates for the
// library's tests: real crypto/tls listeners on loopback need one, and
// every package that tests TLS needs the same one.
package testcert
