// Package problem is the one type of a configuration problem, shared by
// every package of the library that validates a config.
//
// Each package validates its own config and reports each problem as an
// [*Error] with a stable Code ("balance.policy.unknown"), a Path relative
// to the config it validated ("cookie.sameSite") and a message for
// people. Each names the type for its users with an alias
// (balance.ValidationError = problem.Error), so errors.As finds a problem
// whichever package reported it. A caller that embeds a config in its own
// (the snapshot compiler, say) puts its path in front of the package's
// ([List.Under]) and keeps the code.
//
// The problems of one validation are joined with errors.Join ([List.Err]);
// [All] takes them apart again.
package problem

import (
	"errors"
	"strconv"
)

// Error is one problem of a config. Codes and paths are stable: tools and
// tests may branch on them. Messages may change.
type Error struct {
	// Code names the problem: "<package>.<field>.<what>", lower camel
	// case, such as "health.passive.window.invalid".
	Code string
	// Path locates the value in the validated config, in the names of
	// its documented form: "passive.window", "hosts[2].names[0]",
	// `metadata["zone"]`. Empty means the config as a whole.
	Path string
	// Msg says what is wrong, for people.
	Msg string
}

// Error returns "<path>: <msg> (<code>)", or "<msg> (<code>)" without a
// path.
func (e *Error) Error() string {
	n := len(e.Path) + 2 + len(e.Msg) + len(e.Code) + 3
	b := make([]byte, 0, n)
	if e.Path != "" {
		b = append(b, e.Path...)
		b = append(b, ": "...)
	}
	b = append(b, e.Msg...)
	b = append(b, " ("...)
	b = append(b, e.Code...)
	b = append(b, ')')
	return string(b)
}

// List collects the problems of one validation, in the order found. The
// zero value is an empty list.
type List []*Error

// Add records a problem.
func (l *List) Add(code, path, msg string) {
	*l = append(*l, &Error{Code: code, Path: path, Msg: msg})
}

// Under records every problem err holds (see [All]) with prefix put in
// front of its path ([Join]). An error in err that holds no problem is
// recorded at prefix with the code other and its text as the message.
func (l *List) Under(prefix, other string, err error) {
	if err == nil {
		return
	}
	var p *Error
	switch e := err.(type) {
	case *Error:
		p = e
	case interface{ Unwrap() []error }:
		for _, inner := range e.Unwrap() {
			l.Under(prefix, other, inner)
		}
		return
	default:
		if !errors.As(err, &p) {
			l.Add(other, prefix, err.Error())
			return
		}
	}
	if prefix == "" {
		*l = append(*l, p)
		return
	}
	*l = append(*l, &Error{Code: p.Code, Path: Join(prefix, p.Path), Msg: p.Msg})
}

// Err returns the problems joined with errors.Join, or nil for none.
func (l List) Err() error {
	if len(l) == 0 {
		return nil
	}
	errs := make([]error, len(l))
	for i, p := range l {
		errs[i] = p
	}
	return errors.Join(errs...)
}

// All returns every problem err holds: err itself if it is an *Error, or
// every *Error of an errors.Join (nested joins and %w wrapping included),
// in order. It returns nil for an error that holds none.
func All(err error) []*Error {
	return appendAll(nil, err)
}

func appendAll(dst []*Error, err error) []*Error {
	switch e := err.(type) {
	case nil:
		return dst
	case *Error:
		return append(dst, e)
	case interface{ Unwrap() []error }:
		for _, inner := range e.Unwrap() {
			dst = appendAll(dst, inner)
		}
		return dst
	case interface{ Unwrap() error }:
		return appendAll(dst, e.Unwrap())
	}
	return dst
}

// Join puts prefix in front of a path: "a.b" and "c" make "a.b.c", "a"
// and "[2].c" make "a[2].c"; either may be empty.
func Join(prefix, path string) string {
	switch {
	case path == "":
		return prefix
	case prefix == "":
		return path
	case path[0] == '[':
		return prefix + path
	}
	return prefix + "." + path
}

// Index returns path with an index: "hosts" and 2 make "hosts[2]".
func Index(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// CodePaths returns "<code> <path>" for every error err joins, in order:
// the shape tests compare. An error that is no problem appears as "not a
// problem: " and its text, so a test that expects problems fails on it.
func CodePaths(err error) []string {
	var out []string
	var walk func(error)
	walk = func(err error) {
		var p *Error
		switch e := err.(type) {
		case nil:
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				walk(inner)
			}
		default:
			if errors.As(err, &p) {
				out = append(out, p.Code+" "+p.Path)
			} else {
				out = append(out, "not a problem: "+err.Error())
			}
		}
	}
	walk(err)
	return out
}
