package tlsselect

import (
	"crypto/tls"
	"errors"
	"sync/atomic"
)

// ErrNoTable is returned to crypto/tls (which answers with an
// internal_error alert) by a Selector that has no Table yet, or a zero
// Table that New did not build.
var ErrNoTable = errors.New("tlsselect: no table published")

// Selector serves the current Table to TLS handshakes on TCP and QUIC
// through GetConfigForClient. Each handshake reads the current Table once,
// so a handshake under way when Swap publishes a new Table finishes on the
// one it started with, and connections already open are untouched.
//
// The zero Selector is ready to use and refuses every handshake with
// ErrNoTable until a Table is swapped in. A Selector is safe for
// concurrent use; it must not be copied after first use.
type Selector struct {
	table atomic.Pointer[Table]

	// Counters, each on its own cache line: handshakes refused and
	// handshakes that fell back to the default certificate, by reason.
	refused   [numReasons]paddedCounter
	defaulted [numReasons]paddedCounter
	noTable   paddedCounter
}

type paddedCounter struct {
	atomic.Uint64
	_ [56]byte
}

// NewSelector returns a Selector serving t (nil: none yet).
func NewSelector(t *Table) *Selector {
	s := &Selector{}
	s.table.Store(t)
	return s
}

// Swap publishes t for the handshakes that start from now on and returns
// the Table it replaces (nil if none).
func (s *Selector) Swap(t *Table) *Table { return s.table.Swap(t) }

// Table returns the current Table, or nil.
func (s *Selector) Table() *Table { return s.table.Load() }

// TLSConfig returns a new base config for TLS over TCP
// (tls.NewListener, http.Server.TLSConfig): its GetConfigForClient is
// s.GetConfigForClient, so every other setting comes from the Table's
// prebuilt configs.
func (s *Selector) TLSConfig() *tls.Config {
	return &tls.Config{GetConfigForClient: s.GetConfigForClient}
}

// QUICConfig returns a new base config for QUIC listeners
// (quic.Transport.ListenEarly): TLS 1.3, ALPN "h3", and
// GetQUICConfigForClient. http3.ConfigureTLSConfig is not needed on it
// and changes nothing if applied.
func (s *Selector) QUICConfig() *tls.Config {
	return &tls.Config{
		GetConfigForClient: s.GetQUICConfigForClient,
		NextProtos:         []string{"h3"},
		MinVersion:         tls.VersionTLS13,
	}
}

// GetConfigForClient returns the prebuilt TCP config for the handshake's
// server name, for tls.Config.GetConfigForClient.
func (s *Selector) GetConfigForClient(hello *tls.ClientHelloInfo) (*tls.Config, error) {
	return s.get(hello.ServerName, TCP)
}

// GetQUICConfigForClient returns the prebuilt QUIC config for the
// handshake's server name, for the GetConfigForClient of a QUIC listener's
// tls.Config. Hosts without HTTP/3 are refused.
func (s *Selector) GetQUICConfigForClient(hello *tls.ClientHelloInfo) (*tls.Config, error) {
	return s.get(hello.ServerName, QUIC)
}

func (s *Selector) get(name string, tr Transport) (*tls.Config, error) {
	t := s.table.Load()
	if t == nil || t.clock == nil { // none, or a zero Table, which New did not build
		s.noTable.Add(1)
		return nil, ErrNoTable
	}
	sel := t.Select(name, tr)
	switch sel.Match {
	case MatchRefused:
		s.refused[sel.Reason].Add(1)
	case MatchDefault:
		s.defaulted[sel.Reason].Add(1)
	}
	if sel.built != nil {
		sel.built.rotate(t.clock())
	}
	return sel.Config, nil
}

// Reasons counts handshakes by the reason they were refused or fell back.
type Reasons struct {
	NoSNI      uint64 // the client sent no server name
	UnknownSNI uint64 // the server name matched no host
	NoHTTP3    uint64 // QUIC, for a host without HTTP/3 (never a fallback)
	Pending    uint64 // for a host whose certificate is pending
}

// Stats are a Selector's counters since it was made.
type Stats struct {
	// Refused counts handshakes ended with an unrecognized_name alert.
	Refused Reasons
	// Defaulted counts handshakes served the default certificate.
	Defaulted Reasons
	// NoTable counts handshakes refused because no Table was published.
	NoTable uint64
}

// Stats returns the counters. Each is read atomically; together they are
// not one snapshot.
func (s *Selector) Stats() Stats {
	read := func(c *[numReasons]paddedCounter) Reasons {
		return Reasons{
			NoSNI:      c[ReasonNoSNI].Load(),
			UnknownSNI: c[ReasonUnknownSNI].Load(),
			NoHTTP3:    c[ReasonNoHTTP3].Load(),
			Pending:    c[ReasonPending].Load(),
		}
	}
	return Stats{Refused: read(&s.refused), Defaulted: read(&s.defaulted), NoTable: s.noTable.Load()}
}
