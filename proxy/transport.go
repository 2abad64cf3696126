package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/internal/cowmap"
	"github.com/paduraksa/paduraksa/internal/enum"
	"github.com/paduraksa/paduraksa/internal/h1client"
	"github.com/paduraksa/paduraksa/internal/problem"
)

// HTTPVersion is the HTTP version spoken to an upstream.
type HTTPVersion uint8

const (
	// HTTP11 speaks HTTP/1.1 (the zero value).
	HTTP11 HTTPVersion = iota
	// HTTP2 speaks HTTP/2: over TLS through ALPN, over plain TCP as h2c
	// with prior knowledge.
	HTTP2
)

var httpVersionNames = enum.Names[HTTPVersion]{"1.1", "2"}

// String returns the version's name: "1.1" or "2".
func (v HTTPVersion) String() string { return httpVersionNames.Name(v) }

// ParseHTTPVersion returns the version a name stands for.
func ParseHTTPVersion(name string) (HTTPVersion, bool) { return httpVersionNames.Parse(name) }

// HTTPVersionNames returns the names of the versions, the default first:
// the names a config document uses.
func HTTPVersionNames() []string { return httpVersionNames }

// VersionPolicy says whether a client may speak a lower version than its
// HTTPVersion.
type VersionPolicy uint8

const (
	// VersionOrLower offers the version and takes a lower one (the zero
	// value): with HTTP2, TLS destinations that do not agree to h2 in
	// ALPN get HTTP/1.1, and plain-text ones are spoken to in HTTP/1.1.
	VersionOrLower VersionPolicy = iota
	// VersionExact refuses a lower version: with HTTP2, TLS destinations
	// must agree to h2 and plain-text ones are spoken to in h2c with prior
	// knowledge.
	VersionExact
)

var versionPolicyNames = enum.Names[VersionPolicy]{"orLower", "exact"}

// String returns the policy's name: "orLower" or "exact".
func (p VersionPolicy) String() string { return versionPolicyNames.Name(p) }

// ParseVersionPolicy returns the policy a name stands for.
func ParseVersionPolicy(name string) (VersionPolicy, bool) { return versionPolicyNames.Parse(name) }

// VersionPolicyNames returns the names of the version policies, the
// default first: the names a config document uses.
func VersionPolicyNames() []string { return versionPolicyNames }

// Trust says how an https upstream's certificate is checked.
type Trust uint8

const (
	// TrustSystem checks the chain against the system roots and the name.
	TrustSystem Trust = iota
	// TrustPinned accepts a leaf whose SubjectPublicKeyInfo SHA-256 is one
	// of the pins, whatever its chain and name.
	TrustPinned
	// TrustAny accepts any certificate.
	TrustAny
	// TrustCAFile checks the chain against the roots of
	// [ClientConfig.CAs] and the name.
	TrustCAFile
)

var trustNames = enum.Names[Trust]{"system", "pinned", "any", "caFile"}

// String returns the trust's name: "system", "pinned", "any" or
// "caFile".
func (t Trust) String() string { return trustNames.Name(t) }

// ParseTrust returns the trust a name stands for.
func ParseTrust(name string) (Trust, bool) { return trustNames.Parse(name) }

// TrustNames returns the names of the trusts, the default first: the
// names a config document uses.
func TrustNames() []string { return trustNames }

// ClientConfig holds the settings of an upstream's HTTP client: a cluster
// keeps its transport (and its pooled connections) across publishes while
// its ClientConfig is unchanged. The zero value is HTTP/1.1 with a 10 s
// connect timeout and system trust. ClientConfig is comparable.
type ClientConfig struct {
	Version HTTPVersion
	// VersionPolicy says whether Version may be negotiated down (see
	// [ClientConfig.PlainTextVersion]).
	VersionPolicy VersionPolicy
	// ConnectTimeout covers the TCP connect and the TLS handshake; 0 means
	// 10 s, else between MinConnectTimeout and MaxConnectTimeout.
	ConnectTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for the response header once
	// the request is written; 0 means none. The compiler sets it to the
	// cluster's idle timeout, so a request nobody answers is cut like a
	// quiet stream.
	ResponseHeaderTimeout time.Duration
	Trust                 Trust
	// Pins is the concatenation of 32-byte SHA-256 pins (a string so the
	// config stays comparable).
	Pins string
	// ServerName, when set, is the SNI and the certificate check name for
	// every request; otherwise the name in the request's upstream Host is
	// (see [Route]).
	ServerName string
	// HTTP1 is the client that speaks HTTP/1.1 (see [Transport]); 0
	// (HTTP1Default) is the direct one.
	HTTP1 HTTP1Client

	// CAs is the PEM text of the roots [TrustCAFile] checks against (a
	// string so the config stays comparable); only with TrustCAFile,
	// which needs at least one certificate in it.
	CAs string
	// ClientCertificate is the ID of the certificate presented to the
	// upstream on every TLS connection, looked up in Certificates at
	// each handshake, so a renewed certificate is presented by the next
	// new connection; "" presents none.
	ClientCertificate string
	// Certificates holds the certificates ClientCertificate names; it
	// is needed with one. ClientConfig values are compared with ==, so
	// its dynamic type must be comparable: use a pointer, and keep one
	// store for the transport's life, so that a publish that changes
	// nothing keeps the transport and its connections.
	Certificates ClientCertificates
	// ProxyProtocol, when not ProxyProtocolOff, starts every connection
	// with a PROXY header (see [ProxyProtocol]).
	ProxyProtocol ProxyProtocol

	// MaxConnsPerDestination bounds the connections open to one
	// destination address (idle or busy), 0 to MaxLimit; 0 means no
	// limit. On the direct client a request past it waits for one to go
	// idle or close, within the route's timeouts, and a wait that ends
	// with them is answered 503 as [LimitConnections]; on net/http's
	// (HTTP/2, and the HTTP/1.1 fallbacks) it is MaxConnsPerHost, per
	// server name pool, where requests wait in net/http.
	MaxConnsPerDestination int
	// MaxPending bounds the requests waiting for a connection of the
	// direct client at once (dialing one, or waiting at
	// MaxConnsPerDestination), 0 to MaxLimit; 0 means no limit. Past it
	// a request is answered 503 at once ([LimitPending]). A request that
	// takes an idle connection never waits. net/http's clients keep
	// their waiting to themselves: requests through them are bounded by
	// [Limits.MaxInFlight] instead.
	MaxPending int
}

// DefaultConnectTimeout is the connect timeout when none is configured;
// MinConnectTimeout and MaxConnectTimeout bound a configured one.
const (
	DefaultConnectTimeout = 10 * time.Second
	MinConnectTimeout     = 100 * time.Millisecond
	MaxConnectTimeout     = 5 * time.Minute
)

// MaxIdleConnsPerDestination is how many idle connections the forwarder
// keeps to each destination (they close after 90 s unused). It matches
// the concurrency the gateway serves, so a burst of requests does not end
// in dialing and closing a connection per request: with 64, HTTP/2
// clients at 640 concurrent streams spent a fifth of the daemon's CPU in
// connect and close.
const MaxIdleConnsPerDestination = 1024

// Validate reports every problem of c, each a [ValidationError] with a
// path relative to c, joined, or nil. [NewTransport] does not refuse
// anything: validate first.
func (c ClientConfig) Validate() error {
	var errs problem.List
	if !httpVersionNames.Known(c.Version) {
		errs.Add(CodeClientVersionUnknown, "version", "unknown HTTP version "+c.Version.String()+" (want "+httpVersionNames.List()+")")
	}
	if !versionPolicyNames.Known(c.VersionPolicy) {
		errs.Add(CodeClientVersionPolicyUnknown, "versionPolicy", "unknown version policy "+c.VersionPolicy.String()+" (want "+versionPolicyNames.List()+")")
	}
	if ct := c.ConnectTimeout; ct != 0 && (ct < MinConnectTimeout || ct > MaxConnectTimeout) {
		errs.Add(CodeClientConnectTimeoutInvalid, "connectTimeout", ct.String()+" is not between "+MinConnectTimeout.String()+" and "+MaxConnectTimeout.String())
	}
	if c.ResponseHeaderTimeout < 0 {
		errs.Add(CodeClientResponseHeaderTimeoutInvalid, "responseHeaderTimeout", "negative (0 means none)")
	}
	switch {
	case !trustNames.Known(c.Trust):
		errs.Add(CodeClientTrustUnknown, "trust", "unknown trust "+c.Trust.String()+" (want "+trustNames.List()+")")
	case c.Trust == TrustPinned && c.Pins == "":
		errs.Add(CodeClientPinsMissing, "pins", "trust pinned needs at least one pin")
	case c.Trust != TrustPinned && c.Pins != "":
		errs.Add(CodeClientPinsUnexpected, "pins", "pins are only used with trust pinned")
	}
	if len(c.Pins)%sha256.Size != 0 {
		errs.Add(CodeClientPinsInvalid, "pins", "not a whole number of 32-byte SHA-256 pins")
	}
	if !http1ClientNames.Known(c.HTTP1) {
		errs.Add(CodeClientHTTP1Unknown, "http1", "unknown HTTP/1.1 client "+c.HTTP1.String()+" (want "+http1ClientNames.List()+")")
	}
	if n := c.ServerName; n != "" && !validServerName(n) {
		errs.Add(CodeClientServerNameInvalid, "serverName", quote(n)+" is not a host name or IP literal")
	}
	c.validateIdentity(&errs)
	c.checkClientLimits(&errs)
	return errs.Err()
}

// validServerName reports whether n can be a TLS server name: a host name
// (as a custom Host, without a port) or an IP literal without brackets.
func validServerName(n string) bool {
	if ip, err := netip.ParseAddr(n); err == nil {
		return ip.Zone() == ""
	}
	return validHostName(n) && strings.IndexByte(n, ':') < 0
}

// PlainTextVersion returns the version c speaks to a plain-text (http://)
// destination: HTTP/2 (h2c) only with HTTP2 and VersionExact, HTTP/1.1
// otherwise.
func (c ClientConfig) PlainTextVersion() HTTPVersion {
	if c.Version == HTTP2 && c.VersionPolicy == VersionExact {
		return HTTP2
	}
	return HTTP11
}

// MaxServerNames bounds the TLS server names one [Transport] keeps a pool
// for (see [Transport.ForServerName]).
const MaxServerNames = 256

// Transport is a cluster's HTTP client: an *http.Transport for its
// [ClientConfig] and, for TLS upstreams, one more per server name that
// requests send as their Host, so that the SNI (and, with system trust, the
// certificate check) follows the Host header and a connection made for one
// name is never reused for another. It is safe for concurrent use.
//
// HTTP/1.1 goes through the direct client ([HTTP1Direct], the default):
// to plain-text destinations, and to TLS ones when the cluster speaks
// HTTP/1.1 only, with a pool per address and server name. An HTTP/2
// cluster's TLS destinations are net/http's (it negotiates the version),
// and so is, per request, what the direct client does not carry
// ([HTTP1Fallback]). net/http's HTTP/1.1 connections are read through the
// direct client's rules ([h1client.CheckedConn]): an answer one client
// refuses, the other refuses too, except on the TLS connections of an
// HTTP/2 cluster, whose plaintext net/http reads inside its own TLS.
//
// Make it with [NewTransport]: the zero Transport has no pools, and
// sending with it panics (a Route whose cluster has one is refused by
// [Route.CheckTarget]).
type Transport struct {
	cfg   ClientConfig
	base  *http.Transport
	names cowmap.Map[string, *http.Transport]
	h1    *h1client.Client // the direct HTTP/1.1 client; nil with net/http's or none
	h1TLS bool             // h1 takes the TLS destinations too
}

var _ http.RoundTripper = (*Transport)(nil)

// NewTransport returns the transport for the settings: compression off (the
// proxy passes bodies through untouched), a dial timeout that covers TLS, a
// bounded idle pool.
func NewTransport(cfg ClientConfig) *Transport {
	t := &Transport{cfg: cfg, base: newHTTPTransport(cfg)}
	c := cfg.HTTP1
	if c == HTTP1Default {
		c = defaultHTTP1
	}
	if c == HTTP1Direct && cfg.PlainTextVersion() == HTTP11 {
		hc := h1client.Config{
			ConnectTimeout:         connectTimeout(cfg),
			ResponseHeaderTimeout:  cfg.ResponseHeaderTimeout,
			MaxIdle:                MaxIdleConnsPerDestination,
			IdleTimeout:            idleConnTimeout,
			MaxConnsPerDestination: cfg.MaxConnsPerDestination,
			MaxPending:             cfg.MaxPending,
		}
		if t.h1TLS = cfg.Version == HTTP11; t.h1TLS {
			hc.TLS = h1TLSConfig(cfg)
		}
		t.h1 = h1client.New(hc)
	}
	return t
}

// idleConnTimeout closes a pooled connection unused for this long.
const idleConnTimeout = 90 * time.Second

func connectTimeout(cfg ClientConfig) time.Duration {
	if cfg.ConnectTimeout <= 0 {
		return DefaultConnectTimeout
	}
	return cfg.ConnectTimeout
}

// h1TLSConfig is the TLS configuration of an HTTP/1.1-only cluster:
// http/1.1 alone in ALPN.
func h1TLSConfig(cfg ClientConfig) *tls.Config {
	c := tlsConfig(cfg)
	c.NextProtos = []string{"http/1.1"}
	return c
}

// RoundTrip sends r with the base transport: its SNI is the URL's host.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) { return t.base.RoundTrip(r) }

// HTTP returns the base *http.Transport. Health probes use it, so they
// speak the cluster's version, trust and timeouts.
func (t *Transport) HTTP() *http.Transport { return t.base }

// Config returns the transport's settings.
func (t *Transport) Config() ClientConfig { return t.cfg }

// CloseIdleConnections closes the idle connections of every pool.
func (t *Transport) CloseIdleConnections() {
	t.base.CloseIdleConnections()
	if t.h1 != nil {
		t.h1.CloseIdle()
	}
	for _, v := range t.names.All() {
		v.CloseIdleConnections()
	}
}

// ForServerName returns the round tripper whose TLS SNI and certificate
// check name is name (lower case, no port). It reports false when the
// transport already holds MaxServerNames names. It allocates only the first
// time it sees a name.
func (t *Transport) ForServerName(name string) (http.RoundTripper, bool) {
	if v, ok := t.names.Load(name); ok {
		return v, true
	}
	v, ok := t.names.LoadOrCreate(name, func(n int) (*http.Transport, bool) {
		if n >= MaxServerNames {
			return nil, false
		}
		cfg := t.cfg
		cfg.ServerName = name
		return newHTTPTransport(cfg), true
	})
	if !ok {
		return nil, false
	}
	return v, true
}

// needsServerName reports whether a request to an https destination whose
// Host name is name needs a transport of its own.
func (t *Transport) needsServerName(destHost, name string) bool {
	return t.cfg.ServerName == "" && name != "" && !strings.EqualFold(hostOnly(destHost), name)
}

func newHTTPTransport(cfg ClientConfig) *http.Transport {
	ct := connectTimeout(cfg)
	dialer := &net.Dialer{Timeout: ct, KeepAlive: 30 * time.Second}
	t := &http.Transport{
		// Every connection is read through the direct client's rules;
		// one net/http wraps in its own TLS is seen as ciphertext, and
		// left unchecked.
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			ctx, cancel := connectBy(ctx)
			defer cancel()
			c, err := dialProxy(ctx, dialer, cfg.ProxyProtocol, network, addr)
			if err != nil {
				return nil, err
			}
			return h1client.NewCheckedConn(c), nil
		},
		TLSHandshakeTimeout:    ct,
		DisableCompression:     true,
		MaxIdleConns:           0,
		MaxIdleConnsPerHost:    MaxIdleConnsPerDestination,
		MaxConnsPerHost:        cfg.MaxConnsPerDestination,
		IdleConnTimeout:        idleConnTimeout,
		ExpectContinueTimeout:  time.Second,
		ResponseHeaderTimeout:  cfg.ResponseHeaderTimeout,
		MaxResponseHeaderBytes: h1client.MaxHeadBytes,
		TLSClientConfig:        tlsConfig(cfg),
		// A connection's PROXY header names one client: none is reused.
		DisableKeepAlives: cfg.ProxyProtocol != ProxyProtocolOff,
	}
	var p http.Protocols
	switch cfg.Version {
	case HTTP2:
		p.SetHTTP2(true)
		if cfg.VersionPolicy == VersionExact {
			p.SetUnencryptedHTTP2(true)
		} else {
			p.SetHTTP1(true)
		}
		t.ForceAttemptHTTP2 = true
	default:
		p.SetHTTP1(true)
		// HTTP/1.1 only: the TLS is ours, so that the connection read
		// through the rules is the plaintext.
		tc := h1TLSConfig(cfg)
		t.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c := tc.Clone()
			if c.ServerName == "" {
				c.ServerName = h1client.HostOnly(addr)
			}
			ctx, cancel := context.WithTimeout(ctx, ct)
			defer cancel()
			raw, err := dialProxy(ctx, dialer, cfg.ProxyProtocol, network, addr)
			if err != nil {
				return nil, err
			}
			conn := tls.Client(raw, c)
			if err := conn.HandshakeContext(ctx); err != nil {
				raw.Close()
				return nil, err
			}
			return h1client.NewCheckedConn(conn), nil
		}
	}
	t.Protocols = &p
	return t
}

// hostOnly returns the name of a host[:port], without brackets.
func hostOnly(h string) string { return h1client.HostOnly(h) }

func tlsConfig(cfg ClientConfig) *tls.Config {
	c := &tls.Config{ServerName: cfg.ServerName, MinVersion: tls.VersionTLS12}
	switch cfg.Trust {
	case TrustAny:
		c.InsecureSkipVerify = true
	case TrustPinned:
		pins := cfg.Pins
		c.InsecureSkipVerify = true
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			err := errNoCertificate
			if len(cs.PeerCertificates) > 0 {
				err = checkPin(cs.PeerCertificates[0], pins)
			}
			if err != nil {
				// As crypto/tls reports its own verification failures, so
				// that it is classified a TLS error.
				return &tls.CertificateVerificationError{UnverifiedCertificates: cs.PeerCertificates, Err: err}
			}
			return nil
		}
	}
	if cfg.Trust == TrustCAFile {
		// Without roots (a config Validate refuses) nothing verifies,
		// rather than the system roots.
		if c.RootCAs = rootCAs(cfg); c.RootCAs == nil {
			c.RootCAs = x509.NewCertPool()
		}
	}
	c.GetClientCertificate = clientCertificate(cfg)
	return c
}

// ErrPinMismatch reports an upstream certificate whose key matches no pin.
// The round trip's error is a [*tls.CertificateVerificationError] that
// wraps it.
var ErrPinMismatch = errors.New("proxy: upstream certificate matches no pin")

var errNoCertificate = errors.New("proxy: upstream sent no certificate")

func checkPin(leaf *x509.Certificate, pins string) error {
	sum := sha256.Sum256(leaf.RawSubjectPublicKeyInfo)
	for i := 0; i+sha256.Size <= len(pins); i += sha256.Size {
		if bytes.Equal(sum[:], []byte(pins[i:i+sha256.Size])) {
			return nil
		}
	}
	return ErrPinMismatch
}
