package balance

import "github.com/paduraksa/paduraksa/internal/problem"

// ValidationError is one problem found in a balancing or affinity config:
// a stable Code (one of the Code* constants, such as
// "balance.policy.unknown"), a Path relative to the config that was
// validated ("policy", "cookie.sameSite"), so that a caller that embeds
// the config can put its own path in front ("upstreams[3].loadBalancing"),
// and a Msg for people. It is the one problem type of the library's
// configs: errors.As finds it whichever package reported it.
type ValidationError = problem.Error

func invalid(path, code, msg string) error {
	return &ValidationError{Code: code, Path: path, Msg: msg}
}
