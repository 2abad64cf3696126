package gate

import (
	"net/netip"
	"strings"

	"github.com/paduraksa/paduraksa/internal/hostname"
)

// HostMatch says how a request's host name was matched.
type HostMatch uint8

const (
	// HostUnknown: no host has the name; the default answer applies.
	HostUnknown HostMatch = iota
	// HostExact: an exact name matched.
	HostExact
	// HostWildcard: a "*.parent" name matched.
	HostWildcard
	// HostCatchAll: no exact or wildcard name matched, and the catch-all
	// host ([CatchAll]) took the name.
	HostCatchAll
)

// CatchAll is the host name that stands for every name no other host has,
// exact or wildcard: at most one host of a gate has it. A Host header that
// names no host at all (empty, or malformed: see [Gate.Lookup]) is not
// taken by it but gets the default answer ([Config.Default]), which a
// gate with a catch-all host gives for those requests only.
const CatchAll = hostname.CatchAll

// String returns the match kind's name.
func (m HostMatch) String() string {
	switch m {
	case HostExact:
		return "exact"
	case HostWildcard:
		return "wildcard"
	case HostCatchAll:
		return "catchAll"
	}
	return "unknown"
}

// maxHostLen bounds the names the table looks up; longer names are unknown.
const maxHostLen = hostname.MaxLen

// CanonicalHostName returns the form of a configured host name that the
// host table stores: ASCII lowercase, Unicode labels in punycode, no
// trailing dot, IP literals canonical (IPv6 without brackets, IPv4-mapped
// IPv6 as IPv4). Surrounding white space is ignored. A wildcard keeps its
// "*." prefix and reports wildcard. It reports an error for anything a
// Host header could never match: among others an empty label, brackets
// around anything but an IP literal, and a name too long for a Host
// header to name it (or, for a wildcard, a name under it).
func CanonicalHostName(name string) (canon string, wildcard bool, err error) {
	return hostname.Canonical(name)
}

// hostTable maps canonical names to hosts. It is immutable once built.
type hostTable struct {
	exact    map[string]*Host
	wildcard map[string]*Host // keyed by the parent: "example.com" for "*.example.com"
	catchAll *Host            // the host named CatchAll, or nil
	// few holds the exact names while there are at most fewHosts of
	// them: comparing a few names, their lengths first, costs less than
	// hashing the name (BenchmarkHostLookup). many: exact alone holds them.
	few  []hostName
	many bool
}

type hostName struct {
	name string
	h    *Host
}

const fewHosts = 8

// newHostTable returns a table sized for every name of cfg, so building it
// never rehashes.
func newHostTable(cfg Config) hostTable {
	exact, wild := 0, 0
	count := func(names []string) {
		for _, n := range names {
			if strings.HasPrefix(n, "*.") {
				wild++
			} else {
				exact++
			}
		}
	}
	for i := range cfg.Hosts {
		count(cfg.Hosts[i].Names)
	}
	for _, h := range cfg.Reuse {
		count(h.Names)
	}
	return hostTable{exact: make(map[string]*Host, exact), wildcard: make(map[string]*Host, wild)}
}

// add stores h under a canonical name (or [CatchAll]); it reports false
// if the name is taken.
func (t *hostTable) add(canon string, h *Host) bool {
	if canon == CatchAll {
		if t.catchAll != nil {
			return false
		}
		t.catchAll = h
		return true
	}
	m, key := t.exact, canon
	if strings.HasPrefix(canon, "*.") {
		m, key = t.wildcard, canon[2:]
	}
	if _, dup := m[key]; dup {
		return false
	}
	m[key] = h
	if len(key) == len(canon) && !t.many { // an exact name
		if len(t.few) < fewHosts {
			t.few = append(t.few, hostName{key, h})
		} else {
			t.few, t.many = nil, true
		}
	}
	return true
}

// exactHost returns the host of an exact name, or nil.
func (t *hostTable) exactHost(name []byte) *Host {
	if t.many {
		return t.exact[string(name)]
	}
	for i := range t.few {
		if e := &t.few[i]; len(e.name) == len(name) && e.name == string(name) {
			return e.h
		}
	}
	return nil
}

// lookup finds the host for a Host header value as received (any case,
// optional port, optional trailing dot, IPv6 in brackets): an exact name,
// then the wildcards, then the catch-all. A value that names no host at
// all (hostKey refuses it) is unknown, catch-all or not. It appends the
// lookup key to dst (which needs room for maxHostLen bytes) and returns
// it. It allocates nothing.
func (t *hostTable) lookup(dst []byte, hostport string) (*Host, HostMatch, []byte) {
	name, ok := hostKey(dst, hostport)
	if !ok {
		return nil, HostUnknown, nil
	}
	if h := t.exactHost(name); h != nil {
		return h, HostExact, name
	}
	if len(t.wildcard) > 0 {
		// Most specific parent first: a.b.example.com tries
		// b.example.com, then example.com, then com.
		for i := 0; i < len(name); i++ {
			if name[i] == '.' {
				if h := t.wildcard[string(name[i+1:])]; h != nil {
					return h, HostWildcard, name
				}
			}
		}
	}
	if t.catchAll != nil {
		return t.catchAll, HostCatchAll, name
	}
	return nil, HostUnknown, name
}

// hostKey appends the lookup key of a Host header value to dst: port and
// IPv6 brackets stripped, ASCII lowercased, one trailing dot dropped. It
// reports false for values that cannot name a host: anything but
// host[":" port] of RFC 3986 (port = *DIGIT), an IP literal that is not
// IPv6 or has a zone, a name with an empty label, longer than 253 bytes,
// or with a byte other than letters, digits, "-", "_" and "." (RFC 3986's
// sub-delims and percent-encoding name no host here).
func hostKey(dst []byte, hostport string) ([]byte, bool) {
	h := hostport
	if strings.HasPrefix(h, "[") {
		end := strings.IndexByte(h, ']')
		if end < 0 || !validPort(h[end+1:]) {
			return dst, false
		}
		// IPv6 literals are compared in canonical form; parsing allocates
		// nothing.
		ip, err := netip.ParseAddr(h[1:end])
		if err != nil || !ip.Is6() || ip.Zone() != "" {
			return dst, false
		}
		return ip.Unmap().AppendTo(dst), true
	}
	if i := strings.IndexByte(h, ':'); i >= 0 {
		// A second colon (an unbracketed IPv6 literal) fails the port.
		if !validPort(h[i:]) {
			return dst, false
		}
		h = h[:i]
	}
	h = strings.TrimSuffix(h, ".")
	n := len(dst)
	if len(h) == 0 || len(h) > maxHostLen-2 || len(h) > cap(dst)-n || h[0] == '.' || h[len(h)-1] == '.' {
		return dst, false
	}
	out := dst[n : n+len(h)]
	for i := range len(h) {
		c := hostFold[h[i]]
		if c == 0 || c == '.' && h[i-1] == '.' { // h[0] is no dot
			// An empty label, or a byte no host name has: RFC 3986 lets
			// a reg-name hold sub-delims, but none is a host name, and
			// upstreams split a list such as "secret.test,www.test" each
			// their own way.
			return dst, false
		}
		out[i] = c
	}
	return dst[:n+len(h)], true
}

// hostFold maps the bytes a host name may hold (letters, digits, "-", "_"
// and ".") to their ASCII lower case, and every other byte to 0: one load
// a byte for hostKey.
var hostFold = func() (t [256]byte) {
	for c := byte('a'); c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = c, c
	}
	for c := byte('0'); c <= '9'; c++ {
		t[c] = c
	}
	t['-'], t['_'], t['.'] = '-', '_', '.'
	return t
}()

// validPort reports whether p is empty or ":" and digits (RFC 3986 allows
// an empty port).
func validPort(p string) bool {
	if p == "" {
		return true
	}
	if p[0] != ':' {
		return false
	}
	for i := 1; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return false
		}
	}
	return true
}
