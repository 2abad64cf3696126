package simulate

import (
	"sort"
	"strconv"
	"strings"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/internal/redact"
)

// Step is one step of a simulation's trace, in the order the gateway
// takes them: the connection stage ("proxyProtocol", "connections"), the
// "handshake", the HTTP "server", then the gate's steps under their own
// names (gate.StepKind's String: "client", "acme", "host", "tls",
// "headers", "path", "policy", "limits", "redirect", "route", "drop",
// "answer", "hand-over") and, for a forward, "upstream".
type Step struct {
	Kind string `json:"kind"`
	// Summary is one line for a person.
	Summary string `json:"summary"`
	// Status is the status the step answers with, if any.
	Status int `json:"status,omitempty"`
	// Facts are the step's facts by stable camelCase name (for headers,
	// the header's own name).
	Facts map[string]string `json:"facts,omitempty"`
}

// String returns "kind: summary".
func (s Step) String() string { return s.Kind + ": " + s.Summary }

// FactNames returns the step's fact names, sorted.
func (s Step) FactNames() []string {
	names := make([]string, 0, len(s.Facts))
	for k := range s.Facts {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// gateStep turns one of the gate's steps into a trace step.
func gateStep(s *gate.Step) Step {
	out := Step{Kind: s.Kind.String(), Status: s.Status, Facts: map[string]string{}}
	f := out.Facts
	set := func(k, v string) {
		if v != "" {
			f[k] = v
		}
	}
	set("reason", s.Reason)
	switch s.Kind {
	case gate.StepClient:
		set("peer", validOr(s.Peer.String(), s.Peer.IsValid()))
		set("client", validOr(s.Addr.String(), s.Addr.IsValid()))
		set("source", s.Reason)
		set("scheme", s.Scheme)
		delete(f, "reason")
		how := "the peer itself"
		switch s.Reason {
		case gate.FromForwardedFor.String():
			how = "X-Forwarded-For, trusted from peer " + s.Peer.Addr().String()
		case gate.FromCloudflare.String():
			how = "CF-Connecting-IP, trusted from Cloudflare peer " + s.Peer.Addr().String()
		case gate.FromUnknown.String():
			how = "no address could be read"
		}
		out.Summary = "client " + f["client"] + " (" + how + "), scheme " + s.Scheme
	case gate.StepACME:
		set("token", s.Name)
		out.Summary = "ACME HTTP-01 challenge answered"
	case gate.StepHost:
		set("name", s.Name)
		set("match", s.Match.String())
		if s.Host != nil && len(s.Host.Names) > 0 {
			set("host", s.Host.Names[0])
			out.Summary = strconv.Quote(s.Name) + " matched host " + s.Host.Names[0] + " (" + s.Match.String() + ")"
		} else {
			out.Summary = strconv.Quote(s.Name) + " matches no host: the default answer"
		}
	case gate.StepTLS:
		if s.Status != 0 {
			out.Summary = "connection refused by the host's TLS policy: " + s.Reason
		} else {
			out.Summary = "connection satisfies the host's TLS policy"
		}
	case gate.StepHeaders:
		parts := make([]string, 0, len(s.Headers))
		for _, h := range s.Headers {
			if h.Value != "" {
				v := redact.Value(h.Name, h.Value)
				f[h.Name] = v
				parts = append(parts, h.Name+": "+v)
			} else {
				f[h.Name] = "absent: " + h.Absent
				parts = append(parts, h.Name+" absent ("+h.Absent+")")
			}
		}
		delete(f, "reason")
		out.Summary = strings.Join(parts, "; ")
	case gate.StepPolicy:
		set("scope", s.Scope.String())
		set("index", strconv.Itoa(s.Index))
		set("policy", s.Name)
		set("mode", s.Mode.String())
		set("verdict", s.Verdict.String())
		out.Summary = s.Scope.String() + " policy " + strconv.Itoa(s.Index) + " " + s.Name + " (" + s.Mode.String() + "): " + s.Verdict.String() + ", " + s.Reason
		if s.Mode == gate.Shadow && s.Verdict != gate.Continue {
			out.Summary += " (shadowed: the request goes on)"
		}
	case gate.StepLimits, gate.StepPath, gate.StepRequest, gate.StepAnswer, gate.StepDrop:
		out.Summary = s.Reason
		if s.Status != 0 {
			out.Summary = strings.TrimSpace(strconv.Itoa(s.Status) + " " + s.Reason)
		}
	case gate.StepRedirect:
		set("location", s.Name)
		out.Summary = strconv.Itoa(s.Status) + " to " + s.Name
		if s.Reason != "" {
			out.Summary = s.Reason + ": " + out.Summary
		}
	case gate.StepRoute:
		set("path", s.Path)
		delete(f, "reason")
		if s.Route == nil {
			out.Summary = "no route matches " + strconv.Quote(s.Path)
			if s.Nearest != nil {
				set("nearest", routeName(s.Nearest))
			}
			if why := strings.TrimPrefix(s.Reason, "no route: "); why != "" && why != s.Reason {
				set("match", why)
				out.Summary += ": " + why
			}
			break
		}
		set("route", s.Route.ID)
		set("pathType", s.Route.PathType.String())
		set(s.Route.PathType.String(), routePrefix(s.Route))
		set("match", s.Reason)
		out.Summary = "route " + routeName(s.Route) + " (" + s.Route.PathType.String() + " " + routePrefix(s.Route) + ") matches the path view " + strconv.Quote(s.Path)
		if s.Reason != "" {
			out.Summary += ": " + s.Reason
		}
	case gate.StepHandOver:
		delete(f, "reason")
		if s.Route != nil {
			set("route", s.Route.ID)
			out.Summary = "handed over to the target of route " + routeName(s.Route)
		}
	default:
		set("name", s.Name)
		out.Summary = s.Reason
	}
	if len(f) == 0 {
		out.Facts = nil
	}
	return out
}

func validOr(s string, ok bool) string {
	if ok {
		return s
	}
	return ""
}

// routeName is a route's ID, or its prefix when it has none.
func routeName(rt *gate.Route) string {
	if rt.ID != "" {
		return rt.ID
	}
	return routePrefix(rt)
}

func routePrefix(rt *gate.Route) string {
	if rt.Prefix == "" {
		return "/"
	}
	return rt.Prefix
}
