package main

// The security suite: each test attacks the real daemon over raw TCP on
// loopback, as a client (or a misbehaving upstream) would, with several
// spellings per class, and checks what the upstream received as well as
// what the client got.

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/paduraksa/paduraksa/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// noLoopback denies every loopback client: the suite's clients.
var noLoopback = config.AccessList{ID: "no-loopback", Deny: []string{"127.0.0.0/8", "::1/128"}}

// pathSpellings are spellings of "/{n}/" that some upstream resolves to
// it, or below it, or that a gateway could have matched against another
// route: {n} is the guarded name, {N} in upper case, {T} capitalised, {e}
// with its first letter percent-encoded.
var pathSpellings = []string{
	// Dot segments, Tomcat-style ";" after them, and escaped dots.
	"/{n}/..;/", "/{n}/..;x=1/", "/{n}/.;/", "/.;/{n}/", "/x/..;/{n}/",
	"/{n}/%2e%2e/", "/{n}/%2E%2E/", "/%2e%2e/{n}/", "/x/%2e%2e/{n}/", "/x/.%2e/{n}/", "/%2e/{n}/",
	"/x/../{n}/", "/./{n}/", "/{n}/./", "/{n}/../{n}/", "/{n}/...", "/{n}/..%20/",
	// Case, unreserved escapes and parameters: the view is /{n}/.
	"/{e}/", "/{N}/", "/{T}/", "/{n};x/", "/{n};x=1/y", "/{N};/",
	// Empty segments (nginx merges them).
	"//{n}/", "/x//{n}/", "///{n}",
	// Escaped and raw separators.
	"/{n}%2F", "/{n}%2fx", "/{n}%2f..%2f", "/x%2f..%2f{n}/", "/%5C{n}/", "/%5c{n}%5c", `/x\..\{n}\`, `/{n}\`,
	// NUL, fragments, query marks and semicolons, raw or escaped.
	"/{n}%00", "/{n}%00/", "/{n}#x", "/x#/../{n}/", "/{n}%23", "/{n}%3F", "/{n}%3f/", "/{n}%3B/", "/x/..%3B/{n}/",
	// Double encoding and overlong UTF-8.
	"/%252e%252e/{n}/", "/x/%252e%252e/{n}/", "/{n}%252F", "/%25{e}/",
	"/%c0%ae%c0%ae/{n}/", "/x/%c0%ae%c0%ae/{n}/", "/%c0%af{n}/", "/%C1%9C{n}/",
	// Overlong UTF-8 in three bytes: no upstream of today decodes it, so
	// the gate forwards it; the upstream must not serve /{n}/.
	"/x/%e0%80%ae%e0%80%ae/{n}/",
}

// spell fills a spelling in for name.
func spell(s, name string) string {
	return strings.NewReplacer(
		"{n}", name,
		"{N}", strings.ToUpper(name),
		"{T}", strings.ToUpper(name[:1])+name[1:],
		"{e}", fmt.Sprintf("%%%02x", name[0])+name[1:],
	).Replace(s)
}

// TestSecurityPath: the path the gate decides on is the path it forwards.
// /secret is guarded by an access list on its route and /admin by a rule
// set of the host, both beside the open route /, on one ServeMux upstream
// that serves /secret/ and /admin/ itself: every spelling is refused, or
// reaches the upstream as a path that neither the ServeMux nor the other
// readings (decoded and cleaned, Tomcat's ";") resolve under a guarded
// prefix. Route body limits and the per-route opt-outs hold the same way.
func TestSecurityPath(t *testing.T) {
	t.Parallel()
	up := startRecorder(t, map[string]string{"/secret/": "secret", "/admin/": "admin", "/": "open"})
	d := startWithDoc(t, config.Document{
		Upstreams:   []config.Upstream{upstreamOf("app", up.addr)},
		AccessLists: []config.AccessList{noLoopback},
		RuleSets:    []config.RuleSet{{ID: "no-admin", Rules: []config.Rule{{PathPrefix: "/admin"}}}},
		Hosts: []config.Host{{
			Names:    []string{"app.test"},
			Policies: []string{"no-admin"},
			Routes: []config.Route{
				{Path: "/", Upstream: "app"},
				{Path: "/secret", Upstream: "app", Policies: []string{"no-loopback"}},
				{Path: "/upload", Upstream: "app", MaxBodyBytes: 16},
				{Path: "/files", Upstream: "app", AllowInPath: []string{"encodedSlash"}},
			},
		}},
	})

	t.Run("upstream alone serves the attack", func(t *testing.T) {
		// The spelling is an attack on this upstream: without the gate,
		// Go's ServeMux serves /secret/..;/ as /secret/.
		r := roundTrip(t, up.addr, get("app.test", "/secret/..;/"))
		assert.Equal(t, "secret", r.body)
		up.take()
	})
	t.Run("guards hold for the plain spelling", func(t *testing.T) {
		for _, p := range []string{"/secret/", "/secret", "/admin/", "/admin/x"} {
			assert.Equal(t, http.StatusForbidden, roundTrip(t, d.addr, get("app.test", p)).status, p)
		}
		r := roundTrip(t, d.addr, get("app.test", "/public/x"))
		assert.Equal(t, "open", r.body)
		require.Len(t, up.take(), 1)
	})

	for _, name := range []string{"secret", "admin"} {
		for _, s := range pathSpellings {
			target := spell(s, name)
			t.Run(target, func(t *testing.T) { checkPathAttack(t, d, up, "app.test", target) })
		}
	}
	for _, target := range []string{
		"http://app.test/secret/..;/", "http://app.test/%73ecret/", "HTTP://APP.TEST/SECRET/",
		"http://app.test/x/%2e%2e/admin/", "http://other.test@app.test/secret/..;/",
	} {
		// Absolute form: the path comes from the target, the host too.
		t.Run(target, func(t *testing.T) { checkPathAttack(t, d, up, "app.test", target) })
	}

	t.Run("allowInPath", func(t *testing.T) {
		// encodedSlash on /files: %2F is forwarded as it was sent, never
		// decoded; unreserved escapes are decoded and hex is upper case.
		for target, want := range map[string]string{
			"/files/a%2Fb":       "/files/a%2Fb",
			"/files/a%2Fb%2Fc":   "/files/a%2Fb%2Fc",
			"/files/a%2fb":       "/files/a%2Fb",
			"/files/%61%2Fb?q=1": "/files/a%2Fb?q=1",
			"/files/..%2Fsecret": "/files/..%2Fsecret",
		} {
			t.Run(target, func(t *testing.T) {
				r := roundTrip(t, d.addr, get("app.test", target))
				require.Equal(t, http.StatusOK, r.status)
				got := up.take()
				require.Len(t, got, 1)
				assert.Equal(t, want, got[0].requestURI)
				assert.Equal(t, "open", got[0].handler)
			})
		}
		// The opt-out is the route's only: elsewhere, and for the other
		// spellings, the default refusals hold.
		for _, target := range []string{
			"/elsewhere/a%2Fb", "/a%2Fb", "/files/a%2Fb%3Fc", "/files/a%5Cb", "/files/a%252Fb",
			"/files/%2e%2e%2F", "/files//a", "/files/a/../b",
		} {
			t.Run(target, func(t *testing.T) {
				assert.Equal(t, http.StatusBadRequest, roundTrip(t, d.addr, get("app.test", target)).status)
				assert.Empty(t, up.take())
			})
		}
	})
	t.Run("body limit", func(t *testing.T) {
		body := strings.Repeat("b", 64) // over /upload's 16 bytes
		post := func(target string) string {
			return "POST " + target + " HTTP/1.1\r\nHost: app.test\r\nContent-Length: 64\r\nConnection: close\r\n\r\n" + body
		}
		// The open route takes the body whole, so a dodged limit shows.
		r := roundTrip(t, d.addr, post("/elsewhere"))
		require.Equal(t, http.StatusOK, r.status)
		require.Equal(t, 64, up.take()[0].body)

		for _, target := range []string{
			"/upload/", "/upload/..;/", "/UPLOAD", "/%75pload", "/%55PLOAD/x", "/Upload;x/", "/upload;/",
			"/upload%2F", "/x/../upload", "//upload", "/upload/%2e%2e/", "http://app.test/UPLOAD",
		} {
			t.Run(target, func(t *testing.T) {
				r := roundTrip(t, d.addr, post(target))
				assert.Contains(t, []int{http.StatusBadRequest, http.StatusRequestEntityTooLarge}, r.status)
				assert.Empty(t, up.take(), "the body reached the upstream")
			})
		}
		for _, target := range []string{"/UPLOAD/x", "/%75pload;x"} {
			t.Run(target+" chunked", func(t *testing.T) {
				r := roundTrip(t, d.addr, "POST "+target+" HTTP/1.1\r\nHost: app.test\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"+
					"20\r\n"+body[:32]+"\r\n20\r\n"+body[32:]+"\r\n0\r\n\r\n")
				// Had the limit been dodged, the open route's upstream
				// would have read the body whole and answered 200.
				assert.Equal(t, http.StatusRequestEntityTooLarge, r.status)
				// What the upstream read before the cut may still be
				// arriving: these run last, so it cannot reach another
				// subtest's take.
				for _, s := range up.take() {
					assert.LessOrEqual(t, s.body, 16, "the upstream got more than the limit")
				}
			})
		}
	})

}

// checkPathAttack sends GET target to host and checks that the request
// was refused (400, 403) without reaching the upstream, or reached it as
// a path no reading puts under /secret or /admin.
func checkPathAttack(t *testing.T, d *daemon, up *recorder, host, target string) {
	t.Helper()
	r := roundTrip(t, d.addr, get(host, target))
	got := up.take()
	if len(got) == 0 {
		assert.Contains(t, []int{http.StatusBadRequest, http.StatusForbidden}, r.status, "answer %d %q", r.status, r.body)
		return
	}
	for _, s := range got {
		assert.NotContains(t, []string{"secret", "admin"}, s.handler, "the ServeMux served %q as a guarded path", s.requestURI)
		for _, p := range readings(s.requestURI) {
			assert.False(t, under(p, "/secret") || under(p, "/admin"), "forwarded %q reads as %q", s.requestURI, p)
		}
	}
	assert.NotEqual(t, "secret", r.body)
	assert.NotEqual(t, "admin", r.body)
}

// TestSecurityHosts: a guarded exact host is found in every spelling of
// its name beside a wildcard catch-all, in a table of more than 100 hosts
// (where some gateways switch to another matcher). Each spelling reaches
// the guard (403) or is refused (400, or the unknown-host 404); none
// reaches the catch-all's upstream.
func TestSecurityHosts(t *testing.T) {
	t.Parallel()
	up := startRecorder(t, map[string]string{"/": "open"})
	doc := config.Document{
		Upstreams:   []config.Upstream{upstreamOf("app", up.addr)},
		AccessLists: []config.AccessList{noLoopback},
		Hosts: []config.Host{
			{Names: []string{"*.test"}, Routes: []config.Route{{Upstream: "app"}}},
			{Names: []string{"secret.test"}, AccessList: "no-loopback", Routes: []config.Route{{Upstream: "app"}}},
		},
	}
	for i := range 150 {
		doc.Hosts = append(doc.Hosts, config.Host{
			Names:    []string{fmt.Sprintf("h%03d.test", i)},
			Policies: []string{"no-loopback"},
			Routes:   []config.Route{{Upstream: "app"}},
		})
	}
	d := startWithDoc(t, doc)

	t.Run("catch-all serves other names", func(t *testing.T) {
		// So a spelling that fell through would show.
		for _, h := range []string{"www.test", "WWW.TEST.", "h150.test", "x.secret.test"} {
			r := roundTrip(t, d.addr, get(h, "/"))
			assert.Equal(t, "open", r.body, h)
			got := up.take()
			require.Len(t, got, 1)
			assert.Equal(t, h, got[0].host)
		}
	})

	const guard, refused = "guard", "refused"
	spellings := []struct{ host, want string }{
		{"{n}", guard}, {"{N}", guard}, {"{T}", guard}, {"{n}.", guard}, {"{N}.", guard},
		{"{n}:80", guard}, {"{n}:8080", guard}, {"{N}.:8080", guard}, {"{n}:", guard}, {"{n}:0080", guard},
		{"{n}..", refused}, {"{n}:80:80", refused}, {"[{n}]", refused}, {"[{n}]:80", refused},
		{"{n}/x", refused}, {"{n}%00", refused}, {"{n}%2e", refused}, {"{n};x", refused},
		{"{n}@www.test", refused}, {"www.test@{n}", refused}, {"{n} www.test", refused},
		// A list: frameworks that take the first or the last element of
		// X-Forwarded-Host (Express, Rails) would read the guarded name.
		{"{n},www.test", refused}, {"www.test,{n}", refused}, {"{N}.,www.test", refused},
		// Escaped, and bytes no host name has (UTF-8, an overlong "."):
		// none is folded into the guarded name or passed to the catch-all.
		{"{e}", refused}, {"{n}\x80", refused}, {"{N}\xff", refused}, {"{n}\xc0\xae", refused}, {"\xc5\xbf{n}", refused},
	}
	for _, name := range []string{"secret.test", "h000.test", "h077.test", "h149.test"} {
		for _, s := range spellings {
			host := spell(s.host, name)
			t.Run("Host: "+host, func(t *testing.T) { checkHostAttack(t, d, up, get(host, "/"), s.want == guard) })
		}
		for _, s := range []string{"{n}", "{N}.", "{n}:8080"} {
			target := "http://" + spell(s, name) + "/"
			// Absolute form names the host; the Host header is ignored.
			t.Run("GET "+target+" Host: www.test", func(t *testing.T) {
				checkHostAttack(t, d, up, get("www.test", target), true)
			})
		}
	}
	for _, host := range []string{"\xc5\xbfecret.test", "SECRET.TES\xe2\x84\xaa", "secret\xe3\x80\x82test"} {
		// U+017F and U+212A fold to "s" and "k" under Unicode case
		// folding; U+3002 is a dot to IDNA.
		t.Run(fmt.Sprintf("Host: %q", host), func(t *testing.T) { checkHostAttack(t, d, up, get(host, "/"), false) })
	}
	t.Run("Host: secret.test twice", func(t *testing.T) {
		checkHostAttack(t, d, up, "GET / HTTP/1.1\r\nHost: www.test\r\nHost: secret.test\r\n\r\n", false)
	})
	t.Run("absolute form over a guarded Host", func(t *testing.T) {
		// The target wins: the request is for www.test, and its upstream
		// is told so, never secret.test.
		r := roundTrip(t, d.addr, get("secret.test", "http://www.test/"))
		assert.Equal(t, "open", r.body)
		got := up.take()
		require.Len(t, got, 1)
		assert.Equal(t, "www.test", got[0].host)
		assert.Equal(t, []string{"www.test"}, got[0].header["X-Forwarded-Host"])
	})
	t.Run("X-Forwarded-Host", func(t *testing.T) {
		r := roundTrip(t, d.addr, "GET / HTTP/1.1\r\nHost: www.test\r\nX-Forwarded-Host: secret.test\r\nX-Host: secret.test\r\nConnection: close\r\n\r\n")
		assert.Equal(t, "open", r.body)
		got := up.take()
		require.Len(t, got, 1)
		assert.Equal(t, []string{"www.test"}, got[0].header["X-Forwarded-Host"])
	})
}

// checkHostAttack sends raw and checks that it got the guard's 403 (or,
// when !guarded, a refusal: 400 or 404) and reached no upstream.
func checkHostAttack(t *testing.T, d *daemon, up *recorder, raw string, guarded bool) {
	t.Helper()
	r := roundTrip(t, d.addr, raw)
	if guarded {
		assert.Equal(t, http.StatusForbidden, r.status, "answer %q", r.body)
	} else {
		assert.Contains(t, []int{http.StatusBadRequest, http.StatusNotFound}, r.status, "answer %d %q", r.status, r.body)
	}
	assert.Empty(t, up.take(), "reached the catch-all's upstream")
}

// identityCase is one request to a host behind a forward-auth.
type identityCase struct {
	name, host string
	auth       string // the Authorization value; empty: none
	headers    string // more header lines, each ending in CRLF
	trailers   string // when set, the body is chunked and ends with these trailer lines, all declared in Trailer
	status     int
	user       []string // the X-Auth-User the upstream must see; nil: none
}

func (c identityCase) request() string {
	b := "POST / HTTP/1.1\r\nHost: " + c.host + "\r\nConnection: close\r\n"
	if c.auth != "" {
		b += "Authorization: " + c.auth + "\r\n"
	}
	b += c.headers
	if c.trailers == "" {
		return b + "Content-Length: 3\r\n\r\nabc"
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSuffix(c.trailers, "\r\n"), "\r\n") {
		name, _, _ := strings.Cut(line, ":")
		names = append(names, name)
	}
	return b + "Transfer-Encoding: chunked\r\nTrailer: " + strings.Join(names, ", ") + "\r\n\r\n3\r\nabc\r\n0\r\n" + c.trailers + "\r\n"
}

// TestSecurityIdentity: the upstream sees exactly the identity the
// forward-auth service gave, or none, whatever the client sends: the
// identity header itself, its underscore spellings (which CGI, WSGI, Rack
// and PHP read as the same variable), a Connection header naming it, a
// request trailer, and the same for the forwarding headers; and on hosts
// whose forward-auth is off or shadowed. No underscore header reaches the
// upstream, except unrelated ones on a host that keeps them.
func TestSecurityIdentity(t *testing.T) {
	t.Parallel()
	auth := serve(t, &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer good" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("X-Auth-User", "alice")
	})})
	up := startRecorder(t, map[string]string{"/": "open"})
	forwardAuth := func(id, mode string) config.ForwardAuth {
		return config.ForwardAuth{ID: id, Mode: mode, URL: "http://" + auth + "/check",
			RequestHeaders: []string{"Authorization"}, IdentityHeaders: []string{"X-Auth-User"}}
	}
	host := func(name, policy string) config.Host {
		return config.Host{Names: []string{name}, Policies: []string{policy}, Routes: []config.Route{{Upstream: "app"}}}
	}
	keep := host("keep.test", "auth")
	keep.KeepUnderscoreHeaders = true
	d := startWithDoc(t, config.Document{
		Upstreams:    []config.Upstream{upstreamOf("app", up.addr)},
		ForwardAuths: []config.ForwardAuth{forwardAuth("auth", ""), forwardAuth("auth-off", "off"), forwardAuth("auth-shadow", "shadow")},
		Hosts:        []config.Host{host("id.test", "auth"), host("off.test", "auth-off"), host("shadow.test", "auth-shadow"), keep},
	})

	const good, bad = "Bearer good", "Bearer bad"
	alice := []string{"alice"}
	cases := []identityCase{
		{name: "no forgery", host: "id.test", auth: good, user: alice},
		{name: "X-Auth-User", host: "id.test", auth: good, headers: "X-Auth-User: admin\r\n", user: alice},
		{name: "X-AUTH-USER", host: "id.test", auth: good, headers: "X-AUTH-USER: admin\r\n", user: alice},
		{name: "X-Auth-User twice", host: "id.test", auth: good, headers: "X-Auth-User: admin\r\nx-auth-user: root\r\n", user: alice},
		{name: "X_Auth_User", host: "id.test", auth: good, headers: "X_Auth_User: admin\r\n", user: alice},
		{name: "x_auth_user", host: "id.test", auth: good, headers: "x_auth_user: admin\r\n", user: alice},
		{name: "X_AUTH_USER", host: "id.test", auth: good, headers: "X_AUTH_USER: admin\r\n", user: alice},
		{name: "X-Auth_User", host: "id.test", auth: good, headers: "X-Auth_User: admin\r\n", user: alice},
		{name: "Connection: X-Auth-User", host: "id.test", auth: good, headers: "Connection: X-Auth-User\r\n", user: alice},
		{name: "Connection: keep-alive, x-auth-user", host: "id.test", auth: good, headers: "Connection: keep-alive, x-auth-user\r\nX-Auth-User: admin\r\n", user: alice},
		{name: "Connection: X-Forwarded-For, X-Real-Ip", host: "id.test", auth: good, headers: "Connection: X-Forwarded-For, X-Real-Ip\r\n", user: alice},
		{name: "trailer X-Auth-User", host: "id.test", auth: good, trailers: "X-Auth-User: admin\r\nX-Checksum: 42\r\n", user: alice},
		{name: "trailer X_Auth_User", host: "id.test", auth: good, trailers: "X_Auth_User: admin\r\nX-Checksum: 42\r\n", user: alice},
		{name: "trailer X-Forwarded-For", host: "id.test", auth: good, trailers: "X-Forwarded-For: 203.0.113.9\r\nX-Checksum: 42\r\n", user: alice},
		{name: "trailer X-Real-Ip", host: "id.test", auth: good, trailers: "X-Real-Ip: 203.0.113.9\r\nX-Checksum: 42\r\n", user: alice},
		{name: "X-Forwarded-For", host: "id.test", auth: good, headers: "X-Forwarded-For: 203.0.113.9\r\nX-Real-IP: 203.0.113.9\r\n", user: alice},
		{name: "X_Forwarded_For", host: "id.test", auth: good, headers: "X_Forwarded_For: 203.0.113.9\r\n", user: alice},
		{name: "X_Real_IP", host: "id.test", auth: good, headers: "X_Real_IP: 203.0.113.9\r\n", user: alice},
		{name: "CF_Connecting_IP", host: "id.test", auth: good, headers: "CF_Connecting_IP: 203.0.113.9\r\nCF-Connecting-IP: 203.0.113.9\r\nTrue-Client-IP: 203.0.113.9\r\n", user: alice},
		{name: "no credentials", host: "id.test", headers: "X-Auth-User: admin\r\n", status: http.StatusUnauthorized},
		{name: "bad credentials", host: "id.test", auth: bad, headers: "X_Auth_User: admin\r\n", status: http.StatusUnauthorized},

		// A forward-auth that is off strips the identity all the same.
		{name: "off: X-Auth-User", host: "off.test", auth: good, headers: "X-Auth-User: admin\r\n"},
		{name: "off: X_Auth_User", host: "off.test", headers: "X_Auth_User: admin\r\n"},
		{name: "off: Connection", host: "off.test", headers: "Connection: X-Auth-User\r\nX-Auth-User: admin\r\n"},
		{name: "off: trailer", host: "off.test", trailers: "X-Auth-User: admin\r\nX-Checksum: 42\r\n"},
		// A shadowed one lets a refused request through, without identity.
		{name: "shadow: bad credentials", host: "shadow.test", auth: bad, headers: "X-Auth-User: admin\r\n"},
		{name: "shadow: x_auth_user", host: "shadow.test", headers: "x_auth_user: admin\r\n"},
		{name: "shadow: good credentials", host: "shadow.test", auth: good, headers: "X-Auth-User: admin\r\n", user: alice},
		// keepUnderscoreHeaders keeps only names the gateway does not own.
		{name: "keep: owned underscore names", host: "keep.test", auth: good, user: alice, headers: "X_Custom: 1\r\n" +
			"X_Auth_User: admin\r\nx_forwarded_for: 203.0.113.9\r\nX_Real_IP: 203.0.113.9\r\n" +
			"CF_Connecting_IP: 203.0.113.9\r\nX_Forwarded_Host: secret.test\r\nX_Request_Id: forged\r\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := roundTrip(t, d.addr, c.request())
			got := up.take()
			if c.status != 0 {
				assert.Equal(t, c.status, r.status)
				assert.Empty(t, got, "a refused request reached the upstream")
				return
			}
			require.Equal(t, http.StatusOK, r.status, "answer %q", r.body)
			require.Len(t, got, 1)
			s := got[0]
			assert.Equal(t, c.user, s.header["X-Auth-User"], "identity")
			assert.Equal(t, []string{"127.0.0.1"}, s.header["X-Forwarded-For"])
			assert.Equal(t, []string{"127.0.0.1"}, s.header["X-Real-Ip"])
			assert.Equal(t, []string{c.host}, s.header["X-Forwarded-Host"])
			for _, k := range []string{"Cf-Connecting-Ip", "True-Client-Ip", "X-Request-Id"} {
				assert.NotContains(t, s.header, k)
			}
			for k, v := range s.header {
				if strings.Contains(k, "_") {
					assert.True(t, c.host == "keep.test" && strings.EqualFold(k, "X_Custom") && v[0] == "1", "underscore header %s: %q reached the upstream", k, v)
				}
			}
			if c.host == "keep.test" {
				assert.Equal(t, []string{"1"}, s.header["X_custom"], "an unrelated underscore name is kept")
			}
			if c.trailers != "" {
				require.NoError(t, s.bodyErr)
				// The trailers are forwarded: the owned ones are not.
				assert.Equal(t, http.Header{"X-Checksum": {"42"}}, s.trailer)
			}
		})
	}
}
