package tlsselect

// ValidationError reports one problem of a Config: an error that refuses
// it, or a warning (see Table.Warnings) that does not. Path is relative to
// the Config ("hosts[2].tls.minVersion", "certificates[0].certFile"); a
// caller that embeds the Config in a larger document prefixes it.
type ValidationError struct {
	Code string // stable code, one of the Code* constants
	Path string // field path relative to the Config
	Msg  string // human-readable detail
}

func (e *ValidationError) Error() string {
	return "tlsselect: " + e.Path + ": " + e.Msg + " (" + e.Code + ")"
}
