package proxy

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
)

// h1Key is what a pooled connection leads to: an address and, over TLS,
// the server name it was made for ("" for the address's own host or
// ClientConfig.ServerName), so that a connection made for one name never
// carries a request for another.
type h1Key struct {
	addr string
	sni  string
	tls  bool
}

// h1TLS sends HTTP/1.1 requests to TLS destinations with one server name
// on the direct client, and the ones it does not handle with via,
// net/http's transport for the same name.
type h1TLS struct {
	p   *h1Pool
	sni string
	via http.RoundTripper
}

func (t *h1TLS) RoundTrip(req *http.Request) (*http.Response, error) {
	via := t.via
	if via == nil {
		via = t.p.base
	}
	return t.p.send(req, h1Key{addr: req.URL.Host, sni: t.sni, tls: true}, via)
}

// tlsFor returns the round tripper for a TLS destination whose server
// name is name ("" for the URL's host or ClientConfig.ServerName); via
// is net/http's for that name. Without a direct client for TLS (HTTP/2
// configured) it is via, counted as a fallback.
func (t *Transport) tlsFor(via http.RoundTripper, name string) http.RoundTripper {
	p := t.h1
	switch {
	case p == nil:
		return via
	case p.tls == nil:
		p.fallback.Add(1)
		return via
	case name == "":
		return &p.tlsDefault
	}
	v, _ := p.tlsNames.LoadOrCreate(name, func(int) (*h1TLS, bool) {
		return &h1TLS{p: p, sni: name, via: via}, true
	})
	return v
}

// dial connects to key: TCP, and over TLS the handshake for its server
// name, both within the connect timeout.
func (p *h1Pool) dial(ctx context.Context, key h1Key) (net.Conn, error) {
	if !key.tls {
		return p.dialer.DialContext(ctx, "tcp", key.addr)
	}
	cfg := p.tls.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName = key.sni
		if cfg.ServerName == "" {
			cfg.ServerName = hostOnly(key.addr)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, p.dialer.Timeout)
	defer cancel()
	d := tls.Dialer{NetDialer: &p.dialer, Config: cfg}
	return d.DialContext(ctx, "tcp", key.addr)
}
