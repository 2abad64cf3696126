package snapshot

import "errors"

// ValidationError is one problem of a config document: a stable Code (one
// of the Code* constants), the Path of the offending value in JSON names
// ("hosts[2].routes[0].upstream"; empty for the whole document) and a
// human-readable message. Codes and paths are stable; messages may change.
type ValidationError struct {
	Code string
	Path string
	Msg  string
}

// Error returns "snapshot: <path>: <msg> (<code>)".
func (e *ValidationError) Error() string {
	n := len("snapshot: ") + len(e.Path) + 2 + len(e.Msg) + len(e.Code) + 3
	b := make([]byte, 0, n)
	b = append(b, "snapshot: "...)
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

// Problems returns the validation errors held by err: err itself if it is a
// *ValidationError, or every *ValidationError found in an [errors.Join]
// (nested joins and %w wrapping included), in order. It returns nil if err
// holds none.
func Problems(err error) []*ValidationError {
	return appendProblems(nil, err)
}

func appendProblems(dst []*ValidationError, err error) []*ValidationError {
	switch e := err.(type) {
	case nil:
		return dst
	case *ValidationError:
		return append(dst, e)
	case interface{ Unwrap() []error }:
		for _, inner := range e.Unwrap() {
			dst = appendProblems(dst, inner)
		}
		return dst
	case interface{ Unwrap() error }:
		return appendProblems(dst, e.Unwrap())
	}
	return dst
}

// joinProblems returns the problems as one error ([errors.Join]), or nil.
func joinProblems(ps []*ValidationError) error {
	if len(ps) == 0 {
		return nil
	}
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = p
	}
	return errors.Join(errs...)
}
