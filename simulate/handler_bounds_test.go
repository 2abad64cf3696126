package simulate

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/paduraksa/paduraksa/tlsselect"
)

// listenHandler serves h on a loopback listener and returns its address.
func listenHandler(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// startPost sends the head of a POST with Expect: 100-continue and waits
// for the 100 that net/http sends when the handler starts to read the
// body, so the call is then in progress, holding its place. It returns
// the connection, to finish the body on, and its reader.
func startPost(t *testing.T, addr, path string, length int) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(patienceTest))
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: admin\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n", path, length)
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "HTTP/1.1 100 Continue\r\n", line)
	line, err = br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "\r\n", line)
	return c, br
}

// A call beyond MaxConcurrent is answered 429 with Retry-After at once,
// not queued; the place frees when the call in progress ends.
func TestHandlerRefusesCallsBeyondMaxConcurrent(t *testing.T) {
	store := publish(t, diffBase, snapshot.Compiler{})
	h := NewHandler(HandlerConfig{Store: store, MaxConcurrent: 1})
	addr := listenHandler(t, h)
	post := serveHandler(t, h)
	body := `{"probe": {"url": "http://api.example.com/v1/x"}}`

	first, br := startPost(t, addr, "/simulate", len(body))
	status, answer := post("POST", "/simulate", body)
	assert.Equal(t, http.StatusTooManyRequests, status, answer)
	assert.Equal(t, []string{CodeBusy + " "}, errorCodes(t, answer))

	_, err := io.WriteString(first, body)
	require.NoError(t, err)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the call in progress is served")

	status, answer = post("POST", "/simulate", body)
	assert.Equal(t, http.StatusOK, status, "the place is free again: %s", answer)
}

// The 429 carries Retry-After; so does the 503 at the deadline, whose
// code is simulate.deadline. A request that does not arrive within the
// deadline gets 408.
func TestHandlerDeadline(t *testing.T) {
	store := publish(t, gatewayDoc, compilerFor(t))
	h := NewHandler(HandlerConfig{Store: store, Compiler: new(compilerFor(t)), Timeout: 50 * time.Millisecond, MaxProbes: 1000, MaxConcurrent: 1})
	addr := listenHandler(t, h)
	client := &http.Client{Timeout: patienceTest}
	do := func(body string) (*http.Response, string) {
		t.Helper()
		resp, err := client.Post("http://"+addr+"/simulate/diff", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(b)
	}
	// The busy answer's Retry-After, while a slow request holds the place.
	c, br := startPost(t, addr, "/simulate/diff", 100)
	resp, answer := do(`{"draft": {}, "probes": [{"url": "http://app.test/"}]}`)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, answer)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	// That request never arrives whole: 408 at the deadline.
	io.WriteString(c, `{"draft": `)
	late, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	b, err := io.ReadAll(late.Body)
	require.NoError(t, err)
	assert.Equal(t, http.StatusRequestTimeout, late.StatusCode, string(b))
	assert.Equal(t, []string{CodeDeadline + " "}, errorCodes(t, string(b)))

	// The place is free once the 408 is out: the work of a call that
	// outlasts its deadline is answered 503.
	draft, err := json.Marshal(decode(t, gatewayDoc))
	require.NoError(t, err)
	// A thousand HTTPS probes: two handshakes each, far more than 50 ms.
	probes := strings.Repeat(`{"url": "https://app.test/api"},`, 1000)
	start := time.Now()
	resp, answer = do(`{"draft": ` + string(draft) + `, "probes": [` + strings.TrimSuffix(probes, ",") + `]}`)
	took := time.Since(start)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, answer)
	assert.Equal(t, []string{CodeDeadline + " "}, errorCodes(t, answer))
	assert.Equal(t, "1", resp.Header.Get("Retry-After"), "the deadline, rounded up to seconds")
	assert.Less(t, took, 2*time.Second, "answered at the deadline, not after the thousand probes")
}

// A call whose draft is still compiling when its deadline passes is
// answered on time and keeps its place until the compile ends: the work
// in progress never exceeds MaxConcurrent calls.
func TestHandlerCompileOutlastingTheDeadlineKeepsItsPlace(t *testing.T) {
	store := publish(t, diffBase, snapshot.Compiler{})
	src := &gatedSource{cert: testCert(t), entered: make(chan struct{}, 1), release: make(chan struct{})}
	released := false
	release := func() {
		if !released {
			released = true
			close(src.release)
		}
	}
	t.Cleanup(release)
	c := &snapshot.Compiler{Certificates: map[string]tlsselect.Source{"c": src}}
	post := serveHandler(t, NewHandler(HandlerConfig{Store: store, Compiler: c, Timeout: 50 * time.Millisecond, MaxConcurrent: 1}))
	draft := `{"certificates": [{"id": "c"}], "hosts": [{"names": ["app.test"], "certificate": "c", "routes": [{"path": "/", "upstream": "u"}]}],
		"upstreams": [{"id": "u", "destinations": [{"id": "a", "address": "http://127.0.0.1:9"}]}]}`

	status, answer := post("POST", "/simulate", `{"draft": `+draft+`, "probe": {"url": "http://app.test/"}}`)
	assert.Equal(t, http.StatusServiceUnavailable, status, answer)
	assert.Equal(t, []string{CodeDeadline + " "}, errorCodes(t, answer))
	select {
	case <-src.entered:
	default:
		t.Fatal("the draft's certificate was never asked for: the compile did not run")
	}
	status, answer = post("POST", "/simulate", `{"probe": {"url": "http://api.example.com/v1/x"}}`)
	assert.Equal(t, http.StatusTooManyRequests, status, "the compile still holds the place: %s", answer)
	release()
}

// gatedSource is a certificate source whose Certificate waits until
// release is closed: a compile that takes as long as the test wants.
type gatedSource struct {
	cert    tls.Certificate
	entered chan struct{}
	release chan struct{}
}

func (s *gatedSource) Certificate(tlsselect.SourceRequest) (*tls.Certificate, error) {
	select {
	case s.entered <- struct{}{}:
	default:
	}
	<-s.release
	return &s.cert, nil
}

// A diff takes at most MaxProbes probes: more are refused with 413, and
// of the Sample only the newest are replayed, the report saying how many
// were not.
func TestHandlerDiffProbeCap(t *testing.T) {
	store := publish(t, diffBase, snapshot.Compiler{})
	sample := NewSample(SampleConfig{Size: 8, Every: 1})
	for i := range 5 {
		sample.ObserveRequest(record("api.example.com", "/v1/"+strconv.Itoa(i), "192.0.2.1:1", "192.0.2.1"))
	}
	post := serveHandler(t, NewHandler(HandlerConfig{Store: store, Sample: sample, MaxProbes: 2}))
	draft, err := json.Marshal(decode(t, strings.Replace(diffBase, "{id: v1, path: /v1, upstream: v1}", "{id: v1, path: /v1, upstream: v2}", 1)))
	require.NoError(t, err)

	status, answer := post("POST", "/simulate/diff", `{"draft": `+string(draft)+`, "probes": [{"url": "http://a/"}, {"url": "http://b/"}, {"url": "http://c/"}]}`)
	assert.Equal(t, http.StatusRequestEntityTooLarge, status, answer)
	assert.Equal(t, []string{CodeDiffProbesTooMany + " probes"}, errorCodes(t, answer))

	status, answer = post("POST", "/simulate/diff", `{"draft": `+string(draft)+`}`)
	require.Equal(t, http.StatusOK, status, answer)
	var rep DiffReport
	require.NoError(t, json.Unmarshal([]byte(answer), &rep))
	assert.Equal(t, 2, rep.Compared)
	var urls []string
	for _, c := range rep.Changes {
		urls = append(urls, c.Probe.URL)
	}
	assert.Equal(t, []string{"http://api.example.com/v1/3", "http://api.example.com/v1/4"}, urls, "the newest two")
	assert.Equal(t, []string{"3 older sampled requests past the limit of 2 not simulated"}, rep.Refused)
}
