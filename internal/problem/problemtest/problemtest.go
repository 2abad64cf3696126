package problemtest

import (
	"testing"

	"github.com/paduraksa/paduraksa/internal/problem"
)

// Problems is problem.All, failing t when err holds an error that is not
// a *problem.Error.
func Problems(t testing.TB, err error) []*problem.Error {
	t.Helper()
	var walk func(err error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil, *problem.Error:
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				walk(inner)
			}
		case interface{ Unwrap() error }:
			walk(e.Unwrap())
		default:
			t.Errorf("an error that is not a *ValidationError: %T %v", err, err)
		}
	}
	walk(err)
	return problem.All(err)
}

// CodePaths returns "code path" for each problem.
func CodePaths(probs []*problem.Error) []string {
	var out []string
	for _, p := range probs {
		out = append(out, p.Code+" "+p.Path)
	}
	return out
}

// List returns "code path" for each problem of err, failing t when err
// holds anything but problems.
func List(t testing.TB, err error) []string {
	t.Helper()
	return CodePaths(Problems(t, err))
}
