package gate

import "net/netip"

// StepKind names a step of the decision.
type StepKind uint8

const (
	StepClient   StepKind = iota // client address and scheme resolved
	StepHost                     // host looked up
	StepRedirect                 // redirect answered
	StepRoute                    // route matched (or not)
	StepHandOver                 // request handed to the route's target
	StepAnswer                   // the gate or target answered itself
	StepForward                  // the target forwarded (reported by targets)
)

var stepNames = [...]string{"client", "host", "redirect", "route", "hand-over", "answer", "forward"}

// String returns the step's name.
func (k StepKind) String() string {
	if int(k) < len(stepNames) {
		return stepNames[k]
	}
	return "invalid"
}

// Step is one traced step. Fields that do not apply are zero.
type Step struct {
	Kind   StepKind
	Match  HostMatch
	Name   string // host as received, route ID, redirect target, destination
	Path   string
	Status int
	Reason string
	Scheme string
	Addr   netip.Addr
	Peer   netip.AddrPort
}

// Tracer receives the steps of each decision. A nil *Tracer is the
// production setting and costs one predictable branch per step; the
// simulator passes a recording one. OnStep must be safe for concurrent use
// when the gate serves concurrent requests.
type Tracer struct {
	OnStep func(Step)
}
