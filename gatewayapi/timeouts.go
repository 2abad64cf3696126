package gatewayapi

import (
	"regexp"
	"strconv"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/paduraksa/paduraksa/config"
)

// gepDuration is a Gateway API Duration (GEP-2257): one to four numbers
// of at most five digits, each with its unit h, m, s or ms ("1h30m",
// "500ms"). Every one is a Go duration too.
var gepDuration = regexp.MustCompile(`^([0-9]{1,5}(h|m|s|ms)){1,4}$`)

// timeouts translates a rule's timeouts: request is the route's
// timeouts.request (from the gate's start to the answer's head, 504 past
// it), backendRequest its timeouts.perTry (each attempt, to its answer's
// head). "0s" is none in both, as the API asks. The API's backendRequest
// runs to the end of the backend's answer; the route's perTry ends at
// its head, so that a stream whose head came in time is not cut.
func (t *translation) timeouts(base *config.Route, origins *[]origin, tm *gwv1.HTTPRouteTimeouts, at string) {
	for _, d := range [...]struct {
		v     *gwv1.Duration
		dst   *config.Duration
		field string
		doc   string
	}{{tm.Request, &base.Timeouts.Request, "request", ".timeouts.request"}, {tm.BackendRequest, &base.Timeouts.PerTry, "backendRequest", ".timeouts.perTry"}} {
		if d.v == nil {
			continue
		}
		if !gepDuration.MatchString(string(*d.v)) {
			t.probs.Add(CodeRuleTimeouts, at+"."+d.field, "duration "+strconv.Quote(string(*d.v))+" is not a Gateway API Duration: numbers with units h, m, s or ms (\"1h30m\", \"500ms\")")
			continue
		}
		*d.dst = config.Duration(*d.v)
		*origins = append(*origins, origin{d.doc, at + "." + d.field})
	}
}
