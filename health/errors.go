package health

// ValidationError is one problem found in a health config: an error that
// refuses the config, or a warning about a setting that takes effect
// differently from how it reads.
//
// Code is stable and safe to branch on (for example
// "health.active.interval.invalid"). Path locates the field relative to the
// validated [Config] ("active.interval"), so a caller that embeds the config
// can prefix its own path ("upstreams[3].health.active.interval"). Msg is for
// people.
type ValidationError struct {
	Code string
	Path string
	Msg  string
}

// Error returns "health: <path>: <msg> (<code>)".
func (e *ValidationError) Error() string {
	return "health: " + e.Path + ": " + e.Msg + " (" + e.Code + ")"
}

func problem(path, code, msg string) error {
	return &ValidationError{Code: code, Path: path, Msg: msg}
}
