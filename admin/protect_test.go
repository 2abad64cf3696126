package admin

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProtect(t *testing.T) {
	a := newAPI(t, Config{Token: "tok"})
	h, err := New(Config{Publisher: a.pub, Token: "tok"})
	require.NoError(t, err)
	other := h.Protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "beside the API") }))
	b := &api{t: t, url: "http://" + httptestServer(t, other), c: a.c}
	for auth, code := range map[string]string{"": CodeTokenMissing, "Bearer nope": CodeTokenInvalid} {
		ans := b.do("GET", "/anything", "", "Authorization", auth)
		assert.Equal(t, 401, ans.status, auth)
		assert.Equal(t, code, errorCode(t, ans))
		assert.Contains(t, ans.header.Get("WWW-Authenticate"), "Bearer", auth)
	}
	ans := b.do("GET", "/anything", "", "Authorization", "Bearer tok")
	assert.Equal(t, 200, ans.status)
	assert.Equal(t, "beside the API", ans.body)
}

// rawGet sends one GET over a new connection, the request's bytes as
// written (a Host or Origin of any spelling), and returns the status and
// the error code.
func rawGet(t *testing.T, url, path string, lines ...string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	require.NoError(t, err)
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	req := "GET " + path + " HTTP/1.1\r\n"
	for _, l := range lines {
		req += l + "\r\n"
	}
	_, err = io.WriteString(c, req+"Connection: close\r\n\r\n")
	require.NoError(t, err)
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	defer res.Body.Close()
	var body ErrorBody
	json.NewDecoder(res.Body).Decode(&body)
	return res.StatusCode, body.Error.Code
}

// Without a token, a browser on the machine could reach a loopback admin
// listener all the same: a page whose name was rebound to 127.0.0.1 (its
// requests carry Host: that name), and a page posting across sites to
// 127.0.0.1 (its Origin). Only loopback Hosts and Origins are served, in
// every spelling tried; with a token, the token decides.
func TestWithoutTokenOnlyLoopbackHostsAndOrigins(t *testing.T) {
	a := newAPI(t, Config{})
	other := a.h.Protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "beside the API") }))
	beside := "http://" + httptestServer(t, other)
	for _, host := range []string{"localhost", "LocalHost:9901", "127.0.0.1", "127.0.0.1:1", "127.9.9.9:65535", "[::1]", "[::1]:9901", "[::ffff:127.0.0.1]:9901"} {
		for _, u := range []string{a.url, beside} {
			status, code := rawGet(t, u, "/healthz", "Host: "+host)
			assert.NotEqual(t, http.StatusForbidden, status, "%s %s: %s", u, host, code)
		}
	}
	for _, host := range []string{"evil.test", "evil.test:9901", "127.0.0.1.evil.test", "localhost.evil.test:9901", "localhost.",
		"127.1", "0.0.0.0:9901", "[::]:9901", "[fe80::1%25lo]:9901", "[::1]x", "[127.0.0.1]", "localhost:0", "localhost:+80",
		"localhost:65536", "localhost:", ":9901", "::1", "192.168.1.1:9901"} {
		for _, u := range []string{a.url, beside} {
			status, code := rawGet(t, u, "/healthz", "Host: "+host)
			// net/http answers 400 to a Host it cannot read at all, before
			// the handler: refused either way.
			if status != http.StatusBadRequest {
				assert.Equal(t, http.StatusForbidden, status, "%s %s", u, host)
				assert.Equal(t, CodeHostUntrusted, code, host)
			}
		}
	}
	for _, origin := range []string{"http://127.0.0.1:9901", "https://localhost", "http://[::1]:80"} {
		status, code := rawGet(t, a.url, "/healthz", "Host: 127.0.0.1", "Origin: "+origin)
		assert.NotEqual(t, http.StatusForbidden, status, "%s: %s", origin, code)
	}
	for _, origin := range [][]string{{"Origin: http://evil.test"}, {"Origin: null"}, {"Origin: "}, {"Origin: file://"},
		{"Origin: http://localhost.evil.test"}, {"Origin: http://127.0.0.1@evil.test"}, {"Origin: ws://localhost"},
		{"Origin: http://localhost", "Origin: http://evil.test"}, {"Origin: http://localhost/"}} {
		for _, u := range []string{a.url, beside} {
			status, code := rawGet(t, u, "/healthz", append([]string{"Host: 127.0.0.1"}, origin...)...)
			assert.Equal(t, http.StatusForbidden, status, "%s %q", u, origin)
			assert.Equal(t, CodeOriginUntrusted, code, origin)
		}
	}
	// The console's files too: its script, served under a rebound name,
	// would run in that name's origin.
	status, code := rawGet(t, a.url, "/console/", "Host: evil.test")
	assert.Equal(t, http.StatusForbidden, status)
	assert.Equal(t, CodeHostUntrusted, code)

	tok := newAPI(t, Config{Token: "tok"})
	status, _ = rawGet(t, tok.url, "/healthz", "Host: gateway.example:9901", "Origin: https://ops.example", "Authorization: Bearer tok")
	assert.NotEqual(t, http.StatusForbidden, status, "with a token, the token decides")
	status, code = rawGet(t, tok.url, "/healthz", "Host: gateway.example:9901")
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Equal(t, CodeTokenMissing, code)
}
