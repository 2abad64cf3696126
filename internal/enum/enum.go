// Package enum is the name table of a package's enumerated config values:
// the one place a value's name is written, which its String, its Parse
// function and the list of names a config document accepts all read.
package enum

import (
	"strconv"
	"strings"
)

// Names lists the names of the values of T: the value n is Names[n], so
// the zero value (the default) comes first.
type Names[T ~uint8] []string

// Name returns the name of v, or "invalid(n)" for a value without one.
func (e Names[T]) Name(v T) string {
	if int(v) < len(e) {
		return e[v]
	}
	return "invalid(" + strconv.Itoa(int(v)) + ")"
}

// Parse returns the value a name stands for. Names are case-sensitive.
func (e Names[T]) Parse(s string) (T, bool) {
	for i, n := range e {
		if n == s {
			return T(i), true
		}
	}
	return 0, false
}

// Known reports whether v has a name.
func (e Names[T]) Known(v T) bool { return int(v) < len(e) }

// List returns the names separated by commas, for messages.
func (e Names[T]) List() string { return strings.Join(e, ", ") }
