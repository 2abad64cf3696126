package gate

import "net/netip"

// StepKind names a step of the decision.
type StepKind uint8

const (
	StepClient   StepKind = iota // client address and scheme resolved
	StepHost                     // host looked up
	StepRedirect                 // redirect answered (host redirect or HTTPS redirect)
	StepRoute                    // route matched (or not), on the path view
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
)

var stepNames = [...]string{
	"client", "host", "redirect", "route", "hand-over", "answer", "forward",
	"acme", "tls", "headers", "policy", "limits", "drop", "path",
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
}

// Tracer receives the steps of each decision. A nil *Tracer is the
// production setting and costs one predictable branch per step (compare
// BenchmarkGateDecide with BenchmarkGateDecideTraced); the simulator passes
// a recording one. OnStep
// must be safe for concurrent use when the gate serves concurrent requests.
type Tracer struct {
	OnStep func(Step)
}
