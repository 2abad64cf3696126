package gate

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type headerRule struct{}

func (headerRule) SetAnswerHeaders(h http.Header, r *http.Request) { h.Set("X-Request-Id", "rid-1") }

// TestAnswerHook: the hook writes the gateway's own answers it wants (with
// the host's answer headers already set), leaves the others to the gate,
// and is never called for a simulated request.
func TestAnswerHook(t *testing.T) {
	var seen []int
	hook := func(w http.ResponseWriter, r *http.Request, rq *Request, status int) bool {
		seen = append(seen, status)
		if status == http.StatusMisdirectedRequest {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, `{"status":`+strconv.Itoa(status)+`}`)
		return true
	}
	failing := TargetFunc(func(w http.ResponseWriter, r *http.Request, rq *Request) { rq.Answer(w, r, http.StatusBadGateway) })
	g, err := New(Config{Answer: hook, Hosts: []Host{
		{Names: []string{"app.test"}, AnswerHeaders: headerRule{}, Routes: []Route{{Prefix: "/api", Target: failing}}},
		{Names: []string{"h1.test"}, TLS: TLSPolicy{HTTP1Only: true}, Routes: []Route{{Prefix: "/", Target: failing}}},
	}})
	require.NoError(t, err)

	do := func(r *http.Request) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		g.ServeHTTP(w, r)
		return w
	}
	w := do(readRequest(t, "GET /api/x HTTP/1.1\r\nHost: app.test\r\n\r\n", "192.0.2.1:1"))
	assert.Equal(t, 502, w.Code)
	assert.Equal(t, `{"status":502}`, w.Body.String())

	w = do(readRequest(t, "GET /nothing HTTP/1.1\r\nHost: app.test\r\n\r\n", "192.0.2.1:1"))
	assert.Equal(t, 404, w.Code)
	assert.Equal(t, `{"status":404}`, w.Body.String())
	assert.Equal(t, "rid-1", w.Header().Get("X-Request-Id"), "the host's answer headers are set before the hook")

	w = do(readRequest(t, "GET / HTTP/1.1\r\nHost: nobody.test\r\n\r\n", "192.0.2.1:1"))
	assert.Equal(t, `{"status":404}`, w.Body.String(), "the unknown host's answer too")

	h2 := readRequest(t, "GET / HTTP/1.1\r\nHost: h1.test\r\n\r\n", "192.0.2.1:1")
	h2.ProtoMajor, h2.TLS = 2, tlsState(0x0304)
	w = do(h2)
	assert.Equal(t, 421, w.Code)
	assert.Contains(t, w.Body.String(), "421 Misdirected Request", "declined: the gate's own answer")
	assert.Equal(t, []int{502, 404, 404, 421}, seen)

	g.Simulate(httptest.NewRecorder(), readRequest(t, "GET /nothing HTTP/1.1\r\nHost: app.test\r\n\r\n", "192.0.2.1:1"), &Tracer{OnStep: func(Step) {}})
	assert.Len(t, seen, 4, "a simulation does not call the hook")
}
