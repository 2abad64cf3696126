package upstream

import "github.com/paduraksa/paduraksa/internal/problem"

// ValidationError is one problem [NewCluster] found: a stable Code (one
// of the Code* constants), a Path relative to its arguments
// ("destinations[2].id") and a Msg for people. It is the one problem type
// of the library's configs: errors.As finds it whichever package reported
// it.
type ValidationError = problem.Error

// Codes of [ValidationError]. They are stable: tools and tests may branch
// on them.
//
//	code                                 path                 meaning
//	upstream.destination.id.missing      destinations[i].id   an empty ID
//	upstream.destination.id.duplicate    destinations[i].id   the ID of an earlier destination
const (
	CodeDestinationIDMissing   = "upstream.destination.id.missing"
	CodeDestinationIDDuplicate = "upstream.destination.id.duplicate"
)
