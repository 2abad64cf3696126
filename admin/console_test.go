package admin

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/tlsselect"
)

const consoleToken = "console-token"

// login logs in with token and returns the session cookie ("name=value")
// and the CSRF token.
func (a *api) login(token string) (cookie, csrf string) {
	a.t.Helper()
	ans := a.do("POST", "/console/login", `{"token":"`+token+`"}`, "Content-Type", "application/json")
	require.Equal(a.t, 200, ans.status, ans.body)
	var s Session
	require.NoError(a.t, json.Unmarshal([]byte(ans.body), &s))
	require.True(a.t, s.Auth)
	require.NotEmpty(a.t, s.CSRF)
	c := sessionCookie(a.t, ans)
	return c.Name + "=" + c.Value, s.CSRF
}

// sessionCookie returns the session cookie an answer sets.
func sessionCookie(t *testing.T, ans answer) *http.Cookie {
	t.Helper()
	cs := (&http.Response{Header: ans.header}).Cookies()
	require.Len(t, cs, 1, ans.header)
	require.Regexp(t, `^`+SessionCookie+`_[0-9]+$`, cs[0].Name, "the listener's port in the name")
	return cs[0]
}

func TestConsoleFilesAndHeaders(t *testing.T) {
	a := newAPI(t, Config{Token: consoleToken})
	for _, tc := range []struct{ path, ctype, contains string }{
		{"/console/", "text/html; charset=utf-8", `<script src="console.js" defer></script>`},
		{"/console", "text/html; charset=utf-8", "<title>Paduraksa console</title>"}, // redirected to /console/
		{"/console/index.html", "text/html; charset=utf-8", `id="login-form"`},
		{"/console/console.js", "text/javascript; charset=utf-8", "textContent"},
		{"/console/console.css", "text/css; charset=utf-8", ":root"},
	} {
		ans := a.do("GET", tc.path, "")
		require.Equal(t, 200, ans.status, tc.path)
		assert.Equal(t, tc.ctype, ans.header.Get("Content-Type"), tc.path)
		assert.Contains(t, ans.body, tc.contains, tc.path)
		assert.Equal(t, contentSecurityPolicy, ans.header.Get("Content-Security-Policy"), tc.path)
		assert.Equal(t, "nosniff", ans.header.Get("X-Content-Type-Options"), tc.path)
		assert.Equal(t, "no-referrer", ans.header.Get("Referrer-Policy"), tc.path)
		assert.Equal(t, "DENY", ans.header.Get("X-Frame-Options"), tc.path)
	}
	csp := a.do("GET", "/console/", "").header.Get("Content-Security-Policy")
	for _, directive := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'"} {
		assert.Contains(t, csp, directive)
	}
	assert.NotContains(t, csp, "unsafe-inline")
	assert.NotContains(t, csp, "unsafe-eval")

	// The page has no inline script, style or handler: the CSP would
	// refuse them.
	page := a.do("GET", "/console/", "").body
	assert.NotContains(t, page, "<style")
	assert.NotContains(t, page, " style=")
	assert.NotRegexp(t, `\son[a-z]+=`, page)
	assert.Equal(t, 1, strings.Count(page, "<script"))
	assert.NotContains(t, a.do("GET", "/console/console.js", "").body, "innerHTML")

	for _, path := range []string{"/console/nope.js", "/console/../config", "/console/a/b"} {
		ans := a.do("GET", path, "")
		assert.Equal(t, 404, ans.status, path)
		assert.Equal(t, CodeNotFound, errorCode(t, ans), path)
	}
	ans := a.do("POST", "/console/console.js", "")
	assert.Equal(t, 405, ans.status)
	assert.Equal(t, "GET, HEAD", ans.header.Get("Allow"))
	assert.Equal(t, "nosniff", a.do("GET", "/health", "").header.Get("X-Content-Type-Options"), "the API's answers too")
}

func TestConsoleLogin(t *testing.T) {
	a := newAPI(t, Config{Token: consoleToken})

	ans := a.do("GET", "/health", "")
	assert.Equal(t, 401, ans.status, "no session, no token")
	assert.Equal(t, CodeTokenMissing, errorCode(t, ans))
	ans = a.do("GET", "/console/session", "")
	assert.Equal(t, 401, ans.status)
	assert.Equal(t, CodeSessionMissing, errorCode(t, ans))

	for _, tc := range []struct {
		name, body, ctype, code string
		status                  int
	}{
		{"wrong token", `{"token":"nope"}`, "application/json", CodeTokenInvalid, 401},
		{"prefix of the token", `{"token":"console"}`, "application/json", CodeTokenInvalid, 401},
		{"empty token", `{"token":" "}`, "application/json", CodeTokenMissing, 401},
		{"not JSON", `token=console-token`, "application/json", CodeBodyUnreadable, 400},
		{"a form post", `token=console-token`, "application/x-www-form-urlencoded", CodeContentType, 415},
		{"plain text", `{"token":"console-token"}`, "text/plain", CodeContentType, 415},
		{"beyond the cap", `{"token":"console-token"` + strings.Repeat(" ", MaxTokenFileSize) + `}`, "application/json", CodeBodyTooLarge, 413},
	} {
		ans := a.do("POST", "/console/login", tc.body, "Content-Type", tc.ctype)
		assert.Equal(t, tc.status, ans.status, tc.name)
		assert.Equal(t, tc.code, errorCode(t, ans), tc.name)
		assert.Empty(t, ans.header.Values("Set-Cookie"), tc.name)
	}
	assert.Equal(t, 405, a.do("GET", "/console/login", "").status)

	ans = a.do("POST", "/console/login", `{"token":"console-token"}`, "Content-Type", "application/json")
	require.Equal(t, 200, ans.status, ans.body)
	c := sessionCookie(t, ans)
	assert.True(t, c.HttpOnly)
	assert.False(t, c.Secure, "plain HTTP: a Secure cookie would never come back")
	assert.Equal(t, http.SameSiteStrictMode, c.SameSite)
	assert.Equal(t, "/", c.Path)
	assert.Equal(t, int(DefaultSessionTTL.Seconds()), c.MaxAge)
	assert.GreaterOrEqual(t, len(c.Value), 43, "32 random bytes")
	raw := ans.header.Get("Set-Cookie")
	assert.Contains(t, raw, "HttpOnly")
	assert.Contains(t, raw, "SameSite=Strict")
	var s Session
	require.NoError(t, json.Unmarshal([]byte(ans.body), &s))
	cookie := c.Name + "=" + c.Value

	// The session authenticates reads, and says its CSRF token again.
	ans = a.do("GET", "/console/session", "", "Cookie", cookie)
	require.Equal(t, 200, ans.status)
	var again Session
	require.NoError(t, json.Unmarshal([]byte(ans.body), &again))
	assert.Equal(t, s.CSRF, again.CSRF)
	assert.Equal(t, 503, a.do("GET", "/healthz", "", "Cookie", cookie).status, "authenticated: nothing serves yet")

	// Another login is another session, with its own CSRF token.
	cookie2, csrf2 := a.login(consoleToken)
	assert.NotEqual(t, cookie, cookie2)
	assert.NotEqual(t, s.CSRF, csrf2)

	name, _, _ := strings.Cut(cookie, "=")
	ans = a.do("GET", "/healthz", "", "Cookie", name+"=forged")
	assert.Equal(t, 401, ans.status)
	assert.Equal(t, CodeSessionInvalid, errorCode(t, ans))

	// Logging out needs the CSRF token, ends the session and clears the
	// cookie; the other session goes on.
	ans = a.do("POST", "/console/logout", "", "Cookie", cookie)
	assert.Equal(t, 403, ans.status)
	assert.Equal(t, CodeCSRFMissing, errorCode(t, ans))
	ans = a.do("POST", "/console/logout", "", "Cookie", cookie, CSRFHeader, s.CSRF)
	require.Equal(t, 200, ans.status, ans.body)
	gone := sessionCookie(t, ans)
	assert.Empty(t, gone.Value)
	assert.Equal(t, -1, gone.MaxAge)
	ans = a.do("GET", "/healthz", "", "Cookie", cookie)
	assert.Equal(t, 401, ans.status)
	assert.Equal(t, CodeSessionInvalid, errorCode(t, ans))
	assert.Equal(t, 503, a.do("GET", "/healthz", "", "Cookie", cookie2).status)

	// The cookie of another port's console is not this one's.
	_, value, _ := strings.Cut(cookie2, "=")
	ans = a.do("GET", "/healthz", "", "Cookie", SessionCookie+"_1="+value)
	assert.Equal(t, 401, ans.status)
	assert.Equal(t, CodeTokenMissing, errorCode(t, ans))
}

func TestConsoleCSRF(t *testing.T) {
	a := newAPI(t, Config{Token: consoleToken})
	doc := fixedDoc("app.test", "one")
	cookie, csrf := a.login(consoleToken)
	_, otherCSRF := a.login(consoleToken)

	for _, tc := range []struct {
		name string
		hdr  []string
		code string
	}{
		{"no CSRF token", nil, CodeCSRFMissing},
		{"another session's", []string{CSRFHeader, otherCSRF}, CodeCSRFInvalid},
		{"a prefix", []string{CSRFHeader, csrf[:10]}, CodeCSRFInvalid},
		{"empty", []string{CSRFHeader, ""}, CodeCSRFMissing},
	} {
		hdr := append([]string{"Cookie", cookie}, tc.hdr...)
		for _, req := range []struct{ method, path, body string }{
			{"PUT", "/config", doc},
			{"POST", "/upstreams/u/destinations/d/drain", ""},
			{"POST", "/simulate", "{}"},
			{"POST", "/console/logout", ""},
		} {
			ans := a.do(req.method, req.path, req.body, hdr...)
			assert.Equal(t, 403, ans.status, "%s: %s %s", tc.name, req.method, req.path)
			assert.Equal(t, tc.code, errorCode(t, ans), "%s: %s %s", tc.name, req.method, req.path)
		}
	}
	assert.Empty(t, a.pub.History(), "no refused request published")

	ans, res := a.push(doc, "Cookie", cookie, CSRFHeader, csrf)
	require.Equal(t, 200, ans.status, ans.body)
	assert.Equal(t, "applied", res.Status)
	// A bearer token needs no CSRF token: no browser sends it by itself.
	ans, res = a.push(fixedDoc("app.test", "two"), "Authorization", "Bearer "+consoleToken)
	require.Equal(t, 200, ans.status, ans.body)
	assert.Equal(t, "applied", res.Status)
	// A wrong bearer token is not rescued by a good cookie.
	ans = a.do("PUT", "/config", doc, "Authorization", "Bearer nope", "Cookie", cookie, CSRFHeader, csrf)
	assert.Equal(t, 401, ans.status)
	assert.Equal(t, CodeTokenInvalid, errorCode(t, ans))
}

func TestConsoleSessionsExpireAndAreBounded(t *testing.T) {
	a := newAPI(t, Config{Token: consoleToken, SessionTTL: time.Hour})
	var mu sync.Mutex
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a.h.sessions.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	first, _ := a.login(consoleToken)
	advance(30 * time.Minute)
	second, _ := a.login(consoleToken)
	advance(31 * time.Minute)
	ans := a.do("GET", "/healthz", "", "Cookie", first)
	assert.Equal(t, 401, ans.status, "past its hour")
	assert.Equal(t, CodeSessionInvalid, errorCode(t, ans))
	assert.Equal(t, 503, a.do("GET", "/healthz", "", "Cookie", second).status, "within its hour")

	cookies := []string{second}
	for range MaxSessions {
		advance(time.Second)
		c, _ := a.login(consoleToken)
		cookies = append(cookies, c)
	}
	a.h.sessions.mu.Lock()
	assert.Len(t, a.h.sessions.m, MaxSessions)
	a.h.sessions.mu.Unlock()
	assert.Equal(t, 401, a.do("GET", "/healthz", "", "Cookie", cookies[0]).status, "the one that expires first made room")
	assert.Equal(t, 503, a.do("GET", "/healthz", "", "Cookie", cookies[1]).status)
	assert.Equal(t, 503, a.do("GET", "/healthz", "", "Cookie", cookies[MaxSessions]).status)

	_, err := New(Config{Publisher: a.pub, SessionTTL: -time.Second})
	require.Error(t, err)
	assert.Contains(t, err.Error(), CodeSessionTTLInvalid)
}

func TestConsoleCookieIsSecureOverTLS(t *testing.T) {
	a := newAPI(t, Config{Token: consoleToken})
	srv := httptest.NewTLSServer(a.h)
	t.Cleanup(srv.Close)
	a.url, a.c = srv.URL, srv.Client()
	ans := a.do("POST", "/console/login", `{"token":"console-token"}`, "Content-Type", "application/json")
	require.Equal(t, 200, ans.status, ans.body)
	c := sessionCookie(t, ans)
	assert.True(t, c.Secure)
	assert.True(t, c.HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, c.SameSite)
}

func TestConsoleWithoutToken(t *testing.T) {
	a := newAPI(t, Config{})
	ans := a.do("GET", "/console/session", "")
	require.Equal(t, 200, ans.status)
	assert.JSONEq(t, `{"auth":false}`, ans.body, "nothing to log in to")
	ans = a.do("POST", "/console/login", `{"token":"x"}`, "Content-Type", "application/json")
	assert.Equal(t, 200, ans.status)
	assert.Empty(t, ans.header.Values("Set-Cookie"))
}

func TestOverviewRevisionAndCertificates(t *testing.T) {
	a := newAPI(t, Config{Instance: "edge-1"})
	for _, path := range []string{"/overview", "/certificates"} {
		ans := a.do("GET", path, "")
		assert.Equal(t, 503, ans.status, path)
		assert.Equal(t, CodeNoConfig, errorCode(t, ans), path)
	}
	doc := "hosts:\n  - names: [app.test]\n    routes: [{id: r1, upstream: u}, {id: r2, path: /b, upstream: u}]\n" +
		"upstreams:\n  - id: u\n    destinations: [{id: d1, address: 'http://" + refusedAddr(t) + "'}]\n"
	ans, _ := a.push(doc)
	require.Equal(t, 200, ans.status, ans.body)
	ans, _ = a.push("hosts:\n  - names: [app.test]\n    routes: [{upstream: missing}]\n")
	require.Equal(t, 422, ans.status, ans.body)

	ans = a.do("GET", "/overview", "")
	require.Equal(t, 200, ans.status, ans.body)
	var o Overview
	require.NoError(t, json.Unmarshal([]byte(ans.body), &o))
	assert.Equal(t, uint64(1), o.Serving)
	assert.Equal(t, "applied", o.Status)
	assert.Equal(t, "edge-1", o.Instance)
	assert.Equal(t, []int{1, 2, 1, 1}, []int{o.Hosts, o.Routes, o.Upstreams, o.Destinations})
	assert.Zero(t, o.Requests)
	assert.False(t, o.Applied.IsZero())

	ans = a.do("GET", "/revisions/1", "")
	require.Equal(t, 200, ans.status, ans.body)
	var r RevisionDocument
	require.NoError(t, json.Unmarshal([]byte(ans.body), &r))
	assert.Equal(t, doc, r.Document, "as it was pushed")
	assert.Equal(t, "application/yaml", r.ContentType)
	assert.True(t, r.Serving)
	assert.Equal(t, "applied", r.Status)
	var canon struct {
		Hosts []struct {
			Names  []string `json:"names"`
			Routes []struct {
				ID string `json:"id"`
			} `json:"routes"`
		} `json:"hosts"`
	}
	require.NoError(t, json.Unmarshal(r.Canonical, &canon))
	assert.Equal(t, []string{"app.test"}, canon.Hosts[0].Names)
	assert.Len(t, canon.Hosts[0].Routes, 2)

	ans = a.do("GET", "/revisions/2", "")
	require.Equal(t, 200, ans.status, ans.body)
	r = RevisionDocument{}
	require.NoError(t, json.Unmarshal([]byte(ans.body), &r))
	assert.Equal(t, "refused", r.Status)
	assert.False(t, r.Serving)
	assert.Contains(t, r.Document, "missing")
	assert.Nil(t, r.Canonical, "a refused document has no canonical form")
	assert.Equal(t, []string{"route.upstream.unknown hosts[0].routes[0].upstream"}, codePaths(r.Errors))

	for _, path := range []string{"/revisions/9", "/revisions/x", "/revisions/", "/revisions/-1", "/revisions/01", "/revisions/+1", "/revisions/1/", "/revisions/18446744073709551616"} {
		ans := a.do("GET", path, "")
		assert.Equal(t, 404, ans.status, path)
		assert.Equal(t, CodeRevisionUnknown, errorCode(t, ans), path)
	}
	assert.Equal(t, 405, a.do("PUT", "/revisions/1", "").status)

	ans = a.do("GET", "/certificates", "")
	require.Equal(t, 200, ans.status, ans.body)
	assert.JSONEq(t, `{"certificates":[]}`, ans.body)
}

func TestCertificates(t *testing.T) {
	renew := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	a := newAPI(t, Config{ACME: func() tlsselect.ACMEStats {
		return tlsselect.ACMEStats{Certificates: []tlsselect.ACMEStatus{
			{ID: "main", Names: []string{"app.test"}, RenewAt: renew, Failures: 2, LastError: "rate limited"},
			{ID: "other", Names: []string{"other.test"}}, // not in the document: not shown
		}}
	}})
	certFile, keyFile := pemFiles(t)
	doc := "certificates:\n  - {id: main, certFile: " + strconv.Quote(certFile) + ", keyFile: " + strconv.Quote(keyFile) + "}\n" +
		"hosts:\n  - names: [app.test]\n    certificate: main\n    kind: fixed\n    fixed: {status: 200}\n"
	ans, res := a.push(doc)
	require.Equal(t, 200, ans.status, ans.body, res.Errors)
	ans = a.do("GET", "/certificates", "")
	require.Equal(t, 200, ans.status, ans.body)
	var cs Certificates
	require.NoError(t, json.Unmarshal([]byte(ans.body), &cs))
	require.Len(t, cs.Certificates, 1)
	c := cs.Certificates[0]
	assert.Equal(t, "main", c.ID)
	assert.Equal(t, "files", c.Source)
	assert.False(t, c.Pending)
	assert.Contains(t, c.Names, "app.test")
	assert.True(t, c.NotAfter.After(time.Now()), c.NotAfter)
	assert.True(t, c.NotBefore.Before(c.NotAfter))
	require.NotNil(t, c.ACME)
	assert.Equal(t, ACMEState{Names: []string{"app.test"}, RenewAt: renew, Failures: 2, LastError: "rate limited"}, *c.ACME)
}

// Refused logins are logged, but at most one line per loginLogEvery: the
// login answers anyone, who could otherwise fill the log. Each line says
// how many refusals it stands for.
func TestRefusedLoginsLoggedAtARate(t *testing.T) {
	var logs syncBuffer
	a := newAPI(t, Config{Token: consoleToken, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a.h.sessions.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	refuse := func(n int) {
		for range n {
			ans := a.do("POST", "/console/login", `{"token":"nope"}`, "Content-Type", "application/json")
			require.Equal(t, 401, ans.status)
		}
	}
	refuse(50)
	assert.Equal(t, 1, strings.Count(logs.String(), "login refused"), "one line for a burst")
	mu.Lock()
	now = now.Add(loginLogEvery)
	mu.Unlock()
	refuse(1)
	assert.Equal(t, 2, strings.Count(logs.String(), "login refused"))
	assert.Contains(t, logs.String(), "alsoRefusedSinceLastLine=49")
}

// syncBuffer is a bytes.Buffer that a logger and a test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
