package gatewayapi

import (
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/paduraksa/paduraksa/config"
)

// backend is one Service port the routes send to: an upstream of the
// document.
type backend struct {
	key   ServicePort
	id    string // "default.shop.8080"
	at    string // the first backendRef naming it
	dests []config.Destination
	h2c   bool // appProtocol kubernetes.io/h2c: HTTP/2 without TLS
}

// target translates a rule's backendRefs onto base: one backend of weight
// above 0 is the route's upstream; several are its backends, each with its
// weight (a Service port named twice is one backend of the weights'
// sum); a rule whose requests no backend takes (no backendRef, or every
// weight 0) answers 500, the API's answer, as the route's fixed answer.
// A backendRef that is invalid (unknown, of another kind, in another
// namespace without a grant) is refused with its code, never turned into
// a share of 500s: a file's mistake is said at translation.
func (t *translation) target(base *config.Route, origins *[]origin, r *gwv1.HTTPRoute, ro *gwv1.HTTPRouteRule, at string) {
	if len(ro.BackendRefs) == 0 {
		t.noBackend(base, origins, at)
		return
	}
	type side struct {
		b      *backend
		weight int
		j      int // the first backendRef naming it
	}
	var live []*side // the sides of weight above 0
	invalid := false
	for j := range ro.BackendRefs {
		ref := &ro.BackendRefs[j]
		bat := at + ".backendRefs[" + strconv.Itoa(j) + "]"
		if len(ref.Filters) > 0 {
			t.probs.Add(CodeBackendRefFilters, bat+".filters", "filters per backend are not translated: give them on the rule")
			invalid = true
		}
		b := t.backendObject(r, &ref.BackendObjectReference, bat)
		if b == nil {
			invalid = true
		}
		w := 1 // the API's default
		if ref.Weight != nil {
			w = int(*ref.Weight)
		}
		if w == 0 {
			continue // takes no request: the API's weight 0
		}
		if i := slices.IndexFunc(live, func(s *side) bool { return b != nil && s.b == b }); i >= 0 {
			live[i].weight += w
			continue
		}
		live = append(live, &side{b: b, weight: w, j: j})
	}
	switch {
	case invalid:
	case len(live) == 0:
		t.noBackend(base, origins, at+".backendRefs")
	case len(live) == 1:
		base.Upstream = live[0].b.id
		*origins = append(*origins, origin{".upstream", at + ".backendRefs[" + strconv.Itoa(live[0].j) + "]"})
	default:
		for k, s := range live {
			w := s.weight
			base.Backends = append(base.Backends, config.Backend{Upstream: s.b.id, Weight: &w})
			*origins = append(*origins, origin{".backends[" + strconv.Itoa(k) + "]", at + ".backendRefs[" + strconv.Itoa(s.j) + "]"})
		}
	}
}

// noBackend makes a rule whose requests no backend takes answer as the
// API says, 500, with a fixed answer of the route; at is the
// backendRefs' path (or the rule's, when it has none).
func (t *translation) noBackend(base *config.Route, origins *[]origin, at string) {
	base.Fixed = &config.FixedAnswer{Status: http.StatusInternalServerError}
	*origins = append(*origins, origin{".fixed", at})
}

// backendObject resolves a reference to a Service port (a backendRef's,
// a mirror's) to its upstream, made once per Service port, or reports
// why it cannot be and returns nil.
func (t *translation) backendObject(r *gwv1.HTTPRoute, ref *gwv1.BackendObjectReference, at string) *backend {
	if (ref.Group != nil && *ref.Group != "") || (ref.Kind != nil && *ref.Kind != "Service") {
		t.probs.Add(CodeBackendRefKind, at, "only core Services are translated as backends")
		return nil
	}
	routeNS := ns(r.Namespace)
	key := ServicePort{Namespace: routeNS, Name: string(ref.Name)}
	if ref.Namespace != nil && string(*ref.Namespace) != routeNS {
		key.Namespace = string(*ref.Namespace)
		if !t.granted(gatewayGroup, "HTTPRoute", routeNS, "", "Service", key.Namespace, key.Name) {
			t.probs.Add(CodeRefNotPermitted, at, "Service "+key.Namespace+"/"+key.Name+" is in another namespace, and no ReferenceGrant there lets HTTPRoutes of "+routeNS+" refer to it")
			return nil
		}
	}
	if ref.Port == nil {
		t.probs.Add(CodeBackendRefPortMiss, at+".port", "a Service backend needs a port")
		return nil
	}
	key.Port = int32(*ref.Port)
	if b, ok := t.upByKey[key]; ok {
		return b // nil: refused where first named
	}
	b := &backend{key: key, id: key.Namespace + "." + key.Name + "." + strconv.Itoa(int(key.Port)), at: at}
	if !t.destinations(b, at) {
		t.upByKey[key] = nil
		return nil
	}
	t.upByKey[key] = b
	t.upstreams = append(t.upstreams, b)
	return b
}

// destinations fills b's destinations: Options.Destinations, or the
// ready endpoints of the Service's EndpointSlices, on the slices' port
// the Service port names (by the Service's port name when the Service is
// in the objects, else by number).
func (t *translation) destinations(b *backend, at string) bool {
	if addrs, ok := t.opt.Destinations[b.key]; ok {
		for _, a := range addrs {
			b.dests = append(b.dests, config.Destination{ID: destID(a), Address: a})
		}
		return true
	}
	ref := ObjectRef{b.key.Namespace, b.key.Name}
	svc := t.services[ref]
	portName, byName := "", false
	var appProto *string
	if svc != nil {
		if svc.Spec.Type == corev1.ServiceTypeExternalName {
			t.probs.Add(CodeServiceType, objPath("Service", svc.Namespace, svc.Name, "spec.type"), "an ExternalName Service is not translated: its destinations are a DNS name the objects do not resolve")
			return false
		}
		i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == b.key.Port })
		if i < 0 {
			t.probs.Add(CodeBackendRefPortUnk, at+".port", "Service "+ref.Namespace+"/"+ref.Name+" has no port "+strconv.Itoa(int(b.key.Port)))
			return false
		}
		portName, byName, appProto = svc.Spec.Ports[i].Name, true, svc.Spec.Ports[i].AppProtocol
	}
	sl := t.slices[ref]
	if len(sl) == 0 {
		t.probs.Add(CodeBackendRefUnknown, at, "no destinations known for Service "+ref.Namespace+"/"+ref.Name+": no EndpointSlice labelled "+
			ServiceNameLabel+"="+ref.Name+" in the objects, and no entry in Options.Destinations")
		return false
	}
	found := false
	seen := map[string]bool{}
	var terminating []config.Destination // serving, terminating: drained, or the fallback
	for _, s := range sl {
		pi := slices.IndexFunc(s.Ports, func(p discoveryv1.EndpointPort) bool {
			if byName {
				return (p.Name == nil && portName == "") || (p.Name != nil && *p.Name == portName)
			}
			return p.Port != nil && *p.Port == b.key.Port
		})
		if pi < 0 || s.Ports[pi].Port == nil {
			continue
		}
		found = true
		p := &s.Ports[pi]
		if p.AppProtocol != nil {
			appProto = p.AppProtocol
		}
		sat := objPath("EndpointSlice", s.Namespace, s.Name, "ports["+strconv.Itoa(pi)+"]")
		if p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP {
			t.probs.Add(CodeBackendAppProtocol, sat+".protocol", "protocol "+string(*p.Protocol)+": HTTP backends are TCP")
			return false
		}
		for _, e := range s.Endpoints {
			ready := e.Conditions.Ready == nil || *e.Conditions.Ready
			draining := !ready && e.Conditions.Terminating != nil && *e.Conditions.Terminating &&
				e.Conditions.Serving != nil && *e.Conditions.Serving
			if !ready && !draining {
				continue // neither ready nor still serving as it terminates
			}
			for _, a := range e.Addresses {
				ip, err := netip.ParseAddr(a)
				if err != nil {
					t.probs.Add(CodeEndpointSliceService, objPath("EndpointSlice", s.Namespace, s.Name, "endpoints"), "address "+strconv.Quote(a)+" is not an IP address")
					return false
				}
				addr := "http://" + netip.AddrPortFrom(ip, uint16(*p.Port)).String()
				switch {
				case draining:
					terminating = append(terminating, config.Destination{ID: destID(addr), Address: addr})
				case !seen[addr]:
					seen[addr] = true
					b.dests = append(b.dests, config.Destination{ID: destID(addr), Address: addr})
				}
			}
		}
	}
	// A terminating endpoint that still serves finishes what it has: with
	// ready endpoints beside it, it is drained (no new requests; those in
	// flight, streams included, end as they will), and with none, it takes
	// the requests until the ready ones come, as kube-proxy's terminating
	// endpoints do (KEP-1669) rather than every request failing while a
	// rollout replaces every endpoint.
	fallback := len(b.dests) == 0
	for _, d := range terminating {
		if !seen[d.Address] {
			seen[d.Address] = true
			d.Drain = !fallback
			b.dests = append(b.dests, d)
		}
	}
	if !found {
		what := "port " + strconv.Itoa(int(b.key.Port))
		if byName {
			what = "port named " + strconv.Quote(portName) + " (Service port " + strconv.Itoa(int(b.key.Port)) + ")"
		}
		t.probs.Add(CodeBackendRefPortUnk, at+".port", "no EndpointSlice of Service "+ref.Namespace+"/"+ref.Name+" has its "+what)
		return false
	}
	if appProto != nil {
		switch *appProto {
		case "", "http", "kubernetes.io/ws":
		case "kubernetes.io/h2c":
			b.h2c = true
		default:
			t.probs.Add(CodeBackendAppProtocol, at, "appProtocol "+strconv.Quote(*appProto)+" of Service "+ref.Namespace+"/"+ref.Name+
				" is not translated: http, kubernetes.io/ws and kubernetes.io/h2c are")
			return false
		}
	}
	return true
}

// upstreamsOut writes the upstreams into the document, in the order
// first named.
func (t *translation) upstreamsOut() {
	for i, b := range t.upstreams {
		u := config.Upstream{ID: b.id, Destinations: b.dests}
		if b.h2c {
			u.HTTP.Version, u.HTTP.VersionPolicy = "2", "exact"
		}
		t.res.Document.Upstreams = append(t.res.Document.Upstreams, u)
		t.res.addOrigin("upstreams["+strconv.Itoa(i)+"]", b.at)
	}
}

// destID is a destination's ID of its address: "http://10.0.0.7:8080" is
// "10.0.0.7-8080", "http://[fd00::1]:80" "fd00__1-80". Addresses differ
// in their host or port, so their IDs do too.
func destID(addr string) string {
	_, hp, ok := strings.Cut(addr, "://")
	if !ok {
		hp = addr
	}
	if i := strings.LastIndexByte(hp, ':'); i >= 0 && !strings.HasSuffix(hp[:i], ":") {
		hp = hp[:i] + "-" + hp[i+1:]
	}
	id := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		case r == '[' || r == ']':
			return -1
		}
		return '_'
	}, hp)
	if len(id) > 128 {
		id = id[:128]
	}
	return id
}
