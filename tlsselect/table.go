package tlsselect

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/internal/hostname"
)

// Transport is the transport a handshake arrives on.
type Transport uint8

const (
	// TCP is TLS over TCP: HTTP/1.1 and HTTP/2.
	TCP Transport = iota
	// QUIC is QUIC's TLS 1.3: HTTP/3.
	QUIC
	numTransports
)

// String returns "tcp" or "quic".
func (t Transport) String() string {
	if t == QUIC {
		return "quic"
	}
	return "tcp"
}

// Match says how a handshake's server name was matched.
type Match uint8

const (
	// MatchRefused: the handshake is refused (see Reason).
	MatchRefused Match = iota
	// MatchExact: an exact host name matched.
	MatchExact
	// MatchWildcard: a "*.parent" host name matched.
	MatchWildcard
	// MatchDefault: no host matched, or the host's certificate is
	// pending, and the default certificate serves the handshake (see
	// Reason).
	MatchDefault
)

// String returns the match kind's name.
func (m Match) String() string {
	switch m {
	case MatchExact:
		return "exact"
	case MatchWildcard:
		return "wildcard"
	case MatchDefault:
		return "default"
	}
	return "refused"
}

// Reason says why a handshake was refused or fell back to the default
// certificate.
type Reason uint8

const (
	// ReasonNone: a host matched and serves the handshake.
	ReasonNone Reason = iota
	// ReasonNoSNI: the client sent no server name.
	ReasonNoSNI
	// ReasonUnknownSNI: the server name matches no host.
	ReasonUnknownSNI
	// ReasonNoHTTP3: a QUIC handshake for a host without HTTP/3.
	ReasonNoHTTP3
	// ReasonPending: the host's certificate is pending (its Source
	// returned ErrPending when the Table was built).
	ReasonPending
	numReasons
)

// String returns the reason's name.
func (r Reason) String() string {
	switch r {
	case ReasonNoSNI:
		return "noSni"
	case ReasonUnknownSNI:
		return "unknownSni"
	case ReasonNoHTTP3:
		return "noHttp3"
	case ReasonPending:
		return "pending"
	}
	return "none"
}

// Selection is what a Table chose for a handshake. The zero Selection is
// a refusal without a config (a zero Table's).
type Selection struct {
	// Config is the prebuilt config to return from GetConfigForClient;
	// never nil. A refused handshake gets a config without certificates,
	// on which crypto/tls ends the handshake with an unrecognized_name
	// alert.
	Config *tls.Config
	// Host is the index in Config.Hosts of the matched host, or -1.
	Host int
	// Match says how the name matched.
	Match Match
	// Reason says why the handshake fell back or was refused.
	Reason Reason

	built *prebuilt // nil when refused
}

// Table is an immutable map from server names to prebuilt TLS configs, one
// per certificate, host TLS policy and transport. Build it with New, once
// per configuration change, and publish it through a Selector. A Table is
// safe for concurrent use. The zero Table, which New did not build, has
// no host and no config: its Select returns a Selection without one, and
// a Selector refuses every handshake for it as for no Table
// ([ErrNoTable]).
type Table struct {
	exact    map[string]*hostEntry
	wildcard map[string]*hostEntry // keyed by the parent: "example.com" for "*.example.com"
	// fallback holds the selections of handshakes that match no host,
	// by the fallback's reason (no SNI, unknown SNI) and transport.
	fallback [numReasons][numTransports]Selection
	configs  []*prebuilt
	warnings []*ValidationError
	clock    func() time.Time
	byID     map[string]*tls.Certificate // the loaded certificates; pending ones are absent

	// What a later New may reuse (Config.Previous): the certificates
	// loaded from files, by Config index (nil: none), and each host's.
	loaded []*loaded
	hosts  []hostRecord
}

// hostRecord is what a host's coverage warnings were worked out from, and
// where they are among the Table's warnings.
type hostRecord struct {
	leaf     *x509.Certificate // nil: no certificate, no warnings
	names    []string          // canonical
	id       string            // the certificate's
	from, to int               // warnings[from:to]
}

// hostEntry is a host's selection per transport.
type hostEntry struct {
	sel [numTransports]Selection // Match of those with ReasonNone left for the lookup
}

// New builds a Table from cfg: it checks cfg, loads every certificate,
// and prebuilds one *tls.Config per certificate, policy and transport. It
// returns every problem at once, each a *ValidationError, joined with
// errors.Join; problems that do not refuse cfg (a certificate that expires
// soon) are the Table's Warnings.
func New(cfg Config) (*Table, error) {
	var p problems
	// The hosts' canonical names, on one array that check fills.
	canon := make([][]string, len(cfg.Hosts))
	n := 0
	for i := range cfg.Hosts {
		n += len(cfg.Hosts[i].Names)
	}
	flat := make([]string, n)
	for i := range cfg.Hosts {
		k := len(cfg.Hosts[i].Names)
		canon[i], flat = flat[:0:k], flat[k:]
	}
	ids := cfg.check(&p, canon)
	// The certificates are loaded even when the config has problems, so
	// that every problem comes back at once.
	var secret []byte
	if len(cfg.TicketSecret) == 0 {
		secret = make([]byte, MinTicketSecretLen)
		rand.Read(secret)
	}
	s := cfg.resolve(secret)
	now := s.clock()
	b := builder{
		keys:  &ticketKeys{secrets: s.secrets, period: int64(s.period)},
		dedup: make(map[[32]byte]*prebuilt),
	}
	t := &Table{
		exact:    make(map[string]*hostEntry, len(cfg.Hosts)),
		wildcard: make(map[string]*hostEntry),
		clock:    s.clock,
	}

	// Names per certificate, for the sources and the coverage warnings;
	// catch-alls are served by the fallbacks.
	byCert := make(map[string][]string, len(cfg.Certificates))
	for i := range cfg.Hosts {
		id := cfg.Hosts[i].Certificate
		if id == "" {
			id = cfg.DefaultCertificate
		}
		byCert[id] = append(byCert[id], canon[i]...)
	}
	certs := make([]*tls.Certificate, len(cfg.Certificates))
	t.loaded = make([]*loaded, len(cfg.Certificates))
	wrong := func(i int) bool { return p.has(index("certificates", i)) } // its entry is wrong already: nothing to load
	read := cfg.ReadFile
	if read == nil {
		read = readAhead(cfg.Certificates, wrong)
	}
	for i := range cfg.Certificates {
		if wrong(i) {
			continue
		}
		ct := &cfg.Certificates[i]
		var old *loaded
		if prev := cfg.Previous; prev != nil && i < len(prev.loaded) {
			old = prev.loaded[i]
		}
		certs[i], t.loaded[i] = loadCertificate(&p, i, ct, byCert[ct.ID], now, read, old)
	}
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	// A nil certificate is a pending one.
	certOf := func(id string) *tls.Certificate { return certs[ids[id]] }
	t.byID = make(map[string]*tls.Certificate, len(certs))
	for i, ct := range certs {
		if ct != nil {
			t.byID[cfg.Certificates[i].ID] = ct
		}
	}
	var dflt *tls.Certificate
	if cfg.DefaultCertificate != "" {
		dflt = certOf(cfg.DefaultCertificate)
	}

	refuse := &tls.Config{SessionTicketsDisabled: true, Time: s.clock}
	refused := func(host int, r Reason) Selection {
		return Selection{Config: refuse, Host: host, Match: MatchRefused, Reason: r}
	}
	entries := make([]hostEntry, len(cfg.Hosts))
	var quotedID, qid string   // the last certificate ID named by a warning, and its quoted form
	var slab []ValidationError // the coverage warnings, a few allocations for all
	done := 0                  // the canonical names of the hosts before
	warn := func(w ValidationError) {
		if len(slab) == cap(slab) {
			// Room for the names left, up to twice the last: a
			// fleet's are all uncovered, or few are.
			slab = make([]ValidationError, 0, min(max(64, 2*cap(slab)), n-done))
		}
		slab = append(slab, w)
		p.warns = append(p.warns, &slab[len(slab)-1])
	}
	t.hosts = make([]hostRecord, len(cfg.Hosts))
	for i := range cfg.Hosts {
		h := &cfg.Hosts[i]
		id := h.Certificate
		if id == "" {
			id = cfg.DefaultCertificate
		}
		cert := certOf(id)
		pol := h.TLS.resolve()
		e := &entries[i]
		for tr := range numTransports {
			switch {
			case tr == QUIC && !pol.http3:
				e.sel[tr] = refused(i, ReasonNoHTTP3)
			case cert != nil:
				pb := b.config(cert, pol, tr, s.clock, now)
				e.sel[tr] = Selection{Config: pb.config, Host: i, built: pb}
			case dflt == nil || s.unknownSNI == FallbackRefuse:
				e.sel[tr] = refused(i, ReasonPending)
			default:
				// The host's own policy, so that what it demands of
				// clients holds while its certificate is pending.
				pb := b.config(dflt, pol, tr, s.clock, now)
				e.sel[tr] = Selection{Config: pb.config, Host: i, Match: MatchDefault, Reason: ReasonPending, built: pb}
			}
		}
		rec := &t.hosts[i]
		*rec = hostRecord{names: canon[i], id: id, from: len(p.warns)}
		var again []*ValidationError // Previous's warnings for the host, when reuse says they are its own now
		reuse := false
		if cert != nil {
			rec.leaf = cert.Leaf
			if prev := cfg.Previous; prev != nil && i < len(prev.hosts) {
				// The same leaf is one loaded from the same bytes.
				if ph := &prev.hosts[i]; ph.leaf == rec.leaf && ph.id == id && slices.Equal(ph.names, rec.names) {
					again, reuse = prev.warnings[ph.from:ph.to], true
				}
			}
		}
		for j, c := range canon[i] {
			if hostname.IsIP(c) {
				// No server name is an IP literal: NoSNI decides
				// handshakes to IP addresses. A host that the gate
				// also serves by its address is common, not a mistake.
				continue
			}
			m, key := t.exact, c
			if strings.HasPrefix(c, "*.") {
				m, key = t.wildcard, c[2:]
			}
			m[key] = e // no duplicates: check refused them
			if cert != nil && !reuse && !covers(cert.Leaf, c) {
				if qid == "" || quotedID != id {
					// Once for a fleet's hosts, which share one.
					quotedID, qid = id, quote(id)
				}
				warn(notCovered(qid, i, j, c))
			}
		}
		for _, w := range again {
			warn(*w) // a copy: each Table's warnings are its own
		}
		rec.to = len(p.warns)
		done += len(canon[i])
	}

	pol := cfg.DefaultTLS.resolve()
	for _, f := range []struct {
		r    Reason
		mode Fallback
	}{{ReasonNoSNI, s.noSNI}, {ReasonUnknownSNI, s.unknownSNI}} {
		for tr := range numTransports {
			if f.mode == FallbackRefuse || dflt == nil || (tr == QUIC && !pol.http3) {
				t.fallback[f.r][tr] = refused(-1, f.r)
				continue
			}
			pb := b.config(dflt, pol, tr, s.clock, now)
			t.fallback[f.r][tr] = Selection{Config: pb.config, Host: -1, Match: MatchDefault, Reason: f.r, built: pb}
		}
	}
	t.configs = b.all
	t.warnings = p.warns
	return t, nil
}

// Certificate returns the certificate of a Config ID as the Table loaded
// it, or nil for an ID the Config does not have or one still pending. It
// is how a certificate is presented as a client one too (to upstreams);
// the caller must not modify it. It allocates nothing.
func (t *Table) Certificate(id string) *tls.Certificate {
	if t == nil {
		return nil
	}
	return t.byID[id]
}

// Warnings returns the problems of the Config that did not refuse it:
// certificates that expire within ExpiryWarning or are pending, names a
// certificate does not cover, IP literals among host names.
func (t *Table) Warnings() []*ValidationError { return slices.Clone(t.warnings) }

// Select returns the selection for a handshake with server name name on
// transport tr. Names are matched without regard to ASCII case and with
// one trailing dot ignored; a name that matches no host, the empty name,
// and a name longer than any host name can be (hostname.MaxLen bytes,
// which a wildcard's parent could otherwise match) get the configured
// fallback. Select allocates nothing.
func (t *Table) Select(name string, tr Transport) Selection {
	tr = min(tr, QUIC)
	if name == "" {
		return t.fallback[ReasonNoSNI][tr]
	}
	var buf [hostname.MaxLen]byte
	key, ok := lookupKey(buf[:0], name)
	if ok {
		if e := t.exact[string(key)]; e != nil {
			return e.selection(tr, MatchExact)
		}
		// A single-label wildcard: the name's first label is dropped.
		if i := bytes.IndexByte(key, '.'); i > 0 && len(t.wildcard) > 0 {
			if e := t.wildcard[string(key[i+1:])]; e != nil {
				return e.selection(tr, MatchWildcard)
			}
		}
	}
	return t.fallback[ReasonUnknownSNI][tr]
}

func (e *hostEntry) selection(tr Transport, m Match) Selection {
	s := e.sel[tr]
	if s.Reason == ReasonNone {
		s.Match = m
	}
	return s
}

// lookupKey appends name, ASCII-lowercased and without one trailing dot,
// to dst (which has room for hostname.MaxLen bytes). It reports false for
// names no host can have: empty, or too long.
func lookupKey(dst []byte, name string) ([]byte, bool) {
	name = strings.TrimSuffix(name, ".")
	if name == "" || len(name) > cap(dst)-len(dst) {
		return dst, false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst, true
}

// notCovered returns the warning that the certificate qid (quoted) does
// not cover the name c, hosts[host].names[name]: what p.warn would make,
// at a fraction of the cost, as a fleet served by a default certificate
// that covers none of its names has one per name. Its path and message
// are one string.
func notCovered(qid string, host, name int, c string) ValidationError {
	const prefix, middle = "certificate ", " does not cover "
	var buf [64]byte
	path := append(buf[:0], "hosts["...)
	path = strconv.AppendInt(path, int64(host), 10)
	path = append(path, "].names["...)
	path = strconv.AppendInt(path, int64(name), 10)
	path = append(path, ']')
	var b strings.Builder
	b.Grow(len(path) + len(prefix) + len(qid) + len(middle) + len(c) + 2)
	b.Write(path)
	k := b.Len()
	b.WriteString(prefix)
	b.WriteString(qid)
	b.WriteString(middle)
	if plainASCII(c) {
		b.WriteByte('"')
		b.WriteString(c)
		b.WriteByte('"')
	} else {
		b.WriteString(strconv.Quote(c))
	}
	str := b.String()
	return ValidationError{Code: CodeHostNameNotCovered, Path: str[:k], Msg: str[k:]}
}

// quote returns s as %q formats it.
func quote(s string) string {
	if plainASCII(s) {
		return `"` + s + `"`
	}
	return strconv.Quote(s)
}

// plainASCII reports whether s is printable ASCII that %q leaves as it
// is, as every canonical host name is.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// covers reports whether leaf is valid for a canonical host name: for a
// wildcard, whether it names that wildcard.
func covers(leaf *x509.Certificate, name string) bool {
	if !strings.HasPrefix(name, "*.") {
		if !mayCover(leaf.DNSNames, strings.TrimSuffix(name, ".")) && !strings.HasPrefix(name, "[") && !hostname.IsIP(name) {
			return false
		}
		return leaf.VerifyHostname(name) == nil
	}
	for _, n := range leaf.DNSNames {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

// mayCover reports whether one of a certificate's DNS names could cover
// name, a name that is not an IP literal: an equal name or a wildcard
// over its parent ("*" over a name of one label), in any case, a
// trailing dot aside. VerifyHostname
// decides; most names of a fleet are not among those of its default
// certificate, and this rules them out at the cost of a comparison.
func mayCover(dnsNames []string, name string) bool {
	_, parent, _ := strings.Cut(name, ".")
	for _, n := range dnsNames {
		n = strings.TrimSuffix(n, ".")
		if strings.EqualFold(n, name) || (parent != "" && strings.HasPrefix(n, "*.") && strings.EqualFold(n[2:], parent)) ||
			(parent == "" && n == "*") {
			return true
		}
	}
	return false
}

// builder prebuilds configs, one per identity.
type builder struct {
	keys   *ticketKeys
	dedup  map[[32]byte]*prebuilt
	all    []*prebuilt
	leaves map[*x509.Certificate][32]byte // the hash of each leaf, once a table: every host of a fleet has the default's
	plain  map[plainKey]*prebuilt         // the configs of policies without client CAs, by what makes them
	// last is the plain config returned last per transport: a fleet's
	// hosts ask for the same one over and over, a comparison away.
	last [numTransports]struct {
		k  plainKey
		pb *prebuilt
	}
}

// plainKey is what makes the prebuilt config of a policy without client
// CAs: the hosts of a fleet share a few, whose identity is hashed once.
type plainKey struct {
	leaf       *x509.Certificate
	tr         Transport
	minVersion uint16
	clientAuth tls.ClientAuthType
	http1Only  bool
}

// config returns the prebuilt config for cert under pol on tr, building
// it on first use.
func (b *builder) config(cert *tls.Certificate, pol resolvedPolicy, tr Transport, clock func() time.Time, now time.Time) *prebuilt {
	if tr == QUIC {
		pol.minVersion = tls.VersionTLS13
	}
	k := plainKey{cert.Leaf, tr, pol.minVersion, pol.clientAuth, pol.http1Only}
	plain := len(pol.clientCAs) == 0
	if l := &b.last[tr]; plain && l.pb != nil && l.k == k {
		return l.pb
	}
	if pb := b.plain[k]; plain && pb != nil {
		b.last[tr].k, b.last[tr].pb = k, pb
		return pb
	}
	protos := []string{"h2", "http/1.1"}
	switch {
	case tr == QUIC:
		protos = []string{"h3"}
	case pol.http1Only:
		protos = []string{"http/1.1"}
	}
	pb := b.build(cert, pol, protos, tr, clock, now)
	if plain {
		if b.plain == nil {
			b.plain = make(map[plainKey]*prebuilt)
		}
		b.plain[k] = pb
		b.last[tr].k, b.last[tr].pb = k, pb
	}
	return pb
}

// build returns the prebuilt config of an identity, building it on first
// use.
func (b *builder) build(cert *tls.Certificate, pol resolvedPolicy, protos []string, tr Transport, clock func() time.Time, now time.Time) *prebuilt {
	leaf, ok := b.leaves[cert.Leaf]
	if !ok {
		leaf = sha256.Sum256(cert.Leaf.Raw)
		if b.leaves == nil {
			b.leaves = make(map[*x509.Certificate][32]byte)
		}
		b.leaves[cert.Leaf] = leaf
	}
	id := identity(leaf, pol, protos, tr)
	if pb := b.dedup[id]; pb != nil {
		return pb
	}
	c := &tls.Config{
		Certificates: []tls.Certificate{*cert},
		NextProtos:   protos,
		MinVersion:   pol.minVersion,
		ClientAuth:   pol.clientAuth,
		Time:         clock,
	}
	if len(pol.clientCAs) > 0 {
		c.ClientCAs = x509.NewCertPool()
		for _, ca := range pol.clientCAs {
			c.ClientCAs.AddCert(ca)
		}
	}
	pb := &prebuilt{config: c, id: id, keys: b.keys}
	pb.setKeys(b.keys.epoch(now))
	b.dedup[id] = pb
	b.all = append(b.all, pb)
	return pb
}

// identity hashes what makes a prebuilt config what it is: the transport,
// the leaf certificate and the policy as the config applies it. Session
// ticket keys are derived from it, so a ticket opens only on a config
// with the same identity. leaf is the SHA-256 of the leaf certificate's
// DER bytes.
func identity(leaf [32]byte, pol resolvedPolicy, protos []string, tr Transport) [32]byte {
	h := sha256.New()
	buf := make([]byte, 0, 64)
	buf = append(buf, byte(tr))
	buf = append(buf, leaf[:]...)
	buf = binary.BigEndian.AppendUint16(buf, pol.minVersion)
	buf = append(buf, byte(pol.clientAuth))
	for _, p := range protos {
		buf = append(buf, byte(len(p)))
		buf = append(buf, p...)
	}
	buf = append(buf, 0)
	h.Write(buf)
	for _, ca := range pol.clientCAs {
		sum := sha256.Sum256(ca.Raw)
		h.Write(sum[:])
	}
	return [32]byte(h.Sum(nil))
}
