package tlsselect

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/internal/hostname"
)

// Version is a minimum TLS version, spelled as configuration documents
// spell it.
type Version string

// The TLS versions a Policy accepts as its minimum.
const (
	VersionTLS12 Version = "1.2"
	VersionTLS13 Version = "1.3"
)

// Fallback says what a handshake gets when it names no configured host.
type Fallback string

// The fallbacks. The empty Fallback is FallbackDefault.
const (
	// FallbackDefault serves the default certificate with the DefaultTLS
	// policy, and refuses when there is no default certificate.
	FallbackDefault Fallback = "default"
	// FallbackRefuse refuses the handshake with an unrecognized_name
	// alert.
	FallbackRefuse Fallback = "refuse"
)

// ClientAuth says whether a host asks clients for a certificate.
type ClientAuth string

// The client certificate modes. The empty ClientAuth is ClientAuthOff.
const (
	// ClientAuthOff asks for no client certificate.
	ClientAuthOff ClientAuth = "off"
	// ClientAuthOptional asks for one and verifies it against ClientCAs
	// when the client sends one; a client without one is let in.
	ClientAuthOptional ClientAuth = "optional"
	// ClientAuthRequired refuses a client without a certificate that
	// verifies against ClientCAs.
	ClientAuthRequired ClientAuth = "required"
)

// Limits and defaults.
const (
	// DefaultTicketKeyPeriod is the session ticket key period used when
	// Config.TicketKeyPeriod is 0.
	DefaultTicketKeyPeriod = 24 * time.Hour
	// MinTicketKeyPeriod and MaxTicketKeyPeriod bound
	// Config.TicketKeyPeriod. crypto/tls honours a ticket for at most 7
	// days, so a longer period would only keep a key past every ticket it
	// sealed.
	MinTicketKeyPeriod = time.Minute
	MaxTicketKeyPeriod = 7 * 24 * time.Hour
	// MinTicketSecretLen is the shortest Config.TicketSecret accepted.
	MinTicketSecretLen = 32
	// ExpiryWarning is how close to its end a certificate's validity must
	// be for New to warn (CodeCertificateExpiring).
	ExpiryWarning = 14 * 24 * time.Hour
)

// Validation codes. They are stable: tools match on them. Codes marked
// warning are reported by Table.Warnings and do not refuse a Config.
const (
	CodeCertificateIDMissing      = "tlsselect.certificate.id.missing"
	CodeCertificateIDDuplicate    = "tlsselect.certificate.id.duplicate"
	CodeCertificateSourceConflict = "tlsselect.certificate.source.conflict" // files and a Source both set
	CodeCertificateFileMissing    = "tlsselect.certificate.file.missing"    // not named, or not on disk
	CodeCertificateFileUnreadable = "tlsselect.certificate.file.unreadable"
	CodeCertificateInvalid        = "tlsselect.certificate.invalid" // no parsable certificate
	CodeCertificateKeyInvalid     = "tlsselect.certificate.key.invalid"
	CodeCertificateKeyMismatch    = "tlsselect.certificate.key.mismatch"
	CodeCertificateNotYetValid    = "tlsselect.certificate.notYetValid"
	CodeCertificateExpired        = "tlsselect.certificate.expired"
	CodeCertificateExpiring       = "tlsselect.certificate.expiring" // warning
	CodeCertificateSourceFailed   = "tlsselect.certificate.source.failed"
	CodeCertificatePending        = "tlsselect.certificate.pending" // warning: the Source returned ErrPending

	CodeHostNamesMissing        = "tlsselect.host.names.missing"
	CodeHostNameInvalid         = "tlsselect.host.name.invalid"
	CodeHostNameDuplicate       = "tlsselect.host.name.duplicate"
	CodeHostNameNotCovered      = "tlsselect.host.name.notCovered" // warning
	CodeHostCertificateUnknown  = "tlsselect.host.certificate.unknown"
	CodeHostCertificateMissing  = "tlsselect.host.certificate.missing"
	CodeHostCatchAllCertificate = "tlsselect.host.catchAll.certificate" // "*" on a host with a certificate of its own
	CodeHostCatchAllClientAuth  = "tlsselect.host.catchAll.clientAuth"  // "*" on a host that asks for client certificates

	CodeMinVersionInvalid = "tlsselect.tls.minVersion.invalid"
	CodeClientAuthInvalid = "tlsselect.tls.clientAuth.invalid"
	CodeClientCAsMissing  = "tlsselect.tls.clientCAs.missing"
	CodeClientCAsUnused   = "tlsselect.tls.clientCAs.unused"

	CodeDefaultCertificateUnknown = "tlsselect.defaultCertificate.unknown"
	CodeFallbackInvalid           = "tlsselect.fallback.invalid"
	CodeTicketSecretShort         = "tlsselect.ticketSecret.short"
	CodeTicketSecretsConflict     = "tlsselect.ticketSecrets.conflict"
	CodeTicketSecretsEmpty        = "tlsselect.ticketSecrets.empty"
	CodeTicketKeyPeriodInvalid    = "tlsselect.ticketKeyPeriod.invalid"
)

// Config describes a Table: the certificates, the hosts that use them and
// what a handshake for no known host gets. The zero value is valid and
// refuses every handshake.
//
// A Config is read by New; changing it afterwards has no effect on the
// Table built from it, and New writes nothing into it.
type Config struct {
	// Certificates are the certificates hosts name by ID, each loaded
	// from PEM files or from a Source when the Table is built.
	Certificates []Certificate

	// Hosts are the names served, each with its certificate and TLS
	// policy.
	Hosts []Host

	// DefaultCertificate is the ID of the certificate for hosts without
	// one of their own and for the fallbacks. Empty means none.
	DefaultCertificate string

	// DefaultTLS is the TLS policy of handshakes that get the default
	// certificate through a fallback (no or an unknown server name). Its
	// HTTP3 decides whether QUIC handshakes fall back too.
	DefaultTLS Policy

	// UnknownSNI is what a handshake naming no configured host gets.
	// Empty means FallbackDefault.
	UnknownSNI Fallback

	// NoSNI is what a handshake without a server name gets (a client
	// that dialled an IP address). Empty means FallbackDefault.
	NoSNI Fallback

	// TicketSecret is the master secret the session ticket keys are
	// derived from, at least MinTicketSecretLen bytes. Tables built from
	// the same secret resume each other's tickets, across publishes and
	// across instances. Nil means a random secret made by New: tickets
	// then do not survive the next Table.
	TicketSecret []byte

	// TicketSecrets, when set, are the master secrets in place of
	// TicketSecret (which must then be nil): secrets that may be replaced
	// while the Table serves, a previous one kept to open tickets sealed
	// before a rotation (see [TicketSecrets]). Tables built with the same
	// TicketSecrets install each replacement on their next handshake.
	TicketSecrets *TicketSecrets

	// TicketKeyPeriod is how long one session ticket key seals tickets;
	// the key of the period before is kept to open them, so a ticket
	// resumes for at least one period. 0 means DefaultTicketKeyPeriod;
	// between MinTicketKeyPeriod and MaxTicketKeyPeriod.
	TicketKeyPeriod time.Duration

	// Clock tells the time for certificate validity, client certificate
	// verification and ticket key periods. Nil means time.Now.
	Clock func() time.Time

	// ReadFile, when set, is how New gets the contents of the
	// certificates' CertFile and KeyFile, in place of reading them
	// itself: a caller that read them ahead passes what it read (the
	// snapshot publisher does, so that building a Table on its goroutine
	// never waits on a file). An error wrapping fs.ErrNotExist refuses
	// the file as missing (CodeCertificateFileMissing), one of the
	// library's file rules with its code (CodeFileNotRegular, ...), any
	// other as unreadable. Nil means New reads them, under the rules of
	// MaxFileSize and FileTimeout.
	ReadFile func(name string) ([]byte, error)

	// Previous, when set, is a Table New built before, for the config
	// this one replaces: New reuses its work where the inputs are the
	// same, and builds the Table it would build without it. A
	// certificate whose files hold, byte for byte, what Previous loaded
	// at the same index is not parsed and checked again (its validity
	// is, against the clock), and a host at the same index with the same
	// canonical names and such a certificate gets the coverage warnings
	// Previous had for it without their being worked out again. Nil
	// means nothing is reused.
	Previous *Table
}

// Certificate is a certificate chain and its private key, named by ID.
// It comes from CertFile and KeyFile, or from Source when set.
type Certificate struct {
	// ID names the certificate for Host.Certificate and
	// Config.DefaultCertificate.
	ID string
	// CertFile is a PEM file with the chain: the leaf first, then
	// intermediates (not the root).
	CertFile string
	// KeyFile is a PEM file with the leaf's private key (PKCS #8, PKCS #1
	// or SEC 1).
	KeyFile string
	// Source supplies the certificate instead of the files; nil means the
	// files.
	Source Source
}

// Host is a set of names served with one certificate and TLS policy.
type Host struct {
	// Names are exact names ("www.example.com") and single-label
	// wildcards ("*.example.com", which matches "a.example.com" but not
	// "example.com" or "a.b.example.com"), compared without regard to
	// ASCII case; Unicode names are served as their punycode. IP literals
	// are accepted and ignored: no SNI carries one, and
	// NoSNI decides those handshakes. So is the catch-all "*" (the request
	// gate's host of every name no other host has): the handshakes it
	// stands for are the fallbacks' (UnknownSNI, NoSNI: DefaultCertificate
	// under DefaultTLS, or a refusal), so a host with it names no
	// certificate of its own and asks for no client certificate.
	Names []string
	// Certificate is the ID of the host's certificate; empty means
	// Config.DefaultCertificate.
	Certificate string
	// TLS is the host's TLS policy.
	TLS Policy
}

// Policy is a host's TLS settings. The zero value accepts TLS 1.2 and
// later with ALPN "h2" and "http/1.1", no HTTP/3 and no client
// certificates.
type Policy struct {
	// MinVersion is the oldest TLS version accepted; empty means
	// VersionTLS12. QUIC is always TLS 1.3.
	MinVersion Version
	// HTTP1Only offers ALPN "http/1.1" alone, so clients that offer h2
	// speak HTTP/1.1.
	HTTP1Only bool
	// HTTP3 serves the host on QUIC with ALPN "h3". Without it a QUIC
	// handshake for the host is refused.
	HTTP3 bool
	// ClientAuth asks for client certificates; empty means ClientAuthOff.
	ClientAuth ClientAuth
	// ClientCAs are the roots client certificates are verified against,
	// offline (no AIA, CRL or OCSP fetch): needed with ClientAuthOptional
	// and ClientAuthRequired, refused with ClientAuthOff.
	ClientCAs []*x509.Certificate
}

// problems collects validation errors and warnings.
type problems struct {
	errs  []error
	warns []*ValidationError
}

// has reports whether a problem was found at path or under it.
func (p *problems) has(path string) bool {
	for _, e := range p.errs {
		var ve *ValidationError
		if errors.As(e, &ve) && strings.HasPrefix(ve.Path, path) && (len(ve.Path) == len(path) || ve.Path[len(path)] == '.' || ve.Path[len(path)] == '[') {
			return true
		}
	}
	return false
}

func (p *problems) add(code, path, format string, args ...any) {
	p.errs = append(p.errs, &ValidationError{Code: code, Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (p *problems) warn(code, path, format string, args ...any) {
	p.warns = append(p.warns, &ValidationError{Code: code, Path: path, Msg: fmt.Sprintf(format, args...)})
}

func index(list string, i int) string { return list + "[" + strconv.Itoa(i) + "]" }

// Validate reports every problem of c that can be seen without loading
// its certificates, each as a *ValidationError, joined with errors.Join.
// New reports these and the certificates' own problems. Validate returns
// nil for a valid Config.
func (c Config) Validate() error {
	var p problems
	c.check(&p, nil)
	return errors.Join(p.errs...)
}

// check adds the problems of c's shape to p and returns the certificates'
// indexes by ID (the first of duplicates). When canon is not nil (one
// entry per host) it gets the canonical form of each host's names, as
// hostname.Canonical returns it, catch-alls left out.
func (c Config) check(p *problems, canon [][]string) map[string]int {
	ids := make(map[string]int, len(c.Certificates))
	for i, ct := range c.Certificates {
		path := index("certificates", i)
		switch _, dup := ids[ct.ID]; {
		case ct.ID == "":
			p.add(CodeCertificateIDMissing, path+".id", "a certificate needs an ID")
		case dup:
			p.add(CodeCertificateIDDuplicate, path+".id", "ID %q is taken by certificates[%d]", ct.ID, ids[ct.ID])
		default:
			ids[ct.ID] = i
		}
		switch {
		case ct.Source != nil && (ct.CertFile != "" || ct.KeyFile != ""):
			p.add(CodeCertificateSourceConflict, path+".source", "a certificate comes from files or from a source, not both")
		case ct.Source == nil && ct.CertFile == "":
			p.add(CodeCertificateFileMissing, path+".certFile", "a certificate needs certFile and keyFile")
		case ct.Source == nil && ct.KeyFile == "":
			p.add(CodeCertificateFileMissing, path+".keyFile", "a certificate needs certFile and keyFile")
		}
	}
	if c.DefaultCertificate != "" {
		if _, ok := ids[c.DefaultCertificate]; !ok {
			p.add(CodeDefaultCertificateUnknown, "defaultCertificate", "unknown certificate %q", c.DefaultCertificate)
		}
	}
	c.DefaultTLS.check(p, func() string { return "defaultTLS" })
	for _, f := range []struct {
		path string
		v    Fallback
	}{{"unknownSni", c.UnknownSNI}, {"noSni", c.NoSNI}} {
		if f.v != "" && f.v != FallbackDefault && f.v != FallbackRefuse {
			p.add(CodeFallbackInvalid, f.path, "%q is not %q or %q", f.v, FallbackDefault, FallbackRefuse)
		}
	}
	if n := len(c.TicketSecret); n > 0 && n < MinTicketSecretLen {
		p.add(CodeTicketSecretShort, "ticketSecret", "%d bytes; at least %d are needed", n, MinTicketSecretLen)
	}
	if c.TicketSecrets != nil {
		switch {
		case len(c.TicketSecret) > 0:
			p.add(CodeTicketSecretsConflict, "ticketSecrets", "ticketSecret and ticketSecrets both set; one is the master secret")
		case c.TicketSecrets.set.Load() == nil:
			p.add(CodeTicketSecretsEmpty, "ticketSecrets", "holds no secret; make it with NewTicketSecrets")
		}
	}
	if d := c.TicketKeyPeriod; d != 0 && (d < MinTicketKeyPeriod || d > MaxTicketKeyPeriod) {
		p.add(CodeTicketKeyPeriodInvalid, "ticketKeyPeriod", "%v is not between %v and %v", d, MinTicketKeyPeriod, MaxTicketKeyPeriod)
	}
	// Canonical name to its first use, whose path a duplicate's message
	// names: made only then, as nearly every name is unique.
	type use struct{ host, name int }
	names := make(map[string]use, len(c.Hosts))
	usePath := func(u use) string { return index(index("hosts", u.host)+".names", u.name) }
	for i := range c.Hosts {
		h := &c.Hosts[i]
		// Made only for a problem: a fleet's hosts have none.
		path := func() string { return index("hosts", i) }
		if len(h.Names) == 0 {
			p.add(CodeHostNamesMissing, path()+".names", "a host needs at least one name")
		}
		catchAll := false
		for j, n := range h.Names {
			at := use{i, j}
			if hostname.IsCatchAll(n) {
				catchAll = true
				if first, dup := names[hostname.CatchAll]; dup {
					p.add(CodeHostNameDuplicate, usePath(at), "%q is also %s", n, usePath(first))
				}
				names[hostname.CatchAll] = at
				continue
			}
			cn, _, err := hostname.Canonical(n)
			if canon != nil {
				canon[i] = append(canon[i], cn)
			}
			if err != nil {
				p.add(CodeHostNameInvalid, usePath(at), "%q: %v", n, err)
				continue
			}
			if first, dup := names[cn]; dup {
				p.add(CodeHostNameDuplicate, usePath(at), "%q is also %s", n, usePath(first))
				continue
			}
			names[cn] = at
		}
		switch _, ok := ids[h.Certificate]; {
		case h.Certificate != "" && !ok:
			p.add(CodeHostCertificateUnknown, path()+".certificate", "unknown certificate %q", h.Certificate)
		case h.Certificate == "" && c.DefaultCertificate == "":
			p.add(CodeHostCertificateMissing, path()+".certificate", "the host names no certificate and there is no default certificate")
		}
		h.TLS.check(p, func() string { return path() + ".tls" })
		if catchAll && h.Certificate != "" {
			p.add(CodeHostCatchAllCertificate, path()+".certificate", "the catch-all %q is served by the fallbacks, with the default certificate: its certificate would serve no handshake", hostname.CatchAll)
		}
		if catchAll && h.TLS.ClientAuth != "" && h.TLS.ClientAuth != ClientAuthOff {
			p.add(CodeHostCatchAllClientAuth, path()+".tls.clientAuth", "the catch-all %q is served by the fallbacks, whose handshakes (DefaultTLS) ask for no client certificate", hostname.CatchAll)
		}
	}
	return ids
}

// check adds pol's problems to p; path returns pol's own, made only for a
// problem.
func (pol *Policy) check(p *problems, path func() string) {
	switch pol.MinVersion {
	case "", VersionTLS12, VersionTLS13:
	default:
		p.add(CodeMinVersionInvalid, path()+".minVersion", "%q is not %q or %q", pol.MinVersion, VersionTLS12, VersionTLS13)
	}
	switch pol.ClientAuth {
	case "", ClientAuthOff:
		if len(pol.ClientCAs) > 0 {
			p.add(CodeClientCAsUnused, path()+".clientCAs", "client CAs without clientAuth %q or %q", ClientAuthOptional, ClientAuthRequired)
		}
	case ClientAuthOptional, ClientAuthRequired:
		if len(pol.ClientCAs) == 0 {
			p.add(CodeClientCAsMissing, path()+".clientCAs", "clientAuth %q needs client CAs", pol.ClientAuth)
		}
	default:
		p.add(CodeClientAuthInvalid, path()+".clientAuth", "%q is not %q, %q or %q", pol.ClientAuth, ClientAuthOff, ClientAuthOptional, ClientAuthRequired)
	}
	for i, ca := range pol.ClientCAs {
		if ca == nil {
			p.add(CodeClientCAsMissing, index(path()+".clientCAs", i), "nil certificate")
		}
	}
}

// resolvedPolicy is a Policy with its defaults applied.
type resolvedPolicy struct {
	minVersion uint16
	http1Only  bool
	http3      bool
	clientAuth tls.ClientAuthType
	clientCAs  []*x509.Certificate
}

// resolve applies the defaults of a valid Policy, on a copy.
func (pol Policy) resolve() resolvedPolicy {
	r := resolvedPolicy{minVersion: tls.VersionTLS12, http1Only: pol.HTTP1Only, http3: pol.HTTP3, clientCAs: pol.ClientCAs}
	if pol.MinVersion == VersionTLS13 {
		r.minVersion = tls.VersionTLS13
	}
	switch pol.ClientAuth {
	case ClientAuthOptional:
		r.clientAuth = tls.VerifyClientCertIfGiven
	case ClientAuthRequired:
		r.clientAuth = tls.RequireAndVerifyClientCert
	default:
		r.clientCAs = nil
	}
	return r
}

// settings are the table-wide values of a Config with its defaults
// applied.
type settings struct {
	unknownSNI, noSNI Fallback
	period            time.Duration
	secrets           *TicketSecrets
	clock             func() time.Time
}

// resolve applies the table-wide defaults of a valid Config, on a copy.
// secret is the master secret when c has none.
func (c Config) resolve(secret []byte) settings {
	s := settings{unknownSNI: c.UnknownSNI, noSNI: c.NoSNI, period: c.TicketKeyPeriod, secrets: c.TicketSecrets, clock: c.Clock}
	if s.unknownSNI == "" {
		s.unknownSNI = FallbackDefault
	}
	if s.noSNI == "" {
		s.noSNI = FallbackDefault
	}
	if s.period == 0 {
		s.period = DefaultTicketKeyPeriod
	}
	if s.secrets == nil || s.secrets.set.Load() == nil {
		if len(c.TicketSecret) >= MinTicketSecretLen {
			secret = c.TicketSecret
		}
		s.secrets = new(TicketSecrets)
		s.secrets.set.Store(&secretSet{current: append([]byte(nil), secret...)})
	}
	if s.clock == nil {
		s.clock = time.Now
	}
	return s
}

// VersionNames returns the Version values, the names a config document
// uses.
func VersionNames() []string { return []string{string(VersionTLS12), string(VersionTLS13)} }

// FallbackNames returns the Fallback values.
func FallbackNames() []string { return []string{string(FallbackDefault), string(FallbackRefuse)} }

// ClientAuthNames returns the ClientAuth values.
func ClientAuthNames() []string {
	return []string{string(ClientAuthOff), string(ClientAuthOptional), string(ClientAuthRequired)}
}
