package gate

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawExchange sends raw request bytes on a new connection and reads one
// response, with a deadline.
func rawExchange(t *testing.T, addr, raw string) *http.Response {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = io.WriteString(c, raw)
	require.NoError(t, err)
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	res.Body.Close()
	return res
}

// TestHostSpellingsAtScale: with more hosts than any small-table fast
// path holds and a wildcard catch-all beside the guarded host, every
// spelling of the guarded name reaches its guard.
func TestHostSpellingsAtScale(t *testing.T) {
	deny, err := NewAccessList(AccessListConfig{ID: "deny-all", Deny: mustPrefix("0.0.0.0/0", "::/0")})
	require.NoError(t, err)
	hosts := []Host{
		{Names: []string{"secret.test"}, Policies: []PolicyUse{{Policy: deny}}, Routes: []Route{{ID: "secret", Prefix: "/", Target: echoTarget}}},
		{Names: []string{"*.test"}, Routes: []Route{{ID: "catch-all", Prefix: "/", Target: echoTarget}}},
	}
	for i := range 150 {
		hosts = append(hosts, Host{Names: []string{fmt.Sprintf("h%d.example", i), fmt.Sprintf("*.h%d.example", i)},
			Routes: []Route{{ID: "other", Prefix: "/", Target: echoTarget}}})
	}
	g, err := New(Config{Hosts: hosts})
	require.NoError(t, err)
	addr := serve(t, g)
	for _, tc := range []struct{ name, request string }{
		{"exact", "GET / HTTP/1.1\r\nHost: secret.test\r\n\r\n"},
		{"upper case", "GET / HTTP/1.1\r\nHost: SECRET.TEST\r\n\r\n"},
		{"mixed case", "GET / HTTP/1.1\r\nHost: SeCrEt.TeSt\r\n\r\n"},
		{"trailing dot", "GET / HTTP/1.1\r\nHost: secret.test.\r\n\r\n"},
		{"port", "GET / HTTP/1.1\r\nHost: secret.test:8080\r\n\r\n"},
		{"upper case, dot and port", "GET / HTTP/1.1\r\nHost: SECRET.test.:80\r\n\r\n"},
		{"absolute form over another Host", "GET http://secret.test/ HTTP/1.1\r\nHost: open.test\r\n\r\n"},
		{"absolute form in upper case", "GET http://SECRET.TEST:80/ HTTP/1.1\r\nHost: open.test\r\n\r\n"},
		{"HTTP/1.0 without Host", "GET http://secret.test/ HTTP/1.0\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := rawExchange(t, addr, tc.request)
			assert.Equal(t, http.StatusForbidden, res.StatusCode, "route %q", res.Header.Get("X-Route"))
		})
	}
	for _, tc := range []struct{ name, request string }{
		{"double trailing dot", "GET / HTTP/1.1\r\nHost: secret.test..\r\n\r\n"},
		{"empty label", "GET / HTTP/1.1\r\nHost: secret..test\r\n\r\n"},
		{"leading dot", "GET / HTTP/1.1\r\nHost: .secret.test\r\n\r\n"},
		{"a list", "GET / HTTP/1.1\r\nHost: secret.test,www.test\r\n\r\n"},
		{"a list the other way", "GET / HTTP/1.1\r\nHost: www.test,SECRET.TEST.\r\n\r\n"},
		{"sub-delims", "GET / HTTP/1.1\r\nHost: secret.test;x.test\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := rawExchange(t, addr, tc.request)
			assert.NotEqual(t, "catch-all", res.Header.Get("X-Route"), "a second spelling of a name must not reach the catch-all")
		})
	}
	res := rawExchange(t, addr, "GET / HTTP/1.1\r\nHost: open.TEST\r\n\r\n")
	assert.Equal(t, "catch-all", res.Header.Get("X-Route"), "the catch-all serves other names")
}

// TestPathSpellingsThroughTheGate drives the gate over real sockets with
// spellings of a guarded prefix: each is refused, or reaches the guard.
func TestPathSpellingsThroughTheGate(t *testing.T) {
	deny, err := NewAccessList(AccessListConfig{ID: "deny-all", Deny: mustPrefix("0.0.0.0/0", "::/0")})
	require.NoError(t, err)
	waf, err := NewRuleSet(RuleSetConfig{ID: "waf", Rules: []Rule{{PathPrefix: "/admin", Action: RuleDeny}}})
	require.NoError(t, err)
	g, err := New(Config{Hosts: []Host{{
		Names:    []string{"app.test"},
		Policies: []PolicyUse{{Policy: waf}},
		Routes: []Route{
			{ID: "secret", Prefix: "/secret", Target: echoTarget, Policies: []PolicyUse{{Policy: deny}}},
			{ID: "upload", Prefix: "/upload", Target: echoTarget, MaxBodyBytes: 4},
			{ID: "open", Prefix: "/", Target: echoTarget},
		},
	}}})
	require.NoError(t, err)
	addr := serve(t, g)
	for _, target := range []string{
		"/secret", "/secret/", "/SECRET/x", "/Secret", "/%73ecret/", "/%53ECRET", "/secret;x/", "/secret;x=..",
		"/secret/..;/", "/secret/%2e%2e/", "/%2e%2e/secret", "/x/../secret", "/x/..;/secret", "//secret",
		"/secret%2F", "/secret%2f..%2f", "/%5Csecret", "/x\\..\\secret", "/secret%00", "/secret%23", "/secret%3F",
		"/%252e%252e/secret", "/%c0%ae%c0%ae/secret", "/.%2e/secret", "/x/.%20./secret", "/secret#x",
		"/admin", "/ADMIN/x", "/%61dmin", "/admin;a=b",
		"http://app.test/secret/..;/", "http://app.test/%73ecret",
	} {
		t.Run(target, func(t *testing.T) {
			res := rawExchange(t, addr, "GET "+target+" HTTP/1.1\r\nHost: app.test\r\n\r\n")
			if res.StatusCode != http.StatusBadRequest && res.StatusCode != http.StatusForbidden {
				t.Fatalf("status %d on route %q with path view %q", res.StatusCode, res.Header.Get("X-Route"), res.Header.Get("X-Path"))
			}
		})
	}
	for _, target := range []string{"/upload", "/UPLOAD", "/%75pload", "/upload;x", "/x/../upload", "/upload/..;/"} {
		t.Run("body limit "+target, func(t *testing.T) {
			res := rawExchange(t, addr, "POST "+target+" HTTP/1.1\r\nHost: app.test\r\nContent-Length: 10\r\n\r\n0123456789")
			if res.StatusCode != http.StatusRequestEntityTooLarge && res.StatusCode != http.StatusBadRequest {
				t.Fatalf("status %d on route %q", res.StatusCode, res.Header.Get("X-Route"))
			}
		})
	}
}

// TestOwnedHeadersWhateverTheMode: a host whose chain names a
// forward-auth never lets a client's identity header through, even when
// the forward-auth is off or shadowed and never calls its service.
func TestOwnedHeadersWhateverTheMode(t *testing.T) {
	fa, err := NewForwardAuth(ForwardAuthConfig{ID: "auth", URL: "http://127.0.0.1:1/never", IdentityHeaders: []string{"X-User"}})
	require.NoError(t, err)
	var hosts []Host
	for _, m := range []Mode{Off, Shadow} {
		hosts = append(hosts, Host{Names: []string{m.String() + ".test"}, Policies: []PolicyUse{{Policy: fa, Mode: m}}, Routes: []Route{{Prefix: "/", Target: echoTarget}}})
	}
	hosts = append(hosts, Host{Names: []string{"route.test"}, Routes: []Route{{Prefix: "/", Target: echoTarget, Policies: []PolicyUse{{Policy: fa, Mode: Off}}}}})
	g, err := New(Config{Hosts: hosts})
	require.NoError(t, err)
	addr := serve(t, g)
	for _, host := range []string{"off.test", "route.test"} {
		res := rawExchange(t, addr, "GET / HTTP/1.1\r\nHost: "+host+"\r\nX-User: admin\r\nx-user: root\r\n\r\n")
		assert.Equal(t, 200, res.StatusCode, host)
		assert.Empty(t, res.Header.Get("X-Client-User"), "%s: the client's identity header reached the target", host)
	}
	// Shadowed, the policy calls its service (here unreachable: 503 that
	// the shadow lets through) and still strips the client's header.
	res := rawExchange(t, addr, "GET / HTTP/1.1\r\nHost: shadow.test\r\nX-User: admin\r\n\r\n")
	assert.Equal(t, 200, res.StatusCode)
	assert.Empty(t, res.Header.Get("X-Client-User"))
	assert.Empty(t, res.Header.Get("X-User"))
}

// TestUnknownClientSharesOneBucket: a request whose client address is
// unknown (a PROXY header with a UNIX source leaves none) is counted in
// one shared bucket, never exempt.
func TestUnknownClientSharesOneBucket(t *testing.T) {
	rl, err := NewRateLimit(RateLimitConfig{ID: "rl", Requests: 1, Period: time.Hour, Burst: 2})
	require.NoError(t, err)
	f := new(forwarded)
	g, err := New(Config{Hosts: []Host{{Names: []string{"app.test"}, Policies: []PolicyUse{{Policy: rl}}, Routes: []Route{{Prefix: "/", Target: f}}}}})
	require.NoError(t, err)
	w := newNopWriter()
	statuses := make([]int, 0, 4)
	for _, remote := range []string{"@", "pipe", "@", "unix:/run/lb.sock"} {
		w.reset()
		r := readRequest(t, "GET / HTTP/1.1\r\nHost: app.test\r\n\r\n", remote)
		g.ServeHTTP(w, r)
		statuses = append(statuses, w.status)
	}
	assert.Equal(t, []int{200, 200, 429, 429}, statuses)
	assert.Equal(t, 2, f.n)

	// A known client has its own bucket beside them.
	w.reset()
	g.ServeHTTP(w, readRequest(t, "GET / HTTP/1.1\r\nHost: app.test\r\n\r\n", "192.0.2.1:1"))
	assert.Equal(t, 200, w.status)
}

// TestPasswordChecksAreBounded: when the gateway's bcrypt checks are all
// taken, a request that needs one is answered 503 at once, while
// credentials verified before still pass without one.
func TestPasswordChecksAreBounded(t *testing.T) {
	al, err := NewAccessList(AccessListConfig{ID: "users", Users: []BasicUser{{Name: "ann", Hash: bcryptHash(t, "pw")}}})
	require.NoError(t, err)
	state := new(State)
	g, err := New(Config{State: state, MaxPasswordChecks: 1, Hosts: []Host{{Names: []string{"app.test"}, Policies: []PolicyUse{{Policy: al}}, Routes: []Route{{Prefix: "/", Target: new(forwarded)}}}}})
	require.NoError(t, err)
	send := func(user, pw string) *nopWriter {
		w := newNopWriter()
		r := readRequest(t, "GET / HTTP/1.1\r\nHost: app.test\r\n\r\n", "192.0.2.1:1")
		r.SetBasicAuth(user, pw)
		g.ServeHTTP(w, r)
		return w
	}
	require.Equal(t, 200, send("ann", "pw").status, "verified once: cached")

	state.passwordChecks.Add(1) // the one check is taken
	for _, c := range [][2]string{{"ann", "wrong"}, {"bob", "pw"}} {
		w := send(c[0], c[1])
		assert.Equal(t, 503, w.status, c[0])
		assert.Equal(t, []string{"1"}, w.h["Retry-After"])
	}
	assert.Equal(t, 200, send("ann", "pw").status, "cached credentials need no check")
	assert.Equal(t, uint64(2), state.Counters().PasswordChecksRefused.Load())

	state.passwordChecks.Add(-1)
	assert.Equal(t, 401, send("ann", "wrong").status, "with the check free, a wrong password is a 401")
	assert.Zero(t, state.passwordChecks.Load(), "every check gives its place back")
}

// TestForwardAuthIdentityNamesAreChecked: identity headers are header
// tokens without underscores.
func TestForwardAuthIdentityNamesAreChecked(t *testing.T) {
	for _, n := range []string{"X_User", "X User", "", "X-User\r\n"} {
		_, err := NewForwardAuth(ForwardAuthConfig{ID: "a", URL: "http://127.0.0.1:1", IdentityHeaders: []string{n}})
		assert.Error(t, err, "%q", n)
	}
	_, err := NewForwardAuth(ForwardAuthConfig{ID: "a", URL: "http://127.0.0.1:1", IdentityHeaders: []string{"x-user"}, RequestHeaders: []string{"Cookie"}})
	assert.NoError(t, err)
}
