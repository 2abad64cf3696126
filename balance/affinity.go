package balance

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net/http"
	"net/netip"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/paduraksa/paduraksa/upstream"
)

// AffinityMode says where the affinity key travels.
type AffinityMode string

const (
	// AffinityHashCookie keeps the key in a cookie whose value is a 64-bit
	// keyed hash of the destination, in hex (the default; "" means it too).
	AffinityHashCookie AffinityMode = "HashCookie"
	// AffinityArrCookie keeps the key in a cookie shaped like the one of
	// IIS Application Request Routing: a 256-bit hash in 64 hex digits.
	AffinityArrCookie AffinityMode = "ArrCookie"
	// AffinityHeader reads the key from a request header and sends it in a
	// response header of the same name; the client must echo it.
	AffinityHeader AffinityMode = "Header"
)

// AffinityFailurePolicy says what happens when a request carries a key that
// leads to no available destination (malformed, unknown, or unhealthy).
type AffinityFailurePolicy string

const (
	// AffinityRedistribute lets the balancing policy pick another
	// destination and renews the key (the default; "" means it too).
	AffinityRedistribute AffinityFailurePolicy = "Redistribute"
	// AffinityReturn503 answers 503: the client's state lives on a
	// destination that is gone.
	AffinityReturn503 AffinityFailurePolicy = "Return503"
)

// CookieSecure says when the affinity cookie carries the Secure attribute.
type CookieSecure string

const (
	// CookieSecureSameAsRequest sets Secure on responses to HTTPS requests
	// (the default; "" means it too).
	CookieSecureSameAsRequest CookieSecure = "SameAsRequest"
	CookieSecureAlways        CookieSecure = "Always"
	CookieSecureNever         CookieSecure = "Never"
)

// CookieSameSite is the SameSite attribute of the affinity cookie.
type CookieSameSite string

const (
	CookieSameSiteLax    CookieSameSite = "Lax" // the default; "" means it too
	CookieSameSiteStrict CookieSameSite = "Strict"
	CookieSameSiteNone   CookieSameSite = "None"
	// CookieSameSiteUnspecified sends no SameSite attribute.
	CookieSameSiteUnspecified CookieSameSite = "Unspecified"
)

// The names of the built-in values, the default first: the names the
// config types and a config document use. Validate accepts these and
// the empty string, which means the default.
var (
	affinityModes           = [...]AffinityMode{AffinityHashCookie, AffinityArrCookie, AffinityHeader}
	affinityFailurePolicies = [...]AffinityFailurePolicy{AffinityRedistribute, AffinityReturn503}
	cookieSecures           = [...]CookieSecure{CookieSecureSameAsRequest, CookieSecureAlways, CookieSecureNever}
	cookieSameSites         = [...]CookieSameSite{CookieSameSiteLax, CookieSameSiteStrict, CookieSameSiteNone, CookieSameSiteUnspecified}
)

// AffinityModeNames returns the names of the affinity modes.
func AffinityModeNames() []string { return names(affinityModes[:]) }

// AffinityFailurePolicyNames returns the names of the failure policies.
func AffinityFailurePolicyNames() []string { return names(affinityFailurePolicies[:]) }

// CookieSecureNames returns the names of the Secure policies.
func CookieSecureNames() []string { return names(cookieSecures[:]) }

// CookieSameSiteNames returns the names of the SameSite values.
func CookieSameSiteNames() []string { return names(cookieSameSites[:]) }

func names[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// known reports whether v is empty (the default) or one of vs, and adds a
// problem at path otherwise.
func known[T ~string](errs *problem.List, v T, vs []T, code, path, what string) {
	if v != "" && !slices.Contains(vs, v) {
		errs.Add(code, path, "unknown "+what+" "+quote(string(v))+" (want "+strings.Join(names(vs), ", ")+")")
	}
}

// CookieConfig holds the attributes of an affinity cookie. The zero value is
// Path=/, HttpOnly, SameSite=Lax, Secure on HTTPS requests, and a session
// cookie.
type CookieConfig struct {
	// Path is the cookie path; empty means "/".
	Path string
	// Domain is the cookie domain; empty sends no Domain attribute.
	Domain string
	// AllowScriptAccess turns HttpOnly off.
	AllowScriptAccess bool
	// Secure says when to set Secure.
	Secure CookieSecure
	// SameSite is the SameSite attribute.
	SameSite CookieSameSite
	// MaxAge is the cookie lifetime, in whole seconds; 0 makes a session
	// cookie.
	MaxAge time.Duration
}

// AffinityConfig configures session affinity for one cluster. The zero value
// is a hashed cookie called [DefaultAffinityKeyName] with the
// Redistribute failure policy.
type AffinityConfig struct {
	Mode AffinityMode
	// KeyName is the cookie or header name; empty means
	// DefaultAffinityKeyName.
	KeyName       string
	FailurePolicy AffinityFailurePolicy
	// Cookie holds the cookie attributes; it must be zero in Header mode.
	Cookie CookieConfig
}

// DefaultAffinityKeyName is the default name of the affinity cookie or
// header.
const DefaultAffinityKeyName = ".Paduraksa.Affinity"

// Validate returns every problem in c, each a *[ValidationError] with a
// path relative to c, joined; nil means c is valid.
func (c AffinityConfig) Validate() error {
	var errs problem.List
	known(&errs, c.Mode, affinityModes[:], CodeAffinityModeUnknown, "mode", "affinity mode")
	if c.Mode == AffinityHeader && c.Cookie != (CookieConfig{}) {
		errs.Add(CodeAffinityCookieUnused, "cookie", "cookie settings do not apply to header affinity")
	}
	if c.KeyName != "" && !isToken(c.KeyName) {
		errs.Add(CodeAffinityKeyNameInvalid, "keyName", quote(c.KeyName)+" is not a cookie or header name (an HTTP token)")
	}
	known(&errs, c.FailurePolicy, affinityFailurePolicies[:], CodeAffinityFailurePolicyUnknown, "failurePolicy", "failure policy")
	ck := c.Cookie
	if ck.Path != "" && (ck.Path[0] != '/' || !cookieText(ck.Path)) {
		errs.Add(CodeAffinityCookiePathInvalid, "cookie.path", quote(ck.Path)+": must start with / and hold no ;, control character or non-ASCII byte")
	}
	if ck.Domain != "" && !cookieDomain(ck.Domain) {
		errs.Add(CodeAffinityCookieDomainInvalid, "cookie.domain", quote(ck.Domain)+" is not a host name or IP address")
	}
	known(&errs, ck.Secure, cookieSecures[:], CodeAffinityCookieSecureUnknown, "cookie.secure", "secure policy")
	known(&errs, ck.SameSite, cookieSameSites[:], CodeAffinityCookieSameSiteUnknown, "cookie.sameSite", "SameSite value")
	if ck.SameSite == CookieSameSiteNone && ck.Secure != CookieSecureAlways {
		// Browsers drop a SameSite=None cookie that is not Secure; with
		// SameAsRequest that would happen on every plain-HTTP request.
		errs.Add(CodeAffinityCookieSameSiteInsecure, "cookie.sameSite", "SameSite None needs secure Always: browsers drop a SameSite=None cookie without Secure")
	}
	if ck.MaxAge < 0 || ck.MaxAge%time.Second != 0 {
		errs.Add(CodeAffinityCookieMaxAgeInvalid, "cookie.maxAge", "max age must be a whole, non-negative number of seconds (0 makes a session cookie)")
	}
	return errs.Err()
}

// cookieText reports whether s holds only visible ASCII and space, and no
// ";": what a cookie attribute value may hold.
func cookieText(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 || b >= 0x7f || b == ';' {
			return false
		}
	}
	return true
}

// cookieDomain reports whether d can be a cookie's Domain attribute: an IP
// address, or a host name in ASCII (labels of letters, digits, "-" and
// "_", no "-" at either end, at most 63 bytes each and 253 in all), with
// an optional leading dot, which browsers ignore.
func cookieDomain(d string) bool {
	d = strings.TrimPrefix(d, ".")
	if ip, err := netip.ParseAddr(d); err == nil {
		return ip.Zone() == ""
	}
	if d == "" || len(d) > 253 {
		return false
	}
	for label := range strings.SplitSeq(d, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			switch c := label[i]; {
			case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_':
			default:
				return false
			}
		}
	}
	return true
}

// AffinityStatus is the outcome of [Affinity.Find].
type AffinityStatus uint8

const (
	// AffinityNone: the request carries no key. Pick a destination with
	// the policy and call [Affinity.Set].
	AffinityNone AffinityStatus = iota
	// AffinityMatched: the key leads to an available destination; use it.
	AffinityMatched
	// AffinityRedistributed: the key leads nowhere (malformed, unknown
	// destination, or one not available) and the failure policy is
	// Redistribute: pick with the policy and call [Affinity.Set] to renew
	// the key.
	AffinityRedistributed
	// AffinityFailed: the key leads nowhere and the failure policy is
	// Return503: answer 503 Service Unavailable.
	AffinityFailed
)

// NeedsSet reports whether the response must carry a new key.
func (s AffinityStatus) NeedsSet() bool { return s == AffinityNone || s == AffinityRedistributed }

// String returns the status's name.
func (s AffinityStatus) String() string {
	switch s {
	case AffinityNone:
		return "none"
	case AffinityMatched:
		return "matched"
	case AffinityRedistributed:
		return "redistributed"
	case AffinityFailed:
		return "failed"
	}
	return "AffinityStatus(" + strconv.Itoa(int(s)) + ")"
}

// Affinity sends a client's requests to the destination that served its
// first one, through a cookie or a header. The key is a keyed hash (HMAC-
// SHA-256 over the cluster and destination IDs, with a secret key) so it never
// reveals a destination ID or address, and a client cannot forge a key for a
// destination it was not sent to.
//
// Find reads the key and matches it against a table of the cluster's
// members, built on the first Find after the members change; other Finds
// allocate nothing. Set allocates the header value it writes. An Affinity is
// safe for concurrent use; make one per cluster with [NewAffinity]. The
// zero Affinity has no key name: Find finds none and Set sets nothing.
type Affinity struct {
	mode    AffinityMode
	name    string // cookie name, or canonical header name
	fail    AffinityFailurePolicy
	secure  CookieSecure
	attrs   string // "; Path=/; HttpOnly; SameSite=Lax" and so on
	macSize int    // bytes of the MAC in the key
	key     []byte
	table   view[affinityTable]
}

type affinityTable struct {
	all     []*upstream.Destination
	macs    [][sha256.Size]byte // by index into all
	values  []string            // key values, by index into all
	entries []affinityEntry     // sorted by prefix
}

type affinityEntry struct {
	prefix uint64
	idx    int32
}

// NewAffinityKey returns a random 32-byte key for [NewAffinity]. Make one
// when the gateway starts and keep it across config publishes (and share it
// between replicas behind one load balancer): a new key invalidates every
// affinity cookie.
func NewAffinityKey() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}

// NewAffinity returns the session affinity of one cluster, or the
// validation errors of c joined. key is the HMAC key, at least 16 bytes; it
// is copied.
func NewAffinity(c AffinityConfig, key []byte) (*Affinity, error) {
	err := c.Validate()
	if len(key) < 16 {
		err = errors.Join(err, errors.New("balance: affinity key must be at least 16 bytes"))
	}
	if err != nil {
		return nil, err
	}
	a := &Affinity{mode: c.Mode, name: c.KeyName, fail: c.FailurePolicy, secure: c.Cookie.Secure, key: slices.Clone(key), macSize: 8}
	if a.mode == "" {
		a.mode = AffinityHashCookie
	}
	if a.name == "" {
		a.name = DefaultAffinityKeyName
	}
	if a.fail == "" {
		a.fail = AffinityRedistribute
	}
	switch a.mode {
	case AffinityArrCookie:
		a.macSize = sha256.Size
	case AffinityHeader:
		a.name = textproto.CanonicalMIMEHeaderKey(a.name)
	}
	a.attrs = cookieAttrs(c.Cookie)
	return a, nil
}

func cookieAttrs(c CookieConfig) string {
	b := []byte("; Path=")
	if c.Path == "" {
		b = append(b, '/')
	} else {
		b = append(b, c.Path...)
	}
	if c.Domain != "" {
		b = append(b, "; Domain="...)
		b = append(b, c.Domain...)
	}
	if c.MaxAge > 0 {
		b = append(b, "; Max-Age="...)
		b = strconv.AppendInt(b, int64(c.MaxAge/time.Second), 10)
	}
	if !c.AllowScriptAccess {
		b = append(b, "; HttpOnly"...)
	}
	switch c.SameSite {
	case "", CookieSameSiteLax:
		b = append(b, "; SameSite=Lax"...)
	case CookieSameSiteStrict:
		b = append(b, "; SameSite=Strict"...)
	case CookieSameSiteNone:
		b = append(b, "; SameSite=None"...)
	}
	return string(b)
}

// Find returns the destination that the request's affinity key leads to,
// among m's available destinations, and what the caller must do next (see
// [AffinityStatus]). d is non-nil only with AffinityMatched.
func (a *Affinity) Find(r *http.Request, m *upstream.Members) (d *upstream.Destination, status AffinityStatus) {
	v, ok := a.value(r)
	if !ok {
		return nil, AffinityNone
	}
	var mac [sha256.Size]byte
	if len(v) != 2*a.macSize || !decodeHex(mac[:a.macSize], v) || len(m.All) == 0 {
		return nil, a.failed()
	}
	t := a.table.load(m.All)
	if t == nil {
		if t = a.table.build(m.All, a.buildTable); t == nil {
			t = a.buildTable(m.All) // another goroutine is installing one
		}
	}
	idx := t.find(mac[:a.macSize])
	if idx < 0 {
		return nil, a.failed()
	}
	d = m.All[idx]
	for _, x := range m.Available {
		if x == d {
			return d, AffinityMatched
		}
	}
	return nil, a.failed()
}

func (a *Affinity) failed() AffinityStatus {
	if a.fail == AffinityReturn503 {
		return AffinityFailed
	}
	return AffinityRedistributed
}

func (a *Affinity) value(r *http.Request) (string, bool) {
	if a.mode == AffinityHeader {
		v := r.Header[a.name]
		if len(v) == 0 || v[0] == "" {
			return "", false
		}
		return v[0], true
	}
	return cookieValue(r.Header["Cookie"], a.name)
}

// Set writes the key that leads to d into the response: a Set-Cookie header,
// or in Header mode a header named like the key. r is the request being
// answered; it decides Secure under the SameAsRequest policy. Call it before
// the response header is written.
func (a *Affinity) Set(w http.ResponseWriter, r *http.Request, d *upstream.Destination) {
	if a.name == "" {
		return // a zero Affinity
	}
	v := a.valueOf(d)
	if a.mode == AffinityHeader {
		w.Header()[a.name] = []string{v}
		return
	}
	c := a.name + "=" + v + a.attrs
	if a.secure == CookieSecureAlways || (a.secure != CookieSecureNever && r != nil && r.TLS != nil) {
		c += "; Secure"
	}
	w.Header().Add("Set-Cookie", c)
}

// Key returns the affinity key value that leads to d.
func (a *Affinity) Key(d *upstream.Destination) string { return a.valueOf(d) }

func (a *Affinity) valueOf(d *upstream.Destination) string {
	if e := a.table.cur.Load(); e != nil {
		for i, x := range e.v.all {
			if x == d {
				return e.v.values[i]
			}
		}
	}
	mac := a.mac(d)
	return hex.EncodeToString(mac[:a.macSize])
}

func (a *Affinity) mac(d *upstream.Destination) [sha256.Size]byte {
	h := hmac.New(sha256.New, a.key)
	h.Write([]byte(d.ClusterID()))
	h.Write([]byte{0})
	h.Write([]byte(d.ID()))
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

func (a *Affinity) buildTable(all []*upstream.Destination) *affinityTable {
	t := &affinityTable{
		all:     all,
		macs:    make([][sha256.Size]byte, len(all)),
		values:  make([]string, len(all)),
		entries: make([]affinityEntry, len(all)),
	}
	for i, d := range all {
		t.macs[i] = a.mac(d)
		t.values[i] = hex.EncodeToString(t.macs[i][:a.macSize])
		t.entries[i] = affinityEntry{prefix: binary.BigEndian.Uint64(t.macs[i][:8]), idx: int32(i)}
	}
	slices.SortFunc(t.entries, func(x, y affinityEntry) int {
		switch {
		case x.prefix < y.prefix:
			return -1
		case x.prefix > y.prefix:
			return 1
		}
		return 0
	})
	return t
}

// find returns the index of the destination whose MAC starts with mac, or
// -1.
func (t *affinityTable) find(mac []byte) int {
	p := binary.BigEndian.Uint64(mac[:8])
	lo, hi := 0, len(t.entries)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.entries[m].prefix < p {
			lo = m + 1
		} else {
			hi = m
		}
	}
	for ; lo < len(t.entries) && t.entries[lo].prefix == p; lo++ {
		i := t.entries[lo].idx
		if subtle.ConstantTimeCompare(t.macs[i][:len(mac)], mac) == 1 {
			return int(i)
		}
	}
	return -1
}

// decodeHex decodes len(dst)*2 hex digits of s (either case) into dst and
// reports whether s was exactly that.
func decodeHex(dst []byte, s string) bool {
	if len(s) != 2*len(dst) {
		return false
	}
	for i := range dst {
		hi, ok1 := unhex(s[2*i])
		lo, ok2 := unhex(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
