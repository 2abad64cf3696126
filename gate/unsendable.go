package gate

import "net/http"

// Requests no upstream client could send.
//
// net/http's HTTP/2 server takes any non-empty :method, and all three
// servers (HTTP/1.1, HTTP/2, quic-go's HTTP/3) take the names a Trailer
// field declares without checking them; HTTP/2 and HTTP/3 take a raw space
// in the query. The clients toward upstreams refuse the first two before a
// byte is sent (net/http's Transport checks every header and trailer
// name, and the method too but over a pooled HTTP/2 connection over TLS,
// which sends it as it is), and an HTTP/1.1 request line cannot carry the
// third. A forwarder that tried would blame the destination for the
// client's request, a handful of which would take it out of rotation, or
// hand the upstream a request line no HTTP/1.1 client could have sent. The gate refuses them with 400 before any
// policy runs. What the servers refuse themselves (field names and values,
// control characters in the target, an empty method) and what the host
// table already refuses (a Host that is no host name) is not read again;
// the proxy package's unsendable.go lists every refusal of its clients
// and where each is closed.

// Reasons of the request check, for the trace.
const (
	reasonMethod  = "method is not a token (RFC 9110 section 9.1)"
	reasonQuery   = "query has a space or a control character"
	reasonTrailer = "a declared trailer name is not a token"
)

// unsendable returns why r cannot be forwarded as received, or "": its
// method is not an RFC 9110 token, its query holds a raw space or a
// control character, or a trailer it declares has a name that is not a
// token. It allocates nothing and reads the trailer names only when there
// are some.
func unsendable(r *http.Request) string {
	switch r.Method {
	case http.MethodGet, http.MethodPost, http.MethodHead, http.MethodPut, http.MethodDelete, http.MethodOptions, http.MethodPatch:
	default:
		if !isToken(r.Method) {
			return reasonMethod
		}
	}
	if u := r.URL; u != nil {
		q := u.RawQuery
		for i := 0; i < len(q); i++ {
			if c := q[i]; c <= ' ' || c == 0x7f {
				return reasonQuery
			}
		}
	}
	if len(r.Trailer) > 0 {
		for k := range r.Trailer {
			if !isToken(k) {
				return reasonTrailer
			}
		}
	}
	return ""
}

// isToken reports whether s is a non-empty RFC 9110 token: the grammar of
// a method and of a field name.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !tchar[s[i]] {
			return false
		}
	}
	return true
}

// tchar holds the bytes of RFC 9110's tchar: letters, digits and
// "!#$%&'*+-.^_`|~".
var tchar = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()
