package gate

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http/httpguts"
)

// h2Request is a request as net/http's HTTP/2 server hands it over: the
// method, target and trailer declaration as the client sent them, which
// that server does not check.
func h2Request(method, target string, trailer http.Header) *http.Request {
	u, err := url.ParseRequestURI(target)
	if err != nil {
		panic(err)
	}
	return &http.Request{Method: method, URL: u, RequestURI: target, Host: "app.example", Header: http.Header{}, Trailer: trailer,
		Proto: "HTTP/2.0", ProtoMajor: 2, RemoteAddr: "192.0.2.10:5000"}
}

// TestUnsendableRequestsAre400: what no client toward upstreams could
// send is answered 400 by the gate and never handed to the target; the
// trace names the check. Their sendable neighbours pass.
func TestUnsendableRequestsAre400(t *testing.T) {
	target := &forwarded{}
	g := benchGate(t, target)
	for _, tc := range []struct {
		name    string
		method  string
		target  string
		trailer http.Header
		reason  string // "" when forwarded
	}{
		{"method with a space", "GET /x", "/api", nil, reasonMethod},
		{"method with a parenthesis", "GE(T", "/api", nil, reasonMethod},
		{"method with a tab", "GET\t", "/api", nil, reasonMethod},
		{"method with a trailing space", "GET ", "/api", nil, reasonMethod},
		{"method with a colon", "GET:", "/api", nil, reasonMethod},
		{"method in UTF-8", "GÉT", "/api", nil, reasonMethod},
		{"empty method", "", "/api", nil, reasonMethod},
		{"query with a space", "GET", "/api?a b", nil, reasonQuery},
		{"query with a space at the end", "GET", "/api?a=1 ", nil, reasonQuery},
		{"trailer name with a parenthesis", "POST", "/api", http.Header{"X(y)": nil}, reasonTrailer},
		{"empty trailer name", "POST", "/api", http.Header{"": nil}, reasonTrailer},
		{"trailer name with a space", "POST", "/api", http.Header{"X-Sum": nil, "X sum": nil}, reasonTrailer},

		{"extension method", "M-SEARCH", "/api", nil, ""},
		{"WebDAV method", "PROPFIND", "/api", nil, ""},
		{"method of tchar symbols", "!#$%&'*+-.^_`|~", "/api", nil, ""},
		{"escaped space in the query", "GET", "/api?a=%20b", nil, ""},
		{"query in UTF-8", "GET", "/api?q=\xc3\xa9", nil, ""},
		{"declared trailer", "POST", "/api", http.Header{"X-Checksum": nil}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var steps []Step
			g.tracer = &Tracer{OnStep: func(s Step) { steps = append(steps, s) }}
			before := target.n
			w := newNopWriter()
			g.ServeHTTP(w, h2Request(tc.method, tc.target, tc.trailer))
			if tc.reason == "" {
				assert.Equal(t, http.StatusOK, w.status)
				assert.Equal(t, before+1, target.n, "forwarded")
				return
			}
			assert.Equal(t, http.StatusBadRequest, w.status)
			assert.Equal(t, before, target.n, "never handed to the target")
			require.GreaterOrEqual(t, len(steps), 2)
			st := steps[len(steps)-2]
			assert.Equal(t, StepRequest, st.Kind)
			assert.Equal(t, "request", st.Kind.String())
			assert.Equal(t, tc.reason, st.Reason)
			assert.Equal(t, http.StatusBadRequest, st.Status)
		})
	}
}

// FuzzUnsendable checks the request check against net/http's: a method
// passes exactly when it is a token (ValidHeaderFieldName's grammar) and
// net/http's client would send it, a query exactly when it has no byte
// up to space and no DEL, a trailer name exactly when it is a token.
func FuzzUnsendable(f *testing.F) {
	f.Add("GET", "id=1", "X-Sum")
	f.Add("GET /x", "", "")
	f.Add("GE(T", "a b", "x(y)")
	f.Add("GET\t", "a\tb", "")
	f.Add("", "\x7f", " ")
	f.Add("M-SEARCH", "q=\xff", "Trailer")
	f.Fuzz(func(t *testing.T, method, query, trailer string) {
		r := &http.Request{Method: method, URL: &url.URL{Path: "/", RawQuery: query}, Header: http.Header{}}
		if trailer != "" {
			r.Trailer = http.Header{trailer: nil}
		}
		got := unsendable(r)
		methodOK := httpguts.ValidHeaderFieldName(method)
		if method != "" {
			_, err := http.NewRequest(method, "http://x/", nil)
			if (err == nil) != methodOK {
				t.Fatalf("method %q: net/http's client error %v, token %v", method, err, methodOK)
			}
		}
		queryOK := !strings.ContainsFunc(query, func(c rune) bool { return c <= ' ' || c == 0x7f })
		trailerOK := trailer == "" || httpguts.ValidHeaderFieldName(trailer)
		var want string
		switch {
		case !methodOK:
			want = reasonMethod
		case !queryOK:
			want = reasonQuery
		case !trailerOK:
			want = reasonTrailer
		}
		if got != want {
			t.Fatalf("method %q, query %q, trailer %q: %q, want %q", method, query, trailer, got, want)
		}
	})
}

// BenchmarkUnsendable is the request check of BenchmarkGateDecide's
// request alone: what it adds to every decision.
func BenchmarkUnsendable(b *testing.B) {
	r := readRequest(b, "GET /api/users?id=1 HTTP/1.1\r\nHost: App.Example:8080\r\nUser-Agent: curl/8\r\nAccept: */*\r\n\r\n", "192.0.2.10:5000")
	b.ReportAllocs()
	for b.Loop() {
		if unsendable(r) != "" {
			b.Fatal("refused")
		}
	}
}
