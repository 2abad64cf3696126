package config

import (
	"bytes"
	"maps"
	"slices"
)

// CanonicalFormSince is [CanonicalFormOver] for a document that most
// likely differs little from the one base is the form of (the applied
// one, for a publish): a host or upstream equal to base's at the same
// index takes its canonical bytes from base instead of being encoded
// again. The bytes are those [CanonicalForm] returns. To tell a host or
// upstream equal, the form keeps a copy of each one it encoded, which
// shares no memory with doc, so that a document changed in place after
// it was given is never taken for the one it was; with a base that is
// not a form of CanonicalFormSince (the zero Form) every part is
// encoded.
func CanonicalFormSince(scratch, base Form, doc *Document) (Form, error) {
	return canonicalForm(scratch, base, true, doc)
}

// SameHost reports whether hosts[i] has the same canonical bytes in f as
// in g, which both have a hosts[i]. Two forms that keep the same copy of
// the host have them without a comparison.
func (f Form) SameHost(g Form, i int) bool {
	if i < len(f.hostIn) && i < len(g.hostIn) && f.hostIn[i] != nil && f.hostIn[i] == g.hostIn[i] {
		return true
	}
	return bytes.Equal(f.Host(i), g.Host(i))
}

// upstreamFrom writes upstreams[i]'s fields, from base's bytes when base
// encoded an equal upstream at i, and records the upstream's copy.
func (e *canonEnc) upstreamFrom(i int, u *Upstream) {
	if !e.since || !taken(e, i, u, e.base.upIn, e.base.upstreams, e.spans.upIn, sameUpstream) {
		e.upstream(u)
		keep(e, i, e.spans.upIn, copyUpstream, u)
	}
}

// hostFrom is upstreamFrom for hosts[i].
func (e *canonEnc) hostFrom(i int, h *Host) {
	if !e.since || !taken(e, i, h, e.base.hostIn, e.base.hosts, e.spans.hostIn, sameHost) {
		e.host(h)
		keep(e, i, e.spans.hostIn, copyHost, h)
	}
}

// taken reports whether the copy base kept of element i of a list
// (baseIn[i], its bytes at baseSpans[i]) is the same as v, and then
// writes base's bytes and records base's copy in in[i].
func taken[T any](e *canonEnc, i int, v *T, baseIn []*T, baseSpans []span, in []*T, same func(a, b *T) bool) bool {
	if i >= len(baseIn) || baseIn[i] == nil || !same(baseIn[i], v) {
		return false
	}
	e.b = append(e.b, e.base.of(baseSpans[i])...)
	in[i] = baseIn[i]
	return true
}

// keep records in in[i] a copy of v, element i of a list just encoded,
// for a form since this one.
func keep[T any](e *canonEnc, i int, in []*T, copyOf func(*T) *T, v *T) {
	if e.since {
		in[i] = copyOf(v)
	}
}

// sameUpstream reports whether a and b hold the same values, every field
// compared (TestSameUpstreamComparesEveryField changes each one).
func sameUpstream(a, b *Upstream) bool {
	return a.ID == b.ID && a.LoadBalancing == b.LoadBalancing && a.Health == b.Health && a.Limits == b.Limits &&
		sameUpstreamHTTP(&a.HTTP, &b.HTTP) && sameAffinity(&a.Affinity, &b.Affinity) &&
		sameMap(a.Metadata, b.Metadata) && sameEach(a.Destinations, b.Destinations, sameDestination)
}

func sameUpstreamHTTP(a, b *UpstreamHTTP) bool {
	return a.Version == b.Version && a.VersionPolicy == b.VersionPolicy && a.ConnectTimeout == b.ConnectTimeout &&
		a.IdleTimeout == b.IdleTimeout && a.HTTP1Client == b.HTTP1Client && a.ProxyProtocol == b.ProxyProtocol &&
		a.TLS.Trust == b.TLS.Trust && a.TLS.CAFile == b.TLS.CAFile && a.TLS.ClientCertificate == b.TLS.ClientCertificate &&
		a.TLS.ServerName == b.TLS.ServerName && slices.Equal(a.TLS.Pins, b.TLS.Pins)
}

func sameAffinity(a, b *Affinity) bool {
	ca, cb := &a.Cookie, &b.Cookie
	return a.Enabled == b.Enabled && a.Mode == b.Mode && a.FailurePolicy == b.FailurePolicy && a.Key == b.Key &&
		ca.Path == cb.Path && ca.Domain == cb.Domain && samePtr(ca.HTTPOnly, cb.HTTPOnly) && ca.Secure == cb.Secure &&
		ca.SameSite == cb.SameSite && ca.MaxAge == cb.MaxAge
}

func sameDestination(a, b *Destination) bool {
	return a.ID == b.ID && a.Address == b.Address && a.Health == b.Health && a.Drain == b.Drain && sameMap(a.Metadata, b.Metadata)
}

// copyUpstream returns a copy of u that shares no memory with it.
func copyUpstream(u *Upstream) *Upstream {
	c := *u
	c.Destinations = slices.Clone(u.Destinations)
	for k := range c.Destinations {
		c.Destinations[k].Metadata = maps.Clone(c.Destinations[k].Metadata)
	}
	c.Metadata = maps.Clone(u.Metadata)
	c.HTTP.TLS.Pins = slices.Clone(u.HTTP.TLS.Pins)
	c.Affinity.Cookie.HTTPOnly = clonePtr(u.Affinity.Cookie.HTTPOnly)
	return &c
}

// sameHost reports whether a and b hold the same values, every field
// compared (TestSameHostComparesEveryField changes each one).
func sameHost(a, b *Host) bool {
	return a.Kind == b.Kind && a.AccessList == b.AccessList && a.Certificate == b.Certificate && a.Server == b.Server &&
		a.Robots == b.Robots && a.RequestID == b.RequestID && a.KeepUnderscoreHeaders == b.KeepUnderscoreHeaders &&
		slices.Equal(a.Names, b.Names) && slices.Equal(a.Policies, b.Policies) &&
		samePtr(a.Redirect, b.Redirect) && samePtr(a.Fixed, b.Fixed) && samePtr(a.TLS, b.TLS) && samePtr(a.HSTS, b.HSTS) &&
		samePtr(a.HTTPSRedirect, b.HTTPSRedirect) && samePtr(a.Limits, b.Limits) && samePtr(a.AccessLog, b.AccessLog) &&
		sameHeaders(&a.Headers, &b.Headers) &&
		a.Compression.Enabled == b.Compression.Enabled && a.Compression.MinimumSize == b.Compression.MinimumSize &&
		slices.Equal(a.Compression.Encodings, b.Compression.Encodings) &&
		sameEach(a.Routes, b.Routes, sameRoute)
}

func sameRoute(a, b *Route) bool {
	return a.ID == b.ID && a.Path == b.Path && a.PathType == b.PathType && a.Order == b.Order && a.Upstream == b.Upstream &&
		a.MaxBodyBytes == b.MaxBodyBytes && a.HostHeader == b.HostHeader && a.HostName == b.HostName &&
		a.Retry == b.Retry && a.Timeouts == b.Timeouts && a.Split.Sticky == b.Split.Sticky &&
		slices.Equal(a.Match.Methods, b.Match.Methods) && slices.Equal(a.Match.Headers, b.Match.Headers) &&
		slices.Equal(a.Match.Query, b.Match.Query) && slices.Equal(a.AllowInPath, b.AllowInPath) &&
		slices.Equal(a.Policies, b.Policies) && sameRewrite(&a.Rewrite, &b.Rewrite) && sameHeaders(&a.Headers, &b.Headers) &&
		sameEach(a.Backends, b.Backends, func(x, y *Backend) bool { return x.Upstream == y.Upstream && samePtr(x.Weight, y.Weight) }) &&
		slices.Equal(a.Split.Force, b.Split.Force) && sameMirror(a.Mirror, b.Mirror) &&
		samePtr(a.Redirect, b.Redirect) && samePtr(a.Fixed, b.Fixed)
}

func sameRewrite(a, b *Rewrite) bool {
	return a.StripPrefix == b.StripPrefix && a.AddPrefix == b.AddPrefix && samePtr(a.RewriteLocation, b.RewriteLocation) &&
		a.Template == b.Template && a.ReplacePrefix == b.ReplacePrefix && a.Path == b.Path &&
		sameMap(a.Query.Set, b.Query.Set) && sameMap(a.Query.Add, b.Query.Add) && slices.Equal(a.Query.Remove, b.Query.Remove)
}

func sameHeaders(a, b *Headers) bool {
	return slices.Equal(a.Request, b.Request) && slices.Equal(a.Response, b.Response)
}

// sameMirror compares the pointers' values, the percent's too.
func sameMirror(a, b *Mirror) bool {
	if a == nil || b == nil {
		return a == b
	}
	ca, cb := *a, *b
	ca.Percent, cb.Percent = nil, nil
	return ca == cb && samePtr(a.Percent, b.Percent)
}

// sameEach reports whether a and b have the same length and same holds
// for each pair of elements, which it is given in place.
func sameEach[T any](a, b []T, same func(x, y *T) bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !same(&a[i], &b[i]) {
			return false
		}
	}
	return true
}

// sameMap is maps.Equal, without an iteration for empty maps.
func sameMap(a, b map[string]string) bool {
	return len(a) == len(b) && (len(a) == 0 || maps.Equal(a, b))
}

// samePtr reports whether a and b are both nil or point to equal values.
func samePtr[T comparable](a, b *T) bool { return a == b || a != nil && b != nil && *a == *b }

// clonePtr returns a copy of *p, or nil.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// copyHost returns a copy of h that shares no memory with it.
func copyHost(h *Host) *Host {
	c := *h
	c.Names, c.Policies = slices.Clone(h.Names), slices.Clone(h.Policies)
	c.Redirect, c.Fixed, c.TLS, c.HSTS = clonePtr(h.Redirect), clonePtr(h.Fixed), clonePtr(h.TLS), clonePtr(h.HSTS)
	c.HTTPSRedirect, c.Limits, c.AccessLog = clonePtr(h.HTTPSRedirect), clonePtr(h.Limits), clonePtr(h.AccessLog)
	c.Headers = copyHeaders(h.Headers)
	c.Compression.Encodings = slices.Clone(h.Compression.Encodings)
	c.Routes = slices.Clone(h.Routes)
	for k := range c.Routes {
		copyRouteIn(&c.Routes[k])
	}
	return &c
}

// copyRouteIn replaces what r points to by copies.
func copyRouteIn(r *Route) {
	r.Match.Methods, r.Match.Headers, r.Match.Query = slices.Clone(r.Match.Methods), slices.Clone(r.Match.Headers), slices.Clone(r.Match.Query)
	r.AllowInPath, r.Policies = slices.Clone(r.AllowInPath), slices.Clone(r.Policies)
	r.Rewrite.RewriteLocation = clonePtr(r.Rewrite.RewriteLocation)
	r.Rewrite.Query.Set, r.Rewrite.Query.Add = maps.Clone(r.Rewrite.Query.Set), maps.Clone(r.Rewrite.Query.Add)
	r.Rewrite.Query.Remove = slices.Clone(r.Rewrite.Query.Remove)
	r.Headers = copyHeaders(r.Headers)
	r.Backends = slices.Clone(r.Backends)
	for k := range r.Backends {
		r.Backends[k].Weight = clonePtr(r.Backends[k].Weight)
	}
	r.Split.Force = slices.Clone(r.Split.Force)
	if r.Mirror != nil {
		r.Mirror = clonePtr(r.Mirror)
		r.Mirror.Percent = clonePtr(r.Mirror.Percent)
	}
	r.Redirect, r.Fixed = clonePtr(r.Redirect), clonePtr(r.Fixed)
}

func copyHeaders(h Headers) Headers {
	return Headers{Request: slices.Clone(h.Request), Response: slices.Clone(h.Response)}
}
