package proxy

import (
	"errors"
	"net/http"
	"net/textproto"
	"slices"
	"strings"
	"testing"

	"github.com/paduraksa/paduraksa/gate"
	"golang.org/x/net/http/httpguts"
)

// refASCIILower lowers A-Z and leaves every other byte alone: the case
// folding of RFC 9110 for field names, tokens and codings.
func refASCIILower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// refListElements splits a field's lines into their list elements by RFC
// 9110 section 5.6.1: split on commas, optional white space (space and tab
// only) trimmed, empty elements dropped.
func refListElements(lines []string) []string {
	var out []string
	for _, l := range lines {
		for _, el := range strings.Split(l, ",") {
			if el = strings.Trim(el, " \t"); el != "" {
				out = append(out, el)
			}
		}
	}
	return out
}

// refHopByHop are the fields RFC 9110 section 7.6.1 makes hop-by-hop and
// the ones proxies traditionally treat so, as removeHopByHop documents.
var refHopByHop = []string{"connection", "proxy-connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade", "http2-settings"}

// FuzzRemoveHopByHop checks removeHopByHop against RFC 9110 section 7.6.1:
// a field goes when it is hop-by-hop or named, in ASCII case only, by an
// element of any Connection line; every other field stays as it was. Field
// values are ones net/http accepts; the field name Close is reserved by the
// same section and so never occurs.
func FuzzRemoveHopByHop(f *testing.F) {
	f.Add("X-Keep, keep-alive", "", "X-Keep")
	f.Add("close", "x-auth-user", "X-Auth-User,X-Other")
	f.Add("\tX-A ,,  x-b\t", "Upgrade", "X-A,X-B,X-C")
	f.Add("", "X-A, X-B", "X-A,X-B")
	f.Add("x_auth_user", "X-Auth-User", "X_Auth_User")
	f.Fuzz(func(t *testing.T, conn1, conn2, fields string) {
		if !httpguts.ValidHeaderFieldValue(conn1) || !httpguts.ValidHeaderFieldValue(conn2) {
			return
		}
		h := http.Header{"X-Keep-Me": {"1"}}
		for _, k := range refHopByHop {
			h[textproto.CanonicalMIMEHeaderKey(k)] = []string{"hop"}
		}
		for _, k := range strings.Split(fields, ",") {
			if httpguts.ValidHeaderFieldName(k) && refASCIILower(k) != "close" {
				h[textproto.CanonicalMIMEHeaderKey(k)] = []string{"v:" + k}
			}
		}
		h["Connection"] = []string{conn1, conn2}
		before := h.Clone()
		named := refListElements([]string{conn1, conn2})
		removeHopByHop(h)
		for k, v := range before {
			lk := refASCIILower(k)
			gone := false
			for _, n := range append(named, refHopByHop...) {
				gone = gone || refASCIILower(n) == lk
			}
			if got, present := h[k]; present == gone || (present && !slices.Equal(got, v)) {
				t.Fatalf("Connection %q, %q: field %s present %v (%q), want present %v", conn1, conn2, k, present, got, !gone)
			}
		}
		if len(h) > len(before) {
			t.Fatalf("fields added: %v", h)
		}
	})
}

// refClientOnly are the forwarding fields only a client could have set,
// which a forward never passes on (the proxy writes its own).
var refClientOnly = []string{"forwarded", "x-forwarded-prefix", "x-forwarded-port", "x-real-ip", "x-forwarded-for", "x-forwarded-proto", "x-forwarded-host"}

// FuzzCopyClientFields checks the client's fields a forward copies
// against the rules read as deletions from a copy of them all: a field
// goes when it is hop-by-hop, named in ASCII case only by an element of
// a Connection line, a forwarding field, Cloudflare's (cf-* and
// True-Client-IP) on a request that did not come through a trusted
// Cloudflare peer, or a name with underscores on a host that does not
// keep them; every other field is copied as it was, and nothing is
// added.
func FuzzCopyClientFields(f *testing.F) {
	f.Add("keep-alive", "", "X-A,Cf-Ray,X-Forwarded-For,User-Agent", false)
	f.Add("X-A, close", "x-b", "X-A,X-B,X-C,True-Client-Ip,Cf-Connecting-Ip", true)
	f.Add("upgrade", "Te", "Upgrade,Te,X-Real-Ip,Forwarded,X_Auth_User,Cf-", false)
	f.Add("", "X-Forwarded-Host, Accept", "Accept,Accept-Encoding,Cookie", true)
	f.Fuzz(func(t *testing.T, conn1, conn2, fields string, trusted bool) {
		if !httpguts.ValidHeaderFieldValue(conn1) || !httpguts.ValidHeaderFieldValue(conn2) {
			return
		}
		src := http.Header{}
		for _, k := range append(append(strings.Split(fields, ","), refHopByHop...), refClientOnly...) {
			if httpguts.ValidHeaderFieldName(k) && refASCIILower(k) != "close" {
				src[textproto.CanonicalMIMEHeaderKey(k)] = []string{"v:" + k}
			}
		}
		src["Connection"] = []string{conn1, conn2}
		h := http.Header{}
		copyClientFields(h, src, &gate.Request{CloudflareTrusted: trusted}, false)
		named := append(refListElements([]string{conn1, conn2}), refHopByHop...)
		named = append(named, refClientOnly...)
		for k, v := range src {
			lk := refASCIILower(k)
			gone := strings.Contains(k, "_") ||
				!trusted && (lk == "true-client-ip" || len(lk) > 3 && strings.HasPrefix(lk, "cf-"))
			for _, n := range named {
				gone = gone || refASCIILower(n) == lk
			}
			if got, present := h[k]; present == gone || (present && !slices.Equal(got, v)) {
				t.Fatalf("Connection %q, %q, trusted %v: field %s present %v (%q), want present %v", conn1, conn2, trusted, k, present, got, !gone)
			}
		}
		if len(h) > len(src) {
			t.Fatalf("fields added: %v", h)
		}
	})
}

// FuzzContainsToken checks containsToken against RFC 9110's list rules: a
// token is found when an element of any line equals it in ASCII case only.
// Values are ASCII field values net/http accepts, tokens are tokens.
func FuzzContainsToken(f *testing.F) {
	f.Add("keep-alive, Upgrade", "", "upgrade")
	f.Add("gzip", "\ttrailers ", "trailers")
	f.Add("no-transform,,", "max-age=0", "no-transform")
	f.Add("Accept-Encoding", "*", "*")
	f.Add("h2c", "websocket", "H2C")
	f.Fuzz(func(t *testing.T, v1, v2, token string) {
		for _, v := range []string{v1, v2} {
			if !httpguts.ValidHeaderFieldValue(v) || strings.IndexFunc(v, func(r rune) bool { return r >= 0x80 }) >= 0 {
				return
			}
		}
		if !httpguts.ValidHeaderFieldName(token) {
			return
		}
		want := false
		for _, el := range refListElements([]string{v1, v2}) {
			want = want || refASCIILower(el) == refASCIILower(token)
		}
		if got := containsToken([]string{v1, v2}, token); got != want {
			t.Fatalf("containsToken(%q, %q) = %v, want %v", []string{v1, v2}, token, got, want)
		}
	})
}

// refTchar is RFC 9110's tchar, written out.
const refTchar = "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

var (
	refReservedBoth = []string{"connection", "content-encoding", "content-length", "expect", "keep-alive", "proxy-authenticate", "proxy-authorization",
		"proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "http2-settings"}
	refReservedRequest  = []string{"host", "forwarded", "x-real-ip", "x-request-id", "true-client-ip", "x-paduraksa-internal"}
	refReservedResponse = []string{"strict-transport-security", "alt-svc", "x-request-id", "location"}
)

// refCheckHeaderRule is CheckHeaderRule by the documentation of HeaderRule
// and of the reserved names, as the code and path of the first problem:
// the name is 1-64 tchars; names the proxy or the framing owns are refused
// (on requests also every X-Forwarded-* and CF-* name); Set-Cookie only
// takes add; a set or added value is 1-4096 bytes of VCHAR, space or tab,
// not starting or ending with white space; a remove takes no value.
func refCheckHeaderRule(dir Direction, r HeaderRule) string {
	const (
		badName  = "proxy.header.name.invalid name"
		reserved = "proxy.header.name.reserved name"
		badOp    = "proxy.header.op.invalid op"
		badValue = "proxy.header.value.invalid value"
		unset    = "proxy.header.value.unexpected value"
	)
	if len(r.Name) == 0 || len(r.Name) > 64 {
		return badName
	}
	for i := 0; i < len(r.Name); i++ {
		if strings.IndexByte(refTchar, r.Name[i]) < 0 {
			return badName
		}
	}
	n := refASCIILower(r.Name)
	owned := refReservedBoth
	if dir == Request {
		owned = append(owned, refReservedRequest...)
		if strings.HasPrefix(n, "x-forwarded-") || (len(n) > 3 && strings.HasPrefix(n, "cf-")) {
			return reserved
		}
	} else {
		owned = append(owned, refReservedResponse...)
	}
	for _, k := range owned {
		if n == k {
			return reserved
		}
	}
	switch r.Op {
	case HeaderSet, HeaderAdd, HeaderRemove:
	default:
		return badOp
	}
	if n == "set-cookie" && r.Op != HeaderAdd {
		return badOp
	}
	if r.Op == HeaderRemove {
		if r.Value != "" {
			return unset
		}
		return ""
	}
	v := r.Value
	if len(v) == 0 || len(v) > 4096 || strings.Trim(v, " \t") != v {
		return badValue
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; !(c >= 0x21 && c <= 0x7e) && c != ' ' && c != '\t' {
			return badValue
		}
	}
	return ""
}

// FuzzCheckHeaderRule checks CheckHeaderRule against refCheckHeaderRule:
// the same code at the same path, or both nil.
func FuzzCheckHeaderRule(f *testing.F) {
	f.Add(false, "X-Env", uint8(HeaderSet), "prod")
	f.Add(false, "x-forwarded-for", uint8(HeaderSet), "x")
	f.Add(false, "Cf-", uint8(HeaderSet), "x")
	f.Add(true, "cf-ray", uint8(HeaderSet), "x")
	f.Add(true, "Set-Cookie", uint8(HeaderAdd), "a=b")
	f.Add(true, "set-cookie", uint8(HeaderRemove), "")
	f.Add(true, "X-A", uint8(HeaderRemove), "a")
	f.Add(true, "X A", uint8(HeaderSet), "a")
	f.Add(true, "X-A", uint8(9), "a")
	f.Add(true, "X-A", uint8(HeaderSet), "a\tb")
	f.Add(true, "X-A", uint8(HeaderAdd), "\t\ta")
	f.Add(true, "X-A", uint8(HeaderSet), "a\x7f")
	f.Add(true, strings.Repeat("x", 64), uint8(HeaderSet), strings.Repeat("v", 4096))
	f.Add(true, strings.Repeat("x", 65), uint8(HeaderSet), "v")
	f.Add(true, "X-A", uint8(HeaderAdd), strings.Repeat("v", 4097))
	f.Add(true, "LOCATION", uint8(HeaderRemove), "")
	f.Fuzz(func(t *testing.T, response bool, name string, op uint8, value string) {
		dir := Request
		if response {
			dir = Response
		}
		r := HeaderRule{Name: name, Op: HeaderOp(op), Value: value}
		err, want := CheckHeaderRule(dir, r), refCheckHeaderRule(dir, r)
		got := ""
		if err != nil {
			var p *ValidationError
			if !errors.As(err, &p) {
				t.Fatalf("CheckHeaderRule(%v, %+v) = %v, not a problem", dir, r, err)
			}
			got = p.Code + " " + p.Path
		}
		if got != want {
			t.Fatalf("CheckHeaderRule(%v, %+v) = %q, want %q", dir, r, got, want)
		}
	})
}
