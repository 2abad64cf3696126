package proxy

import (
	"net/http"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/internal/problem"
)

// AnswerRules are the answer headers of a route that answers itself (a
// gate route's Redirect or Fixed, [gate.Route.AnswerHeaders]): its site's
// request ID and its response header rules merged over its site's, as a
// [Route] adds them to the gate's answers. Build it with
// [NewAnswerRules]; the zero AnswerRules adds nothing.
type AnswerRules struct {
	site  *Site
	rules headerRules
}

var _ gate.AnswerHeaders = (*AnswerRules)(nil)

// NewAnswerRules compiles the response rules of a route that answers
// itself; site may be nil. Its problems have the paths of a
// [RouteConfig]'s ResponseHeaders ("responseHeaders[k]...").
func NewAnswerRules(site *Site, rules []HeaderRule) (*AnswerRules, error) {
	var errs problem.List
	var siteResp headerRules
	if site != nil {
		siteResp = site.respRules
	}
	a := &AnswerRules{site: site, rules: compileRules(&errs, "responseHeaders", Response, siteResp, rules)}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return a, nil
}

// SetAnswerHeaders adds the request ID and the rules to an answer the
// gate gives itself for the route ([gate.AnswerHeaders]).
func (a *AnswerRules) SetAnswerHeaders(h http.Header, r *http.Request) {
	if a.site != nil && a.site.requestID != RequestIDPass {
		h["X-Request-Id"] = a.site.requestIDValue(r)
	}
	a.rules.apply(h)
}
