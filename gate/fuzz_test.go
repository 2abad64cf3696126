package gate

import (
	"encoding/json"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// FuzzRightmostUntrusted checks RightmostUntrusted against its definition:
// the elements of every line, in order, walked from the right; a trusted
// element is skipped, the first untrusted one is the client; when all are
// trusted the leftmost is; a malformed element (or one with a zone) ends
// the walk, and the last trusted element seen, if any, is the client.
func FuzzRightmostUntrusted(f *testing.F) {
	for _, s := range []string{"203.0.113.7", "203.0.113.7, 10.0.0.1", "10.0.0.2,10.0.0.1", " 2001:db8::1 ,\t10.0.0.1", "junk, 10.0.0.1", "", ",", "fe80::1%eth0", "::ffff:10.0.0.1", "198.51.100.1, 203.0.113.7"} {
		f.Add(s, "10.0.0.3")
		f.Add("10.0.0.4", s)
	}
	trusted := mustPrefix("10.0.0.0/8", "2001:db8::/32")
	isTrusted := func(a netip.Addr) bool {
		for _, p := range trusted {
			if p.Contains(a) {
				return true
			}
		}
		return false
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		lines := []string{a, b}
		want, wantOK := refRightmostUntrusted(lines, isTrusted)
		got, ok := RightmostUntrusted(lines, isTrusted)
		if got != want || ok != wantOK {
			t.Fatalf("RightmostUntrusted(%q) = %v, %v; want %v, %v", lines, got, ok, want, wantOK)
		}
	})
}

func refRightmostUntrusted(lines []string, trusted func(netip.Addr) bool) (netip.Addr, bool) {
	var elements []string
	for _, l := range lines {
		elements = append(elements, strings.Split(l, ",")...)
	}
	var client netip.Addr
	for i := len(elements) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.Trim(elements[i], " \t"))
		if err != nil || a.Zone() != "" {
			break
		}
		client = a.Unmap()
		if !trusted(client) {
			break
		}
	}
	return client, client.IsValid()
}

// FuzzCFVisitor checks parseCFVisitor against its documentation: a single
// value that is exactly the JSON object {"scheme":"https"} or
// {"scheme":"http"}, byte for byte as Cloudflare sends it, gives the scheme;
// anything else, one value or several, gives "".
func FuzzCFVisitor(f *testing.F) {
	for _, s := range []string{`{"scheme":"https"}`, `{"scheme":"http"}`, `{"scheme": "https"}`, `{"scheme":"ftp"}`, `{"scheme":"https","x":1}`, `{"scheme":"https"} `, `{"scheme":"\u0068ttps"}`, ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := ""
		var obj map[string]any
		if json.Unmarshal([]byte(s), &obj) == nil && len(obj) == 1 {
			if scheme, ok := obj["scheme"].(string); ok && (scheme == "https" || scheme == "http") {
				if exact, err := json.Marshal(obj); err == nil && string(exact) == s {
					want = scheme
				}
			}
		}
		if got := parseCFVisitor([]string{s}); got != want {
			t.Fatalf("parseCFVisitor(%q) = %q, want %q", s, got, want)
		}
		if got := parseCFVisitor([]string{s, s}); got != "" {
			t.Fatalf("two values %q accepted as %q", s, got)
		}
	})
}

// FuzzRuleMatch checks a one-rule set against the rule's documentation:
// every condition that is set must hold; a path prefix is a plain string
// prefix, an exact path is equality, methods compare exactly, and the
// user-agent text is contained in the User-Agent with ASCII case ignored
// (and nothing else folded).
func FuzzRuleMatch(f *testing.F) {
	f.Add("/wp-", "", "", "badbot", "GET", "/wp-admin", "Mozilla/5.0 BadBot", true)
	f.Add("", "", "", "x", "GET", "/", "", false)
	f.Add("/a", "", "", "ÄBC", "GET", "/a", "ÄBC", true)
	f.Add("", "/admin", "POST,DELETE", "", "DELETE", "/admin", "", true)
	f.Add("", "", "GET", "", "get", "/", "", true)
	f.Add("", "", "", "k", "GET", "/", "\u212a", true)
	f.Add("/...", "/a.", "", "", "GET", "/", "", false)
	f.Add("/a::$DATA", "/x\xe0\x80\xae", "", "", "GET", "/", "", false)
	f.Add("/a", "", "GET,,PUT", "", "GET", "/a", "", false)
	f.Fuzz(func(t *testing.T, prefix, exact, methods, needle, method, path, ua string, hasUA bool) {
		rule := Rule{PathPrefix: prefix, PathExact: exact, UserAgentContains: needle}
		if methods != "" {
			rule.Methods = strings.Split(methods, ",")
		}
		rs, err := NewRuleSet(RuleSetConfig{ID: "fuzz", Rules: []Rule{rule}})
		if valid := refRulePath(prefix) && refRulePath(exact) && refMethods(rule.Methods); (err == nil) != valid {
			t.Fatalf("rule paths %q, %q, methods %q: error %v, want valid %v", prefix, exact, rule.Methods, err, valid)
		}
		if err != nil {
			return
		}
		r := &http.Request{Method: method, Header: http.Header{}}
		var uas []string
		if hasUA {
			uas = []string{ua}
			r.Header["User-Agent"] = uas
		}
		want := refRuleMatches(rule, path, method, uas)
		if got := rs.Evaluate(r, &Request{Path: path}).Verdict == Respond; got != want {
			t.Fatalf("rule %+v on %s %q, User-Agent %q: match %v, want %v", rule, method, path, uas, got, want)
		}
	})
}

// asciiFold lowers A-Z and leaves every other byte as it is.
var asciiFold = strings.NewReplacer("A", "a", "B", "b", "C", "c", "D", "d", "E", "e", "F", "f", "G", "g", "H", "h", "I", "i",
	"J", "j", "K", "k", "L", "l", "M", "m", "N", "n", "O", "o", "P", "p", "Q", "q", "R", "r", "S", "s", "T", "t", "U", "u",
	"V", "v", "W", "w", "X", "x", "Y", "y", "Z", "z")

// refRulePath reports whether a rule path is spelled as the path view
// spells paths: empty, or "/" then segments of bytes other than controls,
// space, %, ;, ?, #, \, none empty (but a last one), none of dots only,
// none ending with a dot or "::$DATA" (Windows drops those from names),
// and no overlong UTF-8 start.
// refMethods reports whether every method is a token of RFC 9110 section
// 5.6.2: one or more of the tchar characters.
func refMethods(ms []string) bool {
	const tchar = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	for _, m := range ms {
		if m == "" || strings.Trim(m, tchar) != "" {
			return false
		}
	}
	return true
}

func refRulePath(p string) bool {
	if p == "" {
		return true
	}
	if p[0] != '/' || strings.ContainsAny(p, "%;?#\\ \x7f") {
		return false
	}
	for _, bad := range []string{"\xc0", "\xc1", "\xe0\x80", "\xe0\x90", "\xf0\x80"} {
		if strings.Contains(p, bad) {
			return false // coarse: any overlong start refuses the path
		}
	}
	segs := strings.Split(p[1:], "/")
	for i, s := range segs {
		if (s == "" && i < len(segs)-1) || (s != "" && strings.Trim(s, ".") == "") ||
			strings.HasSuffix(s, ".") || strings.HasSuffix(strings.ToLower(s), "::$data") {
			return false
		}
		for _, c := range []byte(s) {
			if c < 0x20 {
				return false
			}
		}
	}
	return true
}

func refRuleMatches(r Rule, path, method string, ua []string) bool {
	if r.PathPrefix != "" && !strings.HasPrefix(asciiFold.Replace(path), asciiFold.Replace(r.PathPrefix)) {
		return false
	}
	if r.PathExact != "" && asciiFold.Replace(path) != asciiFold.Replace(r.PathExact) {
		return false
	}
	if len(r.Methods) > 0 && !slices.Contains(r.Methods, method) {
		return false
	}
	if r.UserAgentContains != "" && (len(ua) == 0 || !strings.Contains(asciiFold.Replace(ua[0]), asciiFold.Replace(r.UserAgentContains))) {
		return false
	}
	return true
}

// FuzzHostKey checks the host lookup against a reference that reads a Host
// header value by RFC 3986 (host [":" port], port = *DIGIT) on a table of
// exact and wildcard names: see refHostName for what names a host, exact
// names win over wildcards, and the most specific wildcard wins.
func FuzzHostKey(f *testing.F) {
	for _, s := range []string{"Example.COM:8080", "app.test.", "APP.test:", "[2001:DB8::1]:443", "[::ffff:10.0.0.1]", "10.0.0.1:80", "a..b", "", "[", "*.x",
		"x.wild.test", "a.deep.wild.test", "deep.wild.test", ".wild.test", "x..wild.test", "app.test:abc", "app.test:80:80", "[2001:db8::1]x", "[10.0.0.1]",
		"[fe80::1%eth0]", "2001:db8::1", "app%2etest", "x{y.wild.test", "x!y.wild.test", "XN--BCHER-KVA.example"} {
		f.Add(s)
	}
	names := []string{"app.test", "*.wild.test", "*.deep.wild.test", "10.0.0.1", "2001:db8::1", "xn--bcher-kva.example"}
	cfg := Config{}
	for _, n := range names {
		cfg.Hosts = append(cfg.Hosts, Host{Names: []string{n}, Routes: []Route{{Prefix: "/", Target: &forwarded{}}}})
	}
	g, err := New(cfg)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, hostport string) {
		h, m := g.Lookup(hostport)
		i, want := refLookup(names, hostport)
		var wantHost *Host
		if i >= 0 {
			wantHost = g.Host(i)
		}
		if h != wantHost || m != want {
			t.Fatalf("Lookup(%q) = host %p %v, want host %d %v", hostport, h, m, i, want)
		}
	})
}

// refLookup returns the index among names of the host hostport names, and
// how it matched; -1 for none.
func refLookup(names []string, hostport string) (int, HostMatch) {
	name, ok := refHostName(hostport)
	if !ok {
		return -1, HostUnknown
	}
	best, bestLen := -1, -1
	for i, n := range names {
		if n == name {
			return i, HostExact
		}
		if parent, wild := strings.CutPrefix(n, "*."); wild && strings.HasSuffix(name, "."+parent) && len(parent) > bestLen {
			best, bestLen = i, len(parent)
		}
	}
	if best < 0 {
		return -1, HostUnknown
	}
	return best, HostWildcard
}

var refHostPort = regexp.MustCompile(`^(?:\[([^\]]*)\]|([A-Za-z0-9._-]*))(?::[0-9]*)?$`)

// refHostName returns the name a Host header value gives by RFC 3986: an
// IPv6 literal in brackets (no zone) in canonical form, IPv4-mapped as
// IPv4; or a registered name (which includes IPv4 addresses) in ASCII
// lower case without one trailing dot, at most 253 bytes of non-empty
// labels of letters, digits, "-" and "_" (no sub-delims: upstreams read a
// list "a.test,b.test" each their own way). A value that does not fit the
// grammar names no host, and neither does a percent-encoded name.
func refHostName(hostport string) (string, bool) {
	m := refHostPort.FindStringSubmatch(hostport)
	if m == nil {
		return "", false
	}
	if strings.HasPrefix(hostport, "[") {
		ip, err := netip.ParseAddr(m[1])
		if err != nil || !ip.Is6() || ip.Zone() != "" {
			return "", false
		}
		return ip.Unmap().String(), true
	}
	name := strings.TrimSuffix(asciiFold.Replace(m[2]), ".")
	if name == "" || len(name) > 253 || slices.Contains(strings.Split(name, "."), "") {
		return "", false
	}
	return name, true
}
