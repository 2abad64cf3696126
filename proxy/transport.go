package proxy

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
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
)

// ClientConfig holds the settings of an upstream's HTTP client: a cluster
// keeps its transport (and its pooled connections) across publishes while
// its ClientConfig is unchanged. The zero value is HTTP/1.1 with a 10 s
// connect timeout and system trust. ClientConfig is comparable.
type ClientConfig struct {
	Version HTTPVersion
	// ExactVersion refuses to negotiate below Version over TLS.
	ExactVersion bool
	// ConnectTimeout covers the TCP connect and the TLS handshake; 0 means
	// 10 s.
	ConnectTimeout time.Duration
	Trust          Trust
	// Pins is the concatenation of 32-byte SHA-256 pins (a string so the
	// config stays comparable).
	Pins string
	// ServerName, when set, is the SNI and the certificate check name for
	// every request; otherwise the request's upstream Host is.
	ServerName string
}

// DefaultConnectTimeout is the connect timeout when none is configured.
const DefaultConnectTimeout = 10 * time.Second

// NewTransport returns an *http.Transport for the settings: compression off
// (the proxy passes bodies through untouched), a dial timeout that covers
// TLS, a bounded idle pool.
func NewTransport(cfg ClientConfig) *http.Transport {
	ct := cfg.ConnectTimeout
	if ct <= 0 {
		ct = DefaultConnectTimeout
	}
	t := &http.Transport{
		DialContext:            (&net.Dialer{Timeout: ct, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:    ct,
		DisableCompression:     true,
		MaxIdleConns:           0,
		MaxIdleConnsPerHost:    64,
		IdleConnTimeout:        90 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 1 << 20,
		TLSClientConfig:        tlsConfig(cfg),
	}
	var p http.Protocols
	switch cfg.Version {
	case HTTP2:
		p.SetHTTP2(true)
		p.SetUnencryptedHTTP2(true)
		if !cfg.ExactVersion {
			p.SetHTTP1(true)
		}
		t.ForceAttemptHTTP2 = true
	default:
		p.SetHTTP1(true)
	}
	t.Protocols = &p
	return t
}

func tlsConfig(cfg ClientConfig) *tls.Config {
	c := &tls.Config{ServerName: cfg.ServerName, MinVersion: tls.VersionTLS12}
	switch cfg.Trust {
	case TrustAny:
		c.InsecureSkipVerify = true
	case TrustPinned:
		pins := cfg.Pins
		c.InsecureSkipVerify = true
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("proxy: upstream sent no certificate")
			}
			return checkPin(cs.PeerCertificates[0], pins)
		}
	}
	return c
}

// ErrPinMismatch reports an upstream certificate whose key matches no pin.
var ErrPinMismatch = errors.New("proxy: upstream certificate matches no pin")

func checkPin(leaf *x509.Certificate, pins string) error {
	sum := sha256.Sum256(leaf.RawSubjectPublicKeyInfo)
	for i := 0; i+sha256.Size <= len(pins); i += sha256.Size {
		if bytes.Equal(sum[:], []byte(pins[i:i+sha256.Size])) {
			return nil
		}
	}
	return ErrPinMismatch
}

// Transports keeps one transport per cluster ID across publishes. A
// publish builds its set with [Transports.Next] and installs it with
// [TransportPlan.Commit]; a cluster whose ClientConfig is unchanged keeps its
// transport and pooled connections. The zero value is ready to use.
type Transports struct {
	mu  sync.Mutex
	cur map[string]*transportEntry
}

type transportEntry struct {
	cfg ClientConfig
	t   *http.Transport
}

// TransportPlan is the transport set of one publish, not yet installed.
type TransportPlan struct {
	ts   *Transports
	next map[string]*transportEntry
}

// Next starts the transport set of a publish.
func (ts *Transports) Next() *TransportPlan {
	return &TransportPlan{ts: ts, next: map[string]*transportEntry{}}
}

// Get returns the transport for a cluster: the current one when its
// settings are unchanged, else a new one.
func (p *TransportPlan) Get(clusterID string, cfg ClientConfig) *http.Transport {
	if e := p.next[clusterID]; e != nil && e.cfg == cfg {
		return e.t
	}
	p.ts.mu.Lock()
	e := p.ts.cur[clusterID]
	p.ts.mu.Unlock()
	if e == nil || e.cfg != cfg {
		e = &transportEntry{cfg: cfg, t: NewTransport(cfg)}
	}
	p.next[clusterID] = e
	return e.t
}

// Commit installs the plan. Transports no longer used close their idle
// connections; requests still using them finish.
func (p *TransportPlan) Commit() {
	p.ts.mu.Lock()
	old := p.ts.cur
	p.ts.cur = p.next
	p.ts.mu.Unlock()
	for id, e := range old {
		if n := p.next[id]; n == nil || n.t != e.t {
			e.t.CloseIdleConnections()
		}
	}
}
