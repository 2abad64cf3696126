// Package problemtest holds the library's tests' readings of validation
// problems: every problem an error holds as "code path", with a test
// failing on an error that is not a problem (problem.All would drop it
// unseen).
package problemtest
