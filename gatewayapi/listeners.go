package gatewayapi

import (
	"crypto/tls"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/paduraksa/paduraksa/config"
)

// gateway is a Gateway being translated.
type gateway struct {
	obj       *gwv1.Gateway
	listeners []*listener
}

func (g *gateway) path(field string) string {
	return objPath("Gateway", g.obj.Namespace, g.obj.Name, field)
}

// listener is one of a Gateway's listeners.
type listener struct {
	gw       *gateway
	obj      *gwv1.Listener
	path     string // "Gateway ns/name: spec.listeners[i]"
	https    bool
	hostname string       // lower case; "" takes every name
	cert     *certificate // an HTTPS listener's; nil when refused
	// Which routes may attach: from the Gateway's namespace (the
	// default), from all, from none.
	fromAll, fromNone bool
	noHTTPRoutes      bool // allowedRoutes.kinds leaves HTTPRoute out
}

// certificate is one Secret the listeners name.
type certificate struct {
	id    string
	ref   ObjectRef
	files CertificateFiles
	path  string // the first certificateRef naming it
}

const gatewayGroup = gwv1.GroupName

// gateways checks every Gateway and its listeners, and notes the
// listeners' ports and certificates.
func (t *translation) gateways() {
	type seenKey struct {
		https    bool
		hostname string
	}
	seen := map[seenKey]string{}
	for _, gw := range t.gws {
		g := gw.obj
		for _, f := range []struct {
			field string
			set   bool
		}{
			{"spec.addresses", len(g.Spec.Addresses) > 0},
			{"spec.infrastructure", g.Spec.Infrastructure != nil},
			{"spec.tls", g.Spec.TLS != nil},
			{"spec.allowedListeners", g.Spec.AllowedListeners != nil},
			{"spec.defaultScope", g.Spec.DefaultScope != ""},
		} {
			if f.set {
				t.probs.Add(CodeGatewayFieldUnsupport, gw.path(f.field), "not translated: the edge's own settings (the reference daemon's -http and -https) say where it listens, and TLS to backends and of clients is not read from a Gateway")
			}
		}
		names := map[gwv1.SectionName]bool{}
		for i := range g.Spec.Listeners {
			lo := &g.Spec.Listeners[i]
			l := &listener{gw: gw, obj: lo, path: gw.path("spec.listeners[" + strconv.Itoa(i) + "]")}
			if names[lo.Name] {
				t.probs.Add(CodeListenerDuplicate, l.path+".name", "a second listener named "+strconv.Quote(string(lo.Name)))
			}
			names[lo.Name] = true
			if lo.Hostname != nil {
				l.hostname = strings.ToLower(string(*lo.Hostname))
			}
			switch lo.Protocol {
			case gwv1.HTTPProtocolType:
			case gwv1.HTTPSProtocolType:
				l.https = true
			default:
				t.probs.Add(CodeListenerProtocol, l.path+".protocol", "protocol "+strconv.Quote(string(lo.Protocol))+" is not translated: only HTTP and HTTPS listeners are, which the edge's plain HTTP and HTTPS listeners serve")
				continue
			}
			t.listenerPort(l)
			k := seenKey{l.https, l.hostname}
			if first, dup := seen[k]; dup {
				t.probs.Add(CodeListenerDuplicate, l.path+".hostname", "the same protocol and hostname as "+first+": the edge has one listener per protocol, so one of them would never be chosen")
			} else {
				seen[k] = l.path
			}
			t.allowedRoutes(l)
			if l.https {
				t.listenerTLS(l)
			} else if lo.TLS != nil {
				t.probs.Add(CodeListenerProtocol, l.path+".tls", "an HTTP listener takes no tls block")
			}
			gw.listeners = append(gw.listeners, l)
		}
	}
}

// listenerPort notes the port of a listener's protocol: the edge has one
// plain HTTP listener and one HTTPS listener, so every listener of a
// protocol must have the same port.
func (t *translation) listenerPort(l *listener) {
	lst := &t.res.HTTP
	if l.https {
		lst = &t.res.HTTPS
	}
	switch p := l.obj.Port; {
	case lst.Port == 0:
		lst.Port = p
		if l.https {
			t.res.Document.Global.HTTPSPort = int(p)
		}
	case lst.Port != p:
		t.probs.Add(CodeListenerPortConflict, l.path+".port", "port "+strconv.Itoa(int(p))+" beside "+strconv.Itoa(int(lst.Port))+
			" for "+string(l.obj.Protocol)+": the edge serves one port per protocol")
	}
}

// allowedRoutes reads which routes may attach to the listener.
func (t *translation) allowedRoutes(l *listener) {
	ar := l.obj.AllowedRoutes
	if ar == nil {
		return
	}
	if ar.Namespaces != nil && ar.Namespaces.From != nil {
		switch *ar.Namespaces.From {
		case gwv1.NamespacesFromSame:
		case gwv1.NamespacesFromAll:
			l.fromAll = true
		case gwv1.NamespacesFromNone:
			l.fromNone = true
		default:
			t.probs.Add(CodeListenerAllowedRoutes, l.path+".allowedRoutes.namespaces.from", "from "+strconv.Quote(string(*ar.Namespaces.From))+
				" is not translated: the objects hold no Namespace labels to select by; use Same or All")
		}
	}
	if ar.Kinds != nil {
		l.noHTTPRoutes = true
		for k, rk := range ar.Kinds {
			if rk.Kind == "HTTPRoute" && (rk.Group == nil || *rk.Group == gatewayGroup) {
				l.noHTTPRoutes = false
			} else {
				t.probs.Add(CodeListenerAllowedRoutes, l.path+".allowedRoutes.kinds["+strconv.Itoa(k)+"]", "only HTTPRoutes are translated")
			}
		}
	}
}

// listenerTLS reads an HTTPS listener's certificate.
func (t *translation) listenerTLS(l *listener) {
	tl := l.obj.TLS
	if tl == nil || len(tl.CertificateRefs) == 0 {
		if tl != nil && tl.Mode != nil && *tl.Mode == gwv1.TLSModePassthrough {
			t.probs.Add(CodeListenerPassthrough, l.path+".tls.mode", "TLS passthrough is not translated: the edge terminates TLS")
			return
		}
		t.probs.Add(CodeListenerTLSMissing, l.path+".tls", "an HTTPS listener needs tls.certificateRefs")
		return
	}
	if tl.Mode != nil && *tl.Mode != gwv1.TLSModeTerminate {
		t.probs.Add(CodeListenerPassthrough, l.path+".tls.mode", "mode "+strconv.Quote(string(*tl.Mode))+" is not translated: the edge terminates TLS")
	}
	if len(tl.Options) > 0 {
		t.probs.Add(CodeListenerTLSOptions, l.path+".tls.options", "implementation options are not translated")
	}
	if len(tl.CertificateRefs) > 1 {
		t.probs.Add(CodeListenerCertsMany, l.path+".tls.certificateRefs[1]", "a host is served one certificate: name one Secret")
	}
	l.cert = t.certificateRef(l, &tl.CertificateRefs[0], l.path+".tls.certificateRefs[0]")
}

// certificateRef resolves a listener's Secret: Options.Certificates, or a
// kubernetes.io/tls Secret of the objects written under SecretDir.
func (t *translation) certificateRef(l *listener, ref *gwv1.SecretObjectReference, at string) *certificate {
	if (ref.Group != nil && *ref.Group != "") || (ref.Kind != nil && *ref.Kind != "Secret") {
		t.probs.Add(CodeCertificateRefKind, at, "only core Secrets are read")
		return nil
	}
	gwNS := ns(l.gw.obj.Namespace)
	r := ObjectRef{gwNS, string(ref.Name)}
	if ref.Namespace != nil && string(*ref.Namespace) != gwNS {
		r.Namespace = string(*ref.Namespace)
		if !t.granted(gatewayGroup, "Gateway", gwNS, "", "Secret", r.Namespace, r.Name) {
			t.probs.Add(CodeRefNotPermitted, at, "Secret "+r.Namespace+"/"+r.Name+" is in another namespace, and no ReferenceGrant there lets Gateways of "+gwNS+" refer to it")
			return nil
		}
	}
	if c := t.certByRef[r]; c != nil {
		return c
	}
	c := &certificate{id: r.Namespace + "." + r.Name, ref: r, path: at}
	if files, ok := t.opt.Certificates[r]; ok {
		c.files = files
	} else if s := t.secrets[r]; s != nil {
		crt, key, ok := t.secretPEM(s)
		if !ok {
			return nil
		}
		if t.opt.SecretDir == "" {
			t.probs.Add(CodeSecretDirMissing, at, "Secret "+r.Namespace+"/"+r.Name+" is in the objects, and no secret directory is given to write its certificate to (Options.SecretDir; the reference daemon's -gateway-api-secrets)")
			return nil
		}
		c.files = CertificateFiles{
			CertFile: filepath.Join(t.opt.SecretDir, c.id+".crt"),
			KeyFile:  filepath.Join(t.opt.SecretDir, c.id+".key"),
		}
		t.res.Secrets = append(t.res.Secrets, SecretFile{Path: c.files.CertFile, Data: crt}, SecretFile{Path: c.files.KeyFile, Data: key})
	} else {
		t.probs.Add(CodeCertificateRefUnknown, at, "no Secret "+r.Namespace+"/"+r.Name+" in the objects nor in the certificate files given (Options.Certificates)")
		return nil
	}
	t.certByRef[r] = c
	t.certs = append(t.certs, c)
	return c
}

// secretPEM returns a kubernetes.io/tls Secret's certificate and key,
// checked to load as a pair.
func (t *translation) secretPEM(s *corev1.Secret) (crt, key []byte, ok bool) {
	at := objPath("Secret", s.Namespace, s.Name, "")
	if s.Type != corev1.SecretTypeTLS {
		t.probs.Add(CodeSecretInvalid, at+": type", "type "+strconv.Quote(string(s.Type))+": a listener's certificate is a "+string(corev1.SecretTypeTLS)+" Secret")
		return nil, nil, false
	}
	get := func(k string) []byte {
		if v, ok := s.StringData[k]; ok {
			return []byte(v)
		}
		return s.Data[k]
	}
	crt, key = get(corev1.TLSCertKey), get(corev1.TLSPrivateKeyKey)
	if len(crt) == 0 || len(key) == 0 {
		t.probs.Add(CodeSecretInvalid, at+": data", "a "+string(corev1.SecretTypeTLS)+" Secret holds "+corev1.TLSCertKey+" and "+corev1.TLSPrivateKeyKey)
		return nil, nil, false
	}
	if _, err := tls.X509KeyPair(crt, key); err != nil {
		t.probs.Add(CodeSecretInvalid, at+": data", "its certificate and key do not load: "+err.Error())
		return nil, nil, false
	}
	return crt, key, true
}

// certificatesOut writes the certificates into the document.
func (t *translation) certificatesOut() {
	for i, c := range t.certs {
		t.res.Document.Certificates = append(t.res.Document.Certificates, config.Certificate{ID: c.id, CertFile: c.files.CertFile, KeyFile: c.files.KeyFile})
		t.res.addOrigin("certificates["+strconv.Itoa(i)+"]", c.path)
	}
}
