package gate

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/net/http/httpguts"
)

// FuzzBasicAuth checks how an access list reads an Authorization value
// against net/http's Request.BasicAuth. The two differ where RFC 9110
// allows more than net/http takes: one or more spaces after the scheme
// (net/http takes exactly one). The scheme compares in ASCII case only, and
// credentials longer than 512 bytes are refused. Values are ones net/http
// lets through as a field value.
func FuzzBasicAuth(f *testing.F) {
	// Credentials of 512 and 513 bytes, for users whose names are that long.
	long512 := base64.StdEncoding.EncodeToString([]byte(longUser512 + ":p:w"))
	long513 := base64.StdEncoding.EncodeToString([]byte(longUser513 + ":p:w"))
	for _, s := range []string{"Basic YW5uOnA6dw==", "basic YW5uOnA6dw==", "BASIC   YW5uOnA6dw==", "Basic\tYW5uOnA6dw==", "Basic YW5uOnA6dw", "Basic YW5uOnA6dx==",
		"Basic YW5u", "Basic Ym9iOnA6dw==", "Basic", "Basic ", "Bearer YW5uOnA6dw==", "Basic !!!!", "Ba\u017fic YW5uOnA6dw==", "Basic " + long512, "Basic " + long513} {
		f.Add(s)
	}
	hash := bcryptHash(f, "p:w")
	al, err := NewAccessList(AccessListConfig{ID: "u", Users: []BasicUser{{Name: "ann", Hash: hash}, {Name: longUser512, Hash: hash}, {Name: longUser513, Hash: hash}}})
	if err != nil {
		f.Fatal(err)
	}
	al.dummy = []byte(bcryptHash(f, "unused")) // unknown users at the cheapest cost, for speed
	f.Fuzz(func(t *testing.T, v string) {
		if !httpguts.ValidHeaderFieldValue(v) {
			return
		}
		r := &http.Request{Header: http.Header{"Authorization": {v}}}
		if got, want := al.Evaluate(r, &Request{}).Reason, refBasicAuth(v); got != want {
			t.Fatalf("Authorization %q: %q, want %q", v, got, want)
		}
	})
}

var (
	longUser512 = strings.Repeat("u", 512-len(":p:w"))
	longUser513 = longUser512 + "u"
)

func refBasicAuth(v string) string {
	scheme, rest, found := strings.Cut(v, " ")
	if !found || asciiFold.Replace(scheme) != "basic" {
		return "credentials required"
	}
	r := &http.Request{Header: http.Header{"Authorization": {"Basic " + strings.TrimLeft(rest, " ")}}}
	user, password, ok := r.BasicAuth()
	if ok && len(user)+1+len(password) <= 512 && (user == "ann" || user == longUser512 || user == longUser513) && password == "p:w" {
		return "authenticated"
	}
	return "wrong credentials"
}

// TestAccessListSeesTheForwardedClient fails if a policy decides on the
// trusted proxy's address once X-Forwarded-For named the client: the
// proxy (10.0.0.1) is in the allow list, the clients behind it are
// not, or are denied; a pooled Request served the proxy's own request
// just before, so a stale conversion of the address would show.
func TestAccessListSeesTheForwardedClient(t *testing.T) {
	al, err := NewAccessList(AccessListConfig{ID: "office", Allow: mustPrefix("10.0.0.0/8", "192.0.2.0/24"), Deny: mustPrefix("192.0.2.66/32")})
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(Config{
		TrustedProxies: mustPrefix("10.0.0.1/32"),
		Hosts:          []Host{{Names: []string{"app.example"}, Policies: []PolicyUse{{Policy: al}}, Routes: []Route{{Prefix: "/", Target: &forwarded{}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	w := newNopWriter()
	for _, tt := range []struct {
		xff    string
		status int
	}{
		{"", http.StatusOK},                   // the proxy itself
		{"203.0.113.9", http.StatusForbidden}, // not in the allow list
		{"", http.StatusOK},
		{"192.0.2.66", http.StatusForbidden}, // denied
		{"192.0.2.7", http.StatusOK},
		{"2001:db8::1", http.StatusForbidden},
	} {
		raw := "GET / HTTP/1.1\r\nHost: app.example\r\n"
		if tt.xff != "" {
			raw += "X-Forwarded-For: " + tt.xff + "\r\n"
		}
		w.reset()
		g.ServeHTTP(w, readRequest(t, raw+"\r\n", "10.0.0.1:5000"))
		if w.status != tt.status {
			t.Errorf("X-Forwarded-For %q: status %d, want %d", tt.xff, w.status, tt.status)
		}
	}
}
