package proxy

import (
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/internal/enum"
	"github.com/paduraksa/paduraksa/internal/problem"
	"golang.org/x/net/http/httpguts"
)

// hopByHop reports whether the canonical name k is a hop-by-hop field of
// RFC 9110 section 7.6.1 or one proxies traditionally treat so; they never
// cross the proxy. A switch, not a list to delete: testing the few names a
// message has costs less than deleting ten from its map.
func hopByHop(k string) bool {
	switch k {
	case "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
		"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Http2-Settings":
		return true
	}
	return false
}

// removeHopByHop deletes the hop-by-hop fields from h, including every field
// named in any Connection value (all of them, even empty ones).
func removeHopByHop(h http.Header) {
	removeListed(h, h["Connection"])
	for k := range h {
		if hopByHop(k) {
			delete(h, k)
		}
	}
}

// removeListed deletes from h every field a Connection line of conn
// names. The common tokens keep-alive, close and upgrade delete nothing:
// Keep-Alive and Upgrade are hop-by-hop anyway, and no field is called
// Close; canonicalising them would allocate.
func removeListed(h http.Header, conn []string) {
	for _, v := range conn {
		for len(v) > 0 {
			var tok string
			tok, v, _ = strings.Cut(v, ",")
			switch tok = textproto.TrimString(tok); {
			case tok == "":
			case strings.EqualFold(tok, "keep-alive"), strings.EqualFold(tok, "close"), strings.EqualFold(tok, "upgrade"):
			default:
				delete(h, textproto.CanonicalMIMEHeaderKey(tok))
			}
		}
	}
}

// clientOnly reports whether the canonical name k is a forwarding field
// only a client could have set: the proxy writes its own.
func clientOnly(k string) bool {
	switch k {
	case "Forwarded", "X-Forwarded-Prefix", "X-Forwarded-Port", "X-Real-Ip", "X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host":
		return true
	}
	return false
}

// copyClientFields copies the client's fields src into h, less those
// that never reach the upstream from a client: the hop-by-hop fields and
// those a Connection line names, the forwarding fields (clientOnly),
// Cloudflare's unless the request came through a trusted Cloudflare
// peer, and names with underscores unless the host keeps them and they
// spell none of the gateway's own. Testing each name as it is copied costs
// a fraction of copying all and deleting some twenty names after.
func copyClientFields(h, src http.Header, rq *gate.Request, keepUnderscores bool) {
	untrusted := !rq.CloudflareTrusted
	for k, vv := range src {
		switch {
		case hopByHop(k), clientOnly(k), untrusted && cloudflareField(k):
			continue
		case strings.IndexByte(k, '_') >= 0 && (!keepUnderscores || ownedSpelling(k, rq)):
			// CGI, WSGI, Rack and PHP read X_Auth_User as X-Auth-User.
			continue
		}
		h[k] = vv
	}
	removeListed(h, src["Connection"])
}

// gatewayOwned reports whether the canonical name k is a field the
// gateway owns on a request to the upstream: hop-by-hop and framing
// fields, the forwarding fields, the request ID, Cloudflare's, and the
// headers the gate's policies own ([gate.Request.Owns]). A client never
// sets one through a trailer or an underscore spelling.
func gatewayOwned(k string, rq *gate.Request) bool {
	if hopByHop(k) || clientOnly(k) || cloudflareField(k) {
		return true
	}
	switch k {
	case "Host", "X-Request-Id", "Content-Length":
		return true
	}
	return rq.Owns(k)
}

// ownedSpelling reports whether a name with underscores spells a field the
// gateway owns once its underscores are hyphens, as CGI-style upstreams
// read it. It allocates; it runs only for names with underscores on a host
// that keeps them.
func ownedSpelling(k string, rq *gate.Request) bool {
	return gatewayOwned(textproto.CanonicalMIMEHeaderKey(strings.ReplaceAll(k, "_", "-")), rq)
}

// notTrailers are the fields RFC 9110 section 6.5.1 keeps out of trailers
// (framing, routing, controls, authentication, the representation's own
// fields), beyond what gatewayOwned lists.
var notTrailers = [...]string{
	"Authorization", "Cache-Control", "Content-Encoding", "Content-Range", "Content-Type",
	"Cookie", "Expect", "Max-Forwards", "Pragma", "Range", "Set-Cookie", "Www-Authenticate",
}

// declaredTrailers returns the request trailers to declare upstream: the
// client's declared names less those the gateway owns, those of
// notTrailers and names with underscores. Their values are filled in when
// the client's body ends (copyTrailers).
func declaredTrailers(client http.Header, rq *gate.Request) http.Header {
	out := make(http.Header, len(client))
	for k := range client {
		if strings.IndexByte(k, '_') >= 0 || gatewayOwned(k, rq) || slices.Contains(notTrailers[:], k) {
			continue
		}
		out[k] = nil
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// copyTrailers fills the declared trailers from the client's.
func copyTrailers(dst, src http.Header) {
	for k := range dst {
		dst[k] = src[k]
	}
}

// cloudflareField reports whether the canonical name k is True-Client-IP
// or a cf-* field: only Cloudflare may set them, and a request that did
// not come through a trusted Cloudflare peer could have forged them
// (Cloudflare Access identities among them).
func cloudflareField(k string) bool { return k == "True-Client-Ip" || isCloudflare(k) }

func isCloudflare(k string) bool {
	return len(k) > 3 && (k[0] == 'C' || k[0] == 'c') && (k[1] == 'f' || k[1] == 'F') && k[2] == '-'
}

var (
	teTrailers     = []string{"trailers"}[:1:1]
	schemeHTTP     = []string{"http"}[:1:1]
	schemeHTTPS    = []string{"https"}[:1:1]
	emptyUA        = []string(nil)
	connUpgrade    = []string{"Upgrade"}[:1:1]
	connClose      = []string{"close"}[:1:1]
	varyAcceptEnc  = "Accept-Encoding"
	acceptEncoding = []string{varyAcceptEnc}[:1:1]
)

// containsToken reports whether any of the comma-separated values holds
// token, compared without case.
func containsToken(values []string, token string) bool {
	for _, v := range values {
		for len(v) > 0 {
			var t string
			t, v, _ = strings.Cut(v, ",")
			if strings.EqualFold(textproto.TrimString(t), token) {
				return true
			}
		}
	}
	return false
}

// HeaderOp is what a custom header rule does.
type HeaderOp uint8

const (
	// HeaderSet replaces every value of the header (the zero value).
	HeaderSet HeaderOp = iota
	// HeaderAdd appends a value to those already there.
	HeaderAdd
	// HeaderRemove deletes the header.
	HeaderRemove
)

var headerOpNames = enum.Names[HeaderOp]{"set", "add", "remove"}

// String returns the operation's name: "set", "add" or "remove".
func (op HeaderOp) String() string { return headerOpNames.Name(op) }

// ParseHeaderOp returns the operation a name stands for.
func ParseHeaderOp(name string) (HeaderOp, bool) { return headerOpNames.Parse(name) }

// HeaderOpNames returns the names of the operations, the default first:
// the names a config document uses.
func HeaderOpNames() []string { return headerOpNames }

// HeaderRule is one custom header rule: a static value set, added or
// removed on the request sent upstream or on the response sent to the
// client.
type HeaderRule struct {
	// Name is the header name, 1-64 token characters, any case.
	Name string
	Op   HeaderOp
	// Value is 1-4096 visible ASCII characters, spaces or tabs, without
	// leading or trailing whitespace; empty for HeaderRemove.
	Value string
}

// Direction says which message a header rule applies to.
type Direction uint8

const (
	// Request rules apply to the request sent upstream.
	Request Direction = iota
	// Response rules apply to the response sent to the client, the proxy's
	// own answers included.
	Response
)

// MaxHeaderRules is the most rules one direction may hold, after a route's
// rules are merged over its host's.
const MaxHeaderRules = 32

// reservedBoth are refused in either direction: the proxy or the HTTP
// framing owns them.
var reservedBoth = map[string]bool{
	"Connection": true, "Content-Encoding": true, "Content-Length": true, "Expect": true,
	"Keep-Alive": true, "Proxy-Authenticate": true, "Proxy-Authorization": true,
	"Proxy-Connection": true, "Te": true, "Trailer": true, "Transfer-Encoding": true,
	"Upgrade": true, "Http2-Settings": true,
}

// reservedRequest are owned by the forwarding headers and the Host mode.
var reservedRequest = map[string]bool{
	"Host": true, "Forwarded": true, "X-Real-Ip": true, "X-Request-Id": true,
	"True-Client-Ip": true, "X-Paduraksa-Internal": true,
}

// reservedResponse have settings of their own (HSTS, Alt-Svc, the request
// ID) or would make every answer of the host a redirect (Location).
var reservedResponse = map[string]bool{
	"Strict-Transport-Security": true, "Alt-Svc": true, "X-Request-Id": true, "Location": true,
}

// CheckHeaderRule reports the first problem of a rule, a
// [ValidationError] with a path relative to the rule ("name", "op",
// "value"), or nil.
func CheckHeaderRule(dir Direction, r HeaderRule) error {
	if len(r.Name) == 0 || len(r.Name) > 64 || !httpguts.ValidHeaderFieldName(r.Name) {
		return &ValidationError{Code: CodeHeaderNameInvalid, Path: "name", Msg: quote(r.Name) + " is not 1-64 token characters"}
	}
	k := textproto.CanonicalMIMEHeaderKey(r.Name)
	if reservedBoth[k] ||
		(dir == Request && (reservedRequest[k] || strings.HasPrefix(k, "X-Forwarded-") || isCloudflare(k))) ||
		(dir == Response && reservedResponse[k]) {
		return &ValidationError{Code: CodeHeaderNameReserved, Path: "name", Msg: quote(r.Name) + " is owned by the proxy and cannot be a custom header"}
	}
	switch r.Op {
	case HeaderSet, HeaderAdd:
		if k == "Set-Cookie" && r.Op != HeaderAdd {
			return &ValidationError{Code: CodeHeaderOpInvalid, Path: "op", Msg: "Set-Cookie only takes add"}
		}
		if !validRuleValue(r.Value) {
			return &ValidationError{Code: CodeHeaderValueInvalid, Path: "value", Msg: quote(r.Value) + " is not 1-4096 visible characters without leading or trailing space"}
		}
	case HeaderRemove:
		if k == "Set-Cookie" {
			return &ValidationError{Code: CodeHeaderOpInvalid, Path: "op", Msg: "Set-Cookie only takes add"}
		}
		if r.Value != "" {
			return &ValidationError{Code: CodeHeaderValueUnexpected, Path: "value", Msg: "remove takes no value"}
		}
	default:
		return &ValidationError{Code: CodeHeaderOpInvalid, Path: "op", Msg: "unknown operation " + r.Op.String() + " (want " + headerOpNames.List() + ")"}
	}
	return nil
}

func validRuleValue(v string) bool {
	if len(v) == 0 || len(v) > 4096 {
		return false
	}
	if v[0] == ' ' || v[0] == '\t' || v[len(v)-1] == ' ' || v[len(v)-1] == '\t' {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}

// headerRule is a compiled rule: canonical key and a shared value.
type headerRule struct {
	key   string
	op    HeaderOp
	value []string // len == cap, so an Add by anyone copies
}

// headerRules is a compiled, merged list of rules for one direction.
type headerRules []headerRule

// compileRules checks rules, reporting each problem at path (the list's
// name) and its index, and merges them over the compiled rules they
// inherit: a rule for an inherited name replaces it in place, a new name
// goes after the inherited ones. One list may name a header once.
func compileRules(errs *problem.List, path string, dir Direction, inherited headerRules, rules []HeaderRule) headerRules {
	if len(rules) == 0 {
		return inherited
	}
	out := slices.Clone(inherited)
	seen := make(map[string]int, len(rules))
	for i, r := range rules {
		at := problem.Index(path, i)
		if err := CheckHeaderRule(dir, r); err != nil {
			errs.Under(at, CodeHeaderNameInvalid, err)
			continue
		}
		k := textproto.CanonicalMIMEHeaderKey(r.Name)
		if prev, dup := seen[k]; dup {
			errs.Add(CodeHeaderNameDuplicate, at+".name", quote(r.Name)+" has a rule already at "+problem.Index(path, prev))
			continue
		}
		seen[k] = i
		hr := headerRule{key: k, op: r.Op}
		if r.Op != HeaderRemove {
			hr.value = []string{r.Value}[:1:1]
		}
		replaced := false
		for i := range out {
			if out[i].key == k {
				out[i], replaced = hr, true
				break
			}
		}
		if !replaced {
			out = append(out, hr)
		}
	}
	if len(out) > MaxHeaderRules {
		errs.Add(CodeHeadersTooMany, path, strconv.Itoa(len(out))+" rules, at most "+strconv.Itoa(MaxHeaderRules)+" in one direction (a route's rules count with the ones it inherits)")
	}
	return out
}

// apply runs the rules on h. A set stores the shared value, a remove
// deletes, an add appends to a copy (never into a slice someone else
// holds).
func (rs headerRules) apply(h http.Header) {
	for i := range rs {
		r := &rs[i]
		switch r.op {
		case HeaderSet:
			h[r.key] = r.value
		case HeaderRemove:
			delete(h, r.key)
		case HeaderAdd:
			if old := h[r.key]; len(old) > 0 {
				h[r.key] = append(old[:len(old):len(old)], r.value[0])
			} else {
				h[r.key] = r.value
			}
		}
	}
}
