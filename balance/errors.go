package balance

// ValidationError is one problem found in a balancing or affinity config.
//
// Code is stable and safe to branch on (for example
// "balance.policy.unknown"). Path locates the field relative to the config
// that was validated ("policy", "affinity.cookie.sameSite"), so a caller that
// embeds the config can prefix its own path
// ("upstreams[3].balance.policy"). Msg is for people.
type ValidationError struct {
	Code string
	Path string
	Msg  string
}

// Error returns "balance: <path>: <msg> (<code>)".
func (e *ValidationError) Error() string {
	return "balance: " + e.Path + ": " + e.Msg + " (" + e.Code + ")"
}

func invalid(path, code, msg string) error {
	return &ValidationError{Code: code, Path: path, Msg: msg}
}
