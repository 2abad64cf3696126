package gatewayapi

import (
	"cmp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/internal/problem"
)

// DefaultNamespace is the namespace of an object that names none.
const DefaultNamespace = "default"

// Options are what the objects do not say: which Gateways are the
// edge's, and where certificates and destinations come from when the
// objects do not hold them. The zero value translates every Gateway of
// the objects, with destinations from EndpointSlices only and
// certificates from no Secret (an HTTPS listener is then refused).
type Options struct {
	// GatewayClassName, when set, translates only the Gateways of this
	// class, and the routes attached to them; routes attached to other
	// Gateways only are another implementation's. Empty: every Gateway.
	GatewayClassName string
	// Destinations are the addresses of Services the embedder resolves
	// itself, by namespace, name and port: each is a destination address
	// as the document writes it ("http://10.0.0.7:8080"). An entry wins
	// over the EndpointSlices of the same Service. Nil: EndpointSlices
	// only.
	Destinations map[ServicePort][]string
	// Certificates are the PEM files of Secrets, by namespace and name,
	// which the document's certificates name as they are (read, and read
	// again when they change, by the publisher). An entry wins over a
	// Secret of the same name in the objects. Nil: none.
	Certificates map[ObjectRef]CertificateFiles
	// SecretDir is the directory the certificates of kubernetes.io/tls
	// Secrets in the objects are written to, one file pair per Secret
	// (NAMESPACE.NAME.crt and .key, mode 0600), by [Result.WriteSecrets]
	// and never by Translate. Empty: a listener that names such a Secret
	// is refused (gatewayapi.secret.directory.missing), so a secret is
	// never written where nobody asked.
	SecretDir string
}

// ServicePort names one port of a Service: the backendRef's namespace,
// name and port.
type ServicePort struct {
	Namespace, Name string
	Port            int32
}

// ObjectRef names an object of a namespace.
type ObjectRef struct{ Namespace, Name string }

// CertificateFiles are a certificate's PEM files: the chain, leaf first,
// and the leaf's key.
type CertificateFiles struct{ CertFile, KeyFile string }

// Listener is one protocol's listener of the translated Gateways: the
// port clients reach it on. Port 0 means the Gateways have none.
type Listener struct {
	Port int32
}

// Result is a translation: the document, the listeners it is meant for
// and the certificate files it names that the Secrets of the objects
// fill. [Translate] makes it; the zero value is the translation of no
// object: an empty document, no listener, no Secret, and no origin for
// any path.
type Result struct {
	// Document is the library's document: one host per hostname, one
	// route per match of a rule, one upstream per Service port, one
	// certificate per Secret.
	Document config.Document
	// HTTP and HTTPS are the Gateways' listeners, which an edge serves
	// on its plain HTTP and HTTPS listeners (the reference daemon's
	// -http and -https). HTTPS.Port is the document's global.httpsPort,
	// the port Alt-Svc and HTTPS redirects name.
	HTTP, HTTPS Listener
	// Secrets are the certificate files of Secrets in the objects, which
	// the document names under Options.SecretDir: written by
	// [Result.WriteSecrets].
	Secrets []SecretFile

	origins []origin // document path prefixes to object paths
}

// SecretFile is a file of a Secret's certificate or key.
type SecretFile struct {
	Path string
	Data []byte
}

// origin maps a document path onto the object path it came from.
type origin struct{ doc, obj string }

// Origin returns the object path a document path comes from: for
// "hosts[0].routes[2].match.headers[0].name",
// "HTTPRoute default/shop: spec.rules[1].matches[0].headers[0].name".
// It returns "" for a path the translation did not make. Use it to say
// where a problem the publisher finds in the document (a regular
// expression that does not compile, a header the proxy owns) is in the
// objects.
func (r *Result) Origin(path string) string {
	best := -1
	for i, o := range r.origins {
		if (path == o.doc || strings.HasPrefix(path, o.doc) && (path[len(o.doc)] == '.' || path[len(o.doc)] == '[')) &&
			(best < 0 || len(o.doc) > len(r.origins[best].doc)) {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	o := r.origins[best]
	return o.obj + path[len(o.doc):]
}

// Explain returns problems of the document as problems of the objects:
// each with the object path [Result.Origin] gives for its path, and the
// document's path at the end of its message. A problem whose path the
// translation did not make is returned as it is.
func (r *Result) Explain(problems []*ValidationError) []*ValidationError {
	out := make([]*ValidationError, len(problems))
	for i, p := range problems {
		if o := r.Origin(p.Path); o != "" {
			out[i] = &ValidationError{Code: p.Code, Path: o, Msg: p.Msg + " (the document's " + p.Path + ")"}
		} else {
			out[i] = p
		}
	}
	return out
}

func (r *Result) addOrigin(doc, obj string) { r.origins = append(r.origins, origin{doc, obj}) }

// Translate maps the objects onto the library's document: every Gateway
// (of Options.GatewayClassName) with its HTTP and HTTPS listeners, the
// HTTPRoutes attached to them, the Services they send to with their
// destinations, and the Secrets of the HTTPS listeners. It returns every
// problem at once (see the codes in problems.go): whatever the document
// cannot express is refused, never dropped. The document is then
// validated by the publisher as any other; [Result.Explain] says where
// its problems are in the objects. Translate does not modify objs and
// writes nothing.
func Translate(objs *Objects, opt Options) (*Result, error) {
	if objs == nil {
		objs = &Objects{}
	}
	t := &translation{opt: opt, res: &Result{}}
	t.index(objs)
	t.gateways()
	t.routes()
	t.hosts()
	t.upstreamsOut()
	t.certificatesOut()
	if err := t.probs.Err(); err != nil {
		return t.res, err
	}
	return t.res, nil
}

// translation is one Translate's state.
type translation struct {
	opt   Options
	res   *Result
	probs problem.List

	gws      []*gateway
	gwByRef  map[ObjectRef]*gateway
	routesIn []*gwv1.HTTPRoute
	grants   map[string][]*gwv1.ReferenceGrant // by namespace
	slices   map[ObjectRef][]*discoveryv1.EndpointSlice
	services map[ObjectRef]*corev1.Service
	secrets  map[ObjectRef]*corev1.Secret

	atts      []*attachment
	rules     map[ruleKey]*rule
	upstreams []*backend
	upByKey   map[ServicePort]*backend
	certs     []*certificate
	certByRef map[ObjectRef]*certificate
}

// ns is an object's namespace, the default when it names none.
func ns(s string) string { return cmp.Or(s, DefaultNamespace) }

// objPath is an object's path: "HTTPRoute default/shop: spec.rules[0]";
// field may be empty.
func objPath(kind, namespace, name, field string) string {
	p := kind + " " + ns(namespace) + "/" + name
	if field != "" {
		p += ": " + field
	}
	return p
}

// index sorts the objects by kind and name, refusing duplicates and
// objects without names.
func (t *translation) index(objs *Objects) {
	t.gwByRef = map[ObjectRef]*gateway{}
	t.grants = map[string][]*gwv1.ReferenceGrant{}
	t.slices = map[ObjectRef][]*discoveryv1.EndpointSlice{}
	t.services = map[ObjectRef]*corev1.Service{}
	t.secrets = map[ObjectRef]*corev1.Secret{}
	t.rules = map[ruleKey]*rule{}
	t.upByKey = map[ServicePort]*backend{}
	t.certByRef = map[ObjectRef]*certificate{}
	seen := map[string]bool{}
	named := func(kind, namespace, name string) bool {
		if name == "" {
			t.probs.Add(CodeObjectNameMissing, objPath(kind, namespace, name, "metadata.name"), "an object needs a name")
			return false
		}
		key := objPath(kind, namespace, name, "")
		if seen[key] {
			t.probs.Add(CodeObjectDuplicate, objPath(kind, namespace, name, "metadata.name"), "the objects hold this "+kind+" twice")
			return false
		}
		seen[key] = true
		return true
	}
	for _, g := range objs.Gateways {
		if !named("Gateway", g.Namespace, g.Name) {
			continue
		}
		if t.opt.GatewayClassName != "" && string(g.Spec.GatewayClassName) != t.opt.GatewayClassName {
			t.gwByRef[ObjectRef{ns(g.Namespace), g.Name}] = nil // another implementation's
			continue
		}
		gw := &gateway{obj: g}
		t.gws = append(t.gws, gw)
		t.gwByRef[ObjectRef{ns(g.Namespace), g.Name}] = gw
	}
	for _, r := range objs.HTTPRoutes {
		if named("HTTPRoute", r.Namespace, r.Name) {
			t.routesIn = append(t.routesIn, r)
		}
	}
	// Rules of routes that tie on their matches are taken in the order
	// the specification gives: the oldest route first, then by
	// namespace and name; document order does that for the gate.
	slices.SortStableFunc(t.routesIn, func(a, b *gwv1.HTTPRoute) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Or(strings.Compare(ns(a.Namespace), ns(b.Namespace)), strings.Compare(a.Name, b.Name))
	})
	for _, g := range objs.ReferenceGrants {
		if named("ReferenceGrant", g.Namespace, g.Name) {
			t.grants[ns(g.Namespace)] = append(t.grants[ns(g.Namespace)], g)
		}
	}
	for _, s := range objs.EndpointSlices {
		if !named("EndpointSlice", s.Namespace, s.Name) {
			continue
		}
		svc := s.Labels[ServiceNameLabel]
		if svc == "" {
			t.probs.Add(CodeEndpointSliceService, objPath("EndpointSlice", s.Namespace, s.Name, "metadata.labels"),
				"an EndpointSlice names its Service by the label "+ServiceNameLabel)
			continue
		}
		ref := ObjectRef{ns(s.Namespace), svc}
		t.slices[ref] = append(t.slices[ref], s)
	}
	for _, s := range objs.Services {
		if named("Service", s.Namespace, s.Name) {
			t.services[ObjectRef{ns(s.Namespace), s.Name}] = s
		}
	}
	for _, s := range objs.Secrets {
		if named("Secret", s.Namespace, s.Name) {
			t.secrets[ObjectRef{ns(s.Namespace), s.Name}] = s
		}
	}
}

// granted reports whether a ReferenceGrant in the namespace toNS lets
// objects of fromKind in fromNS refer to the object toKind/toName there
// (group "" for the core group).
func (t *translation) granted(fromGroup, fromKind, fromNS, toGroup, toKind, toNS, toName string) bool {
	for _, g := range t.grants[toNS] {
		from := slices.ContainsFunc(g.Spec.From, func(f gwv1.ReferenceGrantFrom) bool {
			return string(f.Group) == fromGroup && string(f.Kind) == fromKind && string(f.Namespace) == fromNS
		})
		to := slices.ContainsFunc(g.Spec.To, func(to gwv1.ReferenceGrantTo) bool {
			return string(to.Group) == toGroup && string(to.Kind) == toKind && (to.Name == nil || string(*to.Name) == toName)
		})
		if from && to {
			return true
		}
	}
	return false
}
