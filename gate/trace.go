package gate

import (
	"net/http"
	"net/netip"
)

// StepKind names a step of the decision.
type StepKind uint8

const (
	StepClient   StepKind = iota // client address and scheme resolved
	StepHost                     // host looked up
	StepRedirect                 // redirect answered (host redirect or HTTPS redirect)
	StepRoute                    // route matched (or not), on the path view; Reason says which match decided, or failed
	StepHandOver                 // request handed to the route's target
	StepAnswer                   // the gate or target answered itself
	StepForward                  // the target forwarded (reported by targets)
	StepACME                     // ACME HTTP-01 challenge answered
	StepTLS                      // TLS policy re-check (Status 421 when refused)
	StepHeaders                  // a response-header stage applied
	StepPolicy                   // one policy of a chain evaluated
	StepLimits                   // request limits (414, 431) or body limit (413)
	StepDrop                     // the connection is closed without an answer
	StepPath                     // the path was refused (400)
	StepRequest                  // the method, query or a declared trailer was refused (400)
)

var stepNames = [...]string{
	"client", "host", "redirect", "route", "hand-over", "answer", "forward",
	"acme", "tls", "headers", "policy", "limits", "drop", "path", "request",
}

// String returns the step's name.
func (k StepKind) String() string {
	if int(k) < len(stepNames) {
		return stepNames[k]
	}
	return "invalid"
}

// Scope says which chain a policy step belongs to.
type Scope uint8

const (
	ScopeHost  Scope = iota + 1 // the host's chain
	ScopeRoute                  // the route's chain
)

// String returns "host", "route" or "".
func (s Scope) String() string {
	switch s {
	case ScopeHost:
		return "host"
	case ScopeRoute:
		return "route"
	}
	return ""
}

// Step is one traced step. Fields that do not apply are zero.
type Step struct {
	Kind   StepKind
	Match  HostMatch
	Name   string // host as received, route ID, redirect target, destination, policy ID
	Path   string // the path view a route was matched on
	Status int
	Reason string
	Scheme string
	Addr   netip.Addr
	Peer   netip.AddrPort

	// Policy steps: the chain, the policy's index in it, its mode and
	// its verdict (for a shadowed policy, the verdict it would have had).
	Scope   Scope
	Index   int
	Mode    Mode
	Verdict Verdict

	// Host is the host a host step matched (nil when none did); Route
	// the route a route or hand-over step names, whose Target the
	// request goes to. Both are the Gate's immutable compiled values.
	Host  *Host
	Route *Route
	// Nearest is, on a route step that matched no route, the route of
	// highest precedence whose path matched (nil when none did); Reason
	// says which of its matches failed.
	Nearest *Route
	// Headers lists, on a headers step, each response header the gate
	// decides at that stage: its value when the answer carries it, else
	// why not.
	Headers []HeaderFact
	// Request is, on a hand-over step, the request as the route's target
	// receives it (its path view, forwarded spelling and template
	// values), for a tracer to ask the target what it would send
	// ([Gate.Simulate]). It is valid only during OnStep: the gate reuses
	// it afterwards. Nil on other steps.
	Request *Request
}

// HeaderFact is one response header of a headers step: Value when the
// answer carries it, else Absent says why it does not ("off", "plain
// HTTP", "no HTTP/3", "IP literal or loopback name", "HTTP/3
// connection").
type HeaderFact struct {
	Name   string
	Value  string
	Absent string
}

// traceHeaders reports the response headers of stage 1 and 2 with the
// reason for each one not sent. It runs only with a tracer.
func traceHeaders(tr *Tracer, hdr http.Header, r *http.Request, rq *Request, h *Host, key []byte) {
	fact := func(name, absent string) HeaderFact {
		if v := hdr[name]; len(v) > 0 {
			return HeaderFact{Name: name, Value: v[0]}
		}
		return HeaderFact{Name: name, Absent: absent}
	}
	altSvc := "HTTP/3 connection"
	switch {
	case h.altSvc == nil:
		altSvc = "no HTTP/3"
	case r.TLS == nil && r.ProtoMajor < 3:
		altSvc = "plain HTTP"
	}
	hsts := "IP literal or loopback name"
	switch {
	case h.hsts == nil:
		hsts = "off"
	case rq.Scheme != schemeHTTPS:
		hsts = "plain HTTP"
	}
	tr.OnStep(Step{Kind: StepHeaders, Host: h, Reason: "server, alt-svc, hsts", Headers: []HeaderFact{
		fact("Server", "off"), fact("Alt-Svc", altSvc), fact("Strict-Transport-Security", hsts),
	}})
}

// Tracer receives the steps of each decision. A nil *Tracer is the
// production setting and costs one predictable branch per step (compare
// BenchmarkGateDecide with BenchmarkGateDecideTraced); the simulator passes
// a recording one. OnStep
// must be safe for concurrent use when the gate serves concurrent requests.
// A Tracer without OnStep (the zero Tracer) is taken as nil by [New] and
// [Gate.Simulate].
type Tracer struct {
	OnStep func(Step)
}
