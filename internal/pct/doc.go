// Package pct reads percent-encoded URL components (RFC 3986 section
// 2.1) without decoding them into a new string: the gate's query matches
// and the proxy's query rewrites compare a raw component with a decoded
// name or value in place, allocating nothing.
package pct
