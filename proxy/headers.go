package proxy

import (
	"net/http"
	"net/textproto"
	"strings"
)

// hopHeaders are the hop-by-hop fields of RFC 9110 section 7.6.1 and the
// ones proxies traditionally treat so; they never cross the proxy.
var hopHeaders = [...]string{
	"Connection",
	"Proxy-Connection",
	"Keep-Alive",
	"Proxy-Authenticate",
	"Proxy-Authorization",
	"Te",
	"Trailer",
	"Transfer-Encoding",
	"Upgrade",
	"Http2-Settings",
}

// removeHopByHop deletes the hop-by-hop fields from h, including every field
// named in any Connection value (all of them, even empty ones).
func removeHopByHop(h http.Header) {
	for _, v := range h["Connection"] {
		for len(v) > 0 {
			var tok string
			tok, v, _ = strings.Cut(v, ",")
			if tok = textproto.TrimString(tok); tok != "" {
				delete(h, textproto.CanonicalMIMEHeaderKey(tok))
			}
		}
	}
	for _, k := range hopHeaders {
		delete(h, k)
	}
}

// clientOnlyHeaders only a client could have set: removed before the
// proxy writes its own forwarding headers.
var clientOnlyHeaders = [...]string{"Forwarded", "X-Forwarded-Prefix", "X-Forwarded-Port", "True-Client-Ip", "X-Real-Ip", "X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host"}

// removeCloudflare deletes every cf-* field.
func removeCloudflare(h http.Header) {
	for k := range h {
		if len(k) > 3 && (k[0] == 'C' || k[0] == 'c') && (k[1] == 'f' || k[1] == 'F') && k[2] == '-' {
			delete(h, k)
		}
	}
}

var (
	teTrailers  = []string{"trailers"}[:1:1]
	schemeHTTP  = []string{"http"}[:1:1]
	schemeHTTPS = []string{"https"}[:1:1]
	emptyUA     = []string(nil)
)

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
