package config

import (
	"maps"
	"slices"
)

// CanonicalFormSince is [CanonicalFormOver] for a document that most
// likely differs little from the one base is the form of (the applied
// one, for a publish): an upstream equal to base's at the same index
// takes its canonical bytes from base instead of being encoded again.
// The bytes are those [CanonicalForm] returns. To tell an upstream equal,
// the form keeps a copy of each upstream it encoded, which shares no
// memory with doc, so that a document changed in place after it was
// given is never taken for the one it was; a form that base is not one
// of CanonicalFormSince's (the zero Form) encodes every upstream.
func CanonicalFormSince(scratch, base Form, doc *Document) (Form, error) {
	return canonicalForm(scratch, base, true, doc)
}

// upstreamFrom writes upstreams[i]'s fields, from base's bytes when base
// encoded an equal upstream at i, and records the upstream's copy.
func (e *canonEnc) upstreamFrom(i int, u *Upstream) {
	b, in := &e.base, e.spans.upIn
	if !e.since {
		e.upstream(u)
		return
	}
	if i < len(b.upIn) && b.upIn[i] != nil && sameUpstream(b.upIn[i], u) {
		e.b = append(e.b, b.Upstream(i)...)
		in[i] = b.upIn[i]
		return
	}
	e.upstream(u)
	in[i] = copyUpstream(u)
}

// sameUpstream reports whether a and b hold the same values, every field
// compared (TestSameUpstreamComparesEveryField changes each one).
func sameUpstream(a, b *Upstream) bool {
	return a.ID == b.ID && a.LoadBalancing == b.LoadBalancing && a.Health == b.Health && a.Limits == b.Limits &&
		sameUpstreamHTTP(&a.HTTP, &b.HTTP) && sameAffinity(&a.Affinity, &b.Affinity) &&
		maps.Equal(a.Metadata, b.Metadata) && slices.EqualFunc(a.Destinations, b.Destinations, sameDestination)
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
		ca.Path == cb.Path && ca.Domain == cb.Domain && sameBool(ca.HTTPOnly, cb.HTTPOnly) && ca.Secure == cb.Secure &&
		ca.SameSite == cb.SameSite && ca.MaxAge == cb.MaxAge
}

func sameDestination(a, b Destination) bool {
	return a.ID == b.ID && a.Address == b.Address && a.Health == b.Health && a.Drain == b.Drain && maps.Equal(a.Metadata, b.Metadata)
}

// sameBool reports whether a and b are both nil or point to equal values.
func sameBool(a, b *bool) bool { return a == b || a != nil && b != nil && *a == *b }

// copyUpstream returns a copy of u that shares no memory with it.
func copyUpstream(u *Upstream) *Upstream {
	c := *u
	c.Destinations = slices.Clone(u.Destinations)
	for k := range c.Destinations {
		c.Destinations[k].Metadata = maps.Clone(c.Destinations[k].Metadata)
	}
	c.Metadata = maps.Clone(u.Metadata)
	c.HTTP.TLS.Pins = slices.Clone(u.HTTP.TLS.Pins)
	if p := u.Affinity.Cookie.HTTPOnly; p != nil {
		v := *p
		c.Affinity.Cookie.HTTPOnly = &v
	}
	return &c
}
