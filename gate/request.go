package gate

import (
	"net/http"
	"net/netip"
)

// ClientSource says where the client address came from.
type ClientSource uint8

const (
	// FromPeer: the connection's peer is the client.
	FromPeer ClientSource = iota
	// FromForwardedFor: a trusted proxy supplied it in X-Forwarded-For.
	FromForwardedFor
	// FromUnknown: no address could be read (not a TCP peer).
	FromUnknown
)

// String returns the source's name.
func (s ClientSource) String() string {
	switch s {
	case FromPeer:
		return "peer"
	case FromForwardedFor:
		return "x-forwarded-for"
	}
	return "unknown"
}

// Request is the per-request state the gate hands to a [Target]. It is
// owned by the gate and reused after the target returns: a target must not
// keep it.
type Request struct {
	// Host and Route are what the gate matched, from the same Gate.
	Host  *Host
	Route *Route
	// Peer is the connection's peer; Client the resolved client address.
	Peer         netip.AddrPort
	Client       netip.Addr
	ClientSource ClientSource
	// Scheme is the trusted request scheme: "http" or "https".
	Scheme string
	// Path is the path the route was matched on.
	Path string
	// Tracer receives the target's steps too; nil in production.
	Tracer *Tracer

	gate *Gate
}

// Answer writes the gate's own answer for status (502, 503, 504, 404, ...)
// with the host's response headers. Unknown statuses get a bare status line.
func (rq *Request) Answer(w http.ResponseWriter, r *http.Request, status int) {
	answers := rq.gate.defaultAnswers
	if rq.Host != nil {
		answers = rq.Host.answers
	}
	if a := answers.get(status); a != nil {
		a.write(w, r)
	} else {
		w.WriteHeader(status)
	}
	if tr := rq.Tracer; tr != nil {
		tr.OnStep(Step{Kind: StepAnswer, Status: status})
	}
}

// resolveClient sets Peer, Client, ClientSource and Scheme.
func (g *Gate) resolveClient(r *http.Request, rq *Request) {
	rq.Scheme = "http"
	if r.TLS != nil {
		rq.Scheme = "https"
	}
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		rq.ClientSource = FromUnknown
		return
	}
	peer = netip.AddrPortFrom(peer.Addr().Unmap(), peer.Port())
	rq.Peer, rq.Client, rq.ClientSource = peer, peer.Addr(), FromPeer
	if len(g.trusted) == 0 || !g.isTrusted(rq.Client) {
		return
	}
	if c, ok := g.rightmostUntrusted(r.Header["X-Forwarded-For"]); ok {
		rq.Client, rq.ClientSource = c, FromForwardedFor
	}
	if g.trustProto {
		switch v := r.Header["X-Forwarded-Proto"]; {
		case len(v) == 1 && (v[0] == "https" || v[0] == "http"):
			rq.Scheme = v[0]
		}
	}
}

func (g *Gate) isTrusted(a netip.Addr) bool {
	for _, p := range g.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// rightmostUntrusted walks X-Forwarded-For from the right and returns the
// first address that is not a trusted proxy. A malformed element stops the
// walk: nothing left of it can be trusted.
func (g *Gate) rightmostUntrusted(values []string) (netip.Addr, bool) {
	var last netip.Addr
	for i := len(values) - 1; i >= 0; i-- {
		v := values[i]
		end := len(v)
		for end > 0 {
			start := end - 1
			for start >= 0 && v[start] != ',' {
				start--
			}
			a, err := netip.ParseAddr(trimOWS(v[start+1 : end]))
			if err != nil {
				return last, last.IsValid()
			}
			a = a.Unmap()
			if !g.isTrusted(a) {
				return a, true
			}
			last = a
			end = start
		}
	}
	// Every hop was trusted: the leftmost is the client.
	return last, last.IsValid()
}

func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// AppendClient appends the client address as forwarding headers carry it:
// IPv4 dotted, IPv6 without brackets.
func (rq *Request) AppendClient(dst []byte) []byte { return rq.Client.AppendTo(dst) }
