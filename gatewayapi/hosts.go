package gatewayapi

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/paduraksa/paduraksa/config"
)

// side is what one protocol's listener serves for one hostname: the
// rules of the routes attached to it, in the order the specification
// breaks ties in (the oldest route first).
type side struct {
	l     *listener
	rules []*rule
	at    string // the first parentRef attaching a route
	names string // where its hostname comes from: the route's hostnames or the listener's hostname
	seen  map[ruleKey]bool
}

// redirectOnly reports whether the side only redirects to HTTPS.
func (s *side) redirectOnly() bool {
	return s != nil && len(s.rules) == 1 && s.rules[0].httpsRedirect != nil
}

// sameRules reports whether two sides serve the same rules.
func sameRules(a, b *side) bool {
	if len(a.rules) != len(b.rules) {
		return false
	}
	for i := range a.rules {
		if a.rules[i] != b.rules[i] {
			return false
		}
	}
	return true
}

// specificity orders listener hostnames as requests choose listeners:
// an exact name before a wildcard, a longer wildcard before a shorter,
// and no hostname last.
func specificity(h string) int {
	switch {
	case h == "":
		return 0
	case strings.HasPrefix(h, "*."):
		return len(h)
	}
	return 1000 + len(h)
}

// hosts makes one host of the document per hostname the attachments
// take. A hostname is one host on both the plain HTTP and the HTTPS
// listener, so it must be served alike over both, or over HTTP only by a
// redirect to HTTPS (the host's httpsRedirect); a hostname the Gateways
// serve over one protocol only while the other's listener would take it
// too is refused (gatewayapi.host.protocols.differ), since the edge would
// serve it there.
func (t *translation) hosts() {
	var order []string
	sides := [2]map[string]*side{{}, {}} // [0] plain HTTP, [1] HTTPS
	for _, a := range t.atts {
		p := 0
		if a.l.https {
			p = 1
		}
		s := sides[p][a.hostname]
		if s == nil {
			if sides[0][a.hostname] == nil && sides[1][a.hostname] == nil {
				order = append(order, a.hostname)
			}
			s = &side{l: a.l, at: a.at, names: hostnamesPath(a), seen: map[ruleKey]bool{}}
			sides[p][a.hostname] = s
		}
		if a.l != s.l {
			// Requests for the hostname reach the most specific listener
			// of the protocol only.
			if specificity(a.l.hostname) < specificity(s.l.hostname) {
				continue
			}
			if specificity(a.l.hostname) > specificity(s.l.hostname) {
				*s = side{l: a.l, at: a.at, names: hostnamesPath(a), seen: map[ruleKey]bool{}}
			}
		}
		for i := range max(1, len(a.route.Spec.Rules)) { // a route without rules has the API's default one
			k := ruleKey{a.route, i}
			if r := t.rules[k]; r != nil && !s.seen[k] {
				s.seen[k] = true
				s.rules = append(s.rules, r)
			}
		}
	}
	// covering returns the most specific side of protocol p whose
	// hostname takes h.
	covering := func(p int, h string) *side {
		if s := sides[p][h]; s != nil {
			return s
		}
		var best *side
		bestKey := ""
		for k, s := range sides[p] {
			if covers(k, h) && (best == nil || specificity(k) > specificity(bestKey)) {
				best, bestKey = s, k
			}
		}
		return best
	}
	for _, h := range order {
		plain, secure := sides[0][h], sides[1][h]
		host := config.Host{Names: []string{cmpHost(h)}}
		hi := len(t.res.Document.Hosts)
		hat := "hosts[" + strconv.Itoa(hi) + "]"
		var served *side
		switch {
		case secure != nil:
			served = secure
			for _, r := range secure.rules {
				if r.httpsRedirect != nil {
					t.probs.Add(CodeFilterRedirect, r.redirectAt, "a redirect to HTTPS served over HTTPS would send the client back to itself")
				}
			}
			if secure.l.cert != nil {
				host.Certificate = secure.l.cert.id
				t.res.addOrigin(hat+".certificate", secure.l.cert.path)
			}
			switch p := covering(0, h); {
			case p != nil && p.redirectOnly():
				host.HTTPSRedirect = p.rules[0].httpsRedirect
				t.res.addOrigin(hat+".httpsRedirect", p.rules[0].redirectAt)
			case p != nil && sameRules(p, secure):
			case p != nil:
				t.probs.Add(CodeHostProtocolsDiffer, p.at, "hostname "+strconv.Quote(cmpHost(h))+" is served by other rules over HTTP ("+p.l.path+") than over HTTPS ("+
					secure.l.path+"): the edge serves one host alike on both listeners, or over HTTP only by a redirect to HTTPS")
			case t.res.HTTP.Port != 0:
				t.probs.Add(CodeHostProtocolsDiffer, secure.at, "hostname "+strconv.Quote(cmpHost(h))+" is served over HTTPS only, and the Gateways have an HTTP listener, where the edge would serve it too: "+
					"attach the route to the HTTP listener as well, or attach a route there that redirects it to HTTPS")
			}
		case plain.redirectOnly():
			// Only a redirect to HTTPS, where nothing else serves the
			// hostname: the API's answer there is 404.
			host.Kind = "fixed"
			host.Fixed = &config.FixedAnswer{Status: http.StatusNotFound}
			host.HTTPSRedirect = plain.rules[0].httpsRedirect
			t.res.addOrigin(hat+".httpsRedirect", plain.rules[0].redirectAt)
			t.res.addOrigin(hat, plain.at)
			t.res.addOrigin(hat+".names[0]", plain.names)
			t.res.Document.Hosts = append(t.res.Document.Hosts, host)
			continue
		default:
			served = plain
		}
		t.res.addOrigin(hat, served.at)
		t.res.addOrigin(hat+".names[0]", served.names)
		for _, r := range served.rules {
			if r.httpsRedirect != nil && served == plain {
				t.probs.Add(CodeFilterRedirect, r.redirectAt, "a redirect to HTTPS beside other rules of the hostname: the edge serves a host alike over HTTP and HTTPS, where this rule would redirect every request to itself; "+
					"a hostname's plain HTTP listener that serves this rule alone is the host's redirect to HTTPS (hosts[].httpsRedirect)")
			}
			for _, ro := range r.routes {
				rat := hat + ".routes[" + strconv.Itoa(len(host.Routes)) + "]"
				for _, o := range ro.origins {
					t.res.addOrigin(rat+o.doc, o.obj)
				}
				host.Routes = append(host.Routes, ro.route)
			}
		}
		if len(host.Routes) == 0 {
			continue // every rule refused
		}
		t.res.Document.Hosts = append(t.res.Document.Hosts, host)
	}
}

// hostnamesPath is where an attachment's hostname comes from: the
// route's hostname, or the listener's when the route names none or a
// wildcard the listener's narrows.
func hostnamesPath(a *attachment) string {
	for i, h := range a.route.Spec.Hostnames {
		if strings.EqualFold(string(h), a.hostname) {
			return routePath(a.route, "spec.hostnames["+strconv.Itoa(i)+"]")
		}
	}
	return a.l.path + ".hostname"
}

// cmpHost is a hostname as the document names it: "" (any name) is the
// catch-all "*".
func cmpHost(h string) string {
	if h == "" {
		return "*"
	}
	return h
}
