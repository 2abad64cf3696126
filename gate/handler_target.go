package gate

import "net/http"

// Handler adapts an [http.Handler] to a [Target], so a route can hand its
// requests to code of the embedder's own (an API served in the process, a
// health page, a [http.ServeMux]) beside routes to upstreams.
//
// The handler sees the request the gate decided on, on the gate's
// goroutine: only once the host, its TLS re-check, both chains and the
// limits let it through; without the request headers the host's and the
// route's policies own (a forward auth's identity headers); with the body
// cut at the route's limit when its length is unknown. Its answer goes through the gate's response writer, so
// the status and bytes count in the metrics and the access log, and
// [http.ResponseController] reaches the connection's writer (flushes,
// hijacking, deadlines). The Server, Alt-Svc and
// Strict-Transport-Security headers the gate decided are set before it
// runs; the handler may change them.
//
// What it does not get, compared with the proxy's Route: the request's URL
// is the client's, not the gate's spelling toward upstreams
// ([Request.ForwardPath]) and no rewrite applies (a handler under "/api"
// sees "/api/x"; wrap it in [http.StripPrefix] for "/x"); r.RemoteAddr is
// the connection's peer as net/http set it, not the client the gate
// resolved from a PROXY header or a trusted proxy ([Request.Client]: use
// a [TargetFunc] to read it, and the headers policies set for the
// upstream, [Request.Upstream], such as a forward auth's identity); no
// X-Forwarded-* or X-Real-Ip headers, no header rules, request ID,
// compression, retries or upstream record; and
// the gate's own answers on the route carry the host's [AnswerHeaders]
// only. A simulation ([Gate.Simulate]) names the route and never calls the
// handler.
//
// New refuses a route whose Handler wraps nil.
func Handler(h http.Handler) Target { return handlerTarget{h: h} }

type handlerTarget struct{ h http.Handler }

var (
	_ Target        = handlerTarget{}
	_ TargetChecker = handlerTarget{}
)

func (t handlerTarget) Forward(w http.ResponseWriter, r *http.Request, _ *Request) {
	t.h.ServeHTTP(w, r)
}

// CheckTarget reports a nil handler.
func (t handlerTarget) CheckTarget() error {
	if t.h == nil {
		return &ValidationError{Code: CodeRouteTargetMissing, Path: "handler", Msg: "gate.Handler was given a nil http.Handler"}
	}
	return nil
}
