package upstream

import (
	"strconv"

	"github.com/paduraksa/paduraksa/internal/hostport"
	"github.com/paduraksa/paduraksa/internal/problem"
)

// ValidationError is one problem [NewCluster] or [ClusterConfig.Validate] found: a stable Code (one
// of the Code* constants), a Path relative to its arguments
// ("destinations[2].id") and a Msg for people. It is the one problem type
// of the library's configs: errors.As finds it whichever package reported
// it.
type ValidationError = problem.Error

// Codes of [ValidationError]. They are stable: tools and tests may branch
// on them. A config document spells a destination's scheme and host as
// one URL and reports them at its address (config's
// upstream.destination.address.invalid), read by the same rule.
//
//	code                                    path                         meaning
//	upstream.destination.id.missing         destinations[i].id           an empty ID
//	upstream.destination.id.duplicate       destinations[i].id           the ID of an earlier destination
//	upstream.destination.scheme.invalid     destinations[i].scheme       not "http" or "https"
//	upstream.destination.host.invalid       destinations[i].host         not host:port (a host name, an IPv4 address or an IPv6 one in brackets, and a port 1-65535); a URL
//	upstream.destination.healthHost.invalid destinations[i].healthHost   the same, for a health address that is set
const (
	CodeDestinationIDMissing         = "upstream.destination.id.missing"
	CodeDestinationIDDuplicate       = "upstream.destination.id.duplicate"
	CodeDestinationSchemeInvalid     = "upstream.destination.scheme.invalid"
	CodeDestinationHostInvalid       = "upstream.destination.host.invalid"
	CodeDestinationHealthHostInvalid = "upstream.destination.healthHost.invalid"
)

// Validate returns every problem of c, each a *[ValidationError] with a
// path relative to c ("destinations[2].host"), joined with errors.Join; nil
// means [Registry.Plan] and [NewCluster] can build it. The ID of the
// cluster is free-form. The destinations' IDs must be set and unique
// within the cluster, their Scheme "http" or "https", their Host (and
// HealthHost when set) host:port by the library's one rule for
// destination addresses, which a config document's addresses follow too.
func (c ClusterConfig) Validate() error {
	var errs problem.List
	checkDestinations(&errs, c.Destinations)
	return errs.Err()
}

func checkDestinations(errs *problem.List, destinations []DestinationConfig) {
	seen := make(map[string]int, len(destinations))
	for i, dc := range destinations {
		at := problem.Index("destinations", i)
		j, dup := seen[dc.ID]
		switch {
		case dc.ID == "":
			errs.Add(CodeDestinationIDMissing, at+".id", "a destination needs an ID")
		case dup:
			errs.Add(CodeDestinationIDDuplicate, at+".id", strconv.Quote(dc.ID)+" is also "+problem.Index("destinations", j))
		default:
			seen[dc.ID] = i
		}
		if reason := hostport.CheckScheme(dc.Scheme); reason != "" {
			errs.Add(CodeDestinationSchemeInvalid, at+".scheme", reason)
		}
		if _, reason := hostport.ParseHostPort(dc.Host); reason != "" {
			errs.Add(CodeDestinationHostInvalid, at+".host", strconv.Quote(dc.Host)+": "+reason)
		}
		if dc.HealthHost != "" {
			if _, reason := hostport.ParseHostPort(dc.HealthHost); reason != "" {
				errs.Add(CodeDestinationHealthHostInvalid, at+".healthHost", strconv.Quote(dc.HealthHost)+": "+reason)
			}
		}
	}
}
