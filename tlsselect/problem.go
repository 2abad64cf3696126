package tlsselect

import "github.com/paduraksa/paduraksa/internal/problem"

// ValidationError reports one problem of a Config: an error that refuses
// it, or a warning (see Table.Warnings) that does not. Path is relative to
// the Config ("hosts[2].tls.minVersion", "certificates[0].certFile"); a
// caller that embeds the Config in a larger document prefixes it. It is
// the library's one problem type, so errors.As finds it whichever package
// reported it.
type ValidationError = problem.Error
