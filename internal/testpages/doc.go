// Package testpages makes the HTML pages the library's compression is
// measured on, the same in the proxy's benchmarks and in the suite of
// benchmarks/: a varied page ([Varied]), words drawn from a fixed seed,
// which compresses about as well as a page of prose, and a repetitive one
// ([Repetitive]), a table whose rows differ only in their numbers, which
// compresses about seven times (zlib level 1: 16384 bytes to 2.3 KB).
package testpages
