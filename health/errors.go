package health

import "github.com/paduraksa/paduraksa/internal/problem"

// ValidationError is one problem found in a health config: an error that
// refuses the config, or a warning about a setting that takes effect
// differently from how it reads.
//
// Code is stable and safe to branch on (one of the Code* constants, such
// as "health.active.interval.invalid"). Path locates the field relative to
// the validated [Config] ("active.interval"), so a caller that embeds the
// config can prefix its own path ("upstreams[3].health.active.interval").
// Msg is for people. It is the one problem type of the library's configs:
// errors.As finds it whichever package reported it.
type ValidationError = problem.Error

func problemAt(path, code, msg string) error {
	return &ValidationError{Code: code, Path: path, Msg: msg}
}
