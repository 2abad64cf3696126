package simulate

import (
	"net/netip"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/proxy"
)

// UpstreamConnection is what a new connection to an upstream's
// destination presents of the gateway: its client certificate and its
// PROXY protocol header.
type UpstreamConnection struct {
	// ClientCertificate is the ID of the certificate presented on TLS
	// connections; "" for none.
	ClientCertificate string `json:"clientCertificate,omitempty"`
	// ProxyProtocol is "v1" or "v2" when connections start with a PROXY
	// header, "" when off.
	ProxyProtocol string `json:"proxyProtocol,omitempty"`
	// ProxySource and ProxyDestination are the addresses the header
	// carries: the client as the gate resolved it, and the address it
	// reached. Both empty means a LOCAL header (v1: "PROXY UNKNOWN").
	ProxySource      string `json:"proxySource,omitempty"`
	ProxyDestination string `json:"proxyDestination,omitempty"`
}

type connectionStep struct {
	conn UpstreamConnection
	step Step
}

// upstreamConnection describes what the route's upstream connections
// would present, from its transport's config and the client the gate
// resolved; false when they present nothing.
func (s *sim) upstreamConnection(rt *gate.Route, steps []gate.Step) (connectionStep, bool) {
	pr, ok := rt.Target.(*proxy.Route)
	if !ok || pr.Cluster() == nil {
		return connectionStep{}, false
	}
	tr, ok := pr.Cluster().Transport.(*proxy.Transport)
	if !ok {
		return connectionStep{}, false
	}
	cfg := tr.Config()
	if cfg.ClientCertificate == "" && cfg.ProxyProtocol == proxy.ProxyProtocolOff {
		return connectionStep{}, false
	}
	var out connectionStep
	c, facts, sum := &out.conn, map[string]string{}, ""
	if id := cfg.ClientCertificate; id != "" {
		c.ClientCertificate, facts["clientCertificate"] = id, id
		sum = "presents client certificate " + id + " on TLS connections"
	}
	if v := cfg.ProxyProtocol; v != proxy.ProxyProtocolOff {
		c.ProxyProtocol, facts["proxyProtocol"] = v.String(), v.String()
		var client gate.Step
		for _, st := range steps {
			if st.Kind == gate.StepClient {
				client = st
			}
		}
		from, _ := parseClientSource(client.Reason)
		s.mu.Lock()
		local := s.local
		s.mu.Unlock()
		src, dst := proxy.ProxyAddresses(client.Addr, from, client.Peer, local)
		if sum != "" {
			sum += "; "
		}
		if src.IsValid() {
			c.ProxySource, facts["proxySource"] = src.String(), src.String()
			if dst.IsValid() {
				c.ProxyDestination, facts["proxyDestination"] = dst.String(), dst.String()
			}
			sum += "starts with a PROXY " + v.String() + " header from " + src.String() + " to " + orUnspecified(dst)
		} else {
			sum += "starts with a LOCAL PROXY " + v.String() + " header: the client has no address"
		}
	}
	out.step = Step{Kind: "upstreamConnection", Summary: "a new connection " + sum, Facts: facts}
	return out, true
}

// parseClientSource reads the gate's name of a client source back.
func parseClientSource(name string) (gate.ClientSource, bool) {
	for _, c := range [...]gate.ClientSource{gate.FromPeer, gate.FromForwardedFor, gate.FromUnknown, gate.FromCloudflare} {
		if c.String() == name {
			return c, true
		}
	}
	return gate.FromUnknown, false
}

func orUnspecified(a netip.AddrPort) string {
	if a.IsValid() {
		return a.String()
	}
	return "the unspecified address"
}
