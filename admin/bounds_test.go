package admin

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startPut sends the head of a PUT /config with Expect: 100-continue and
// waits for the 100 that net/http sends when the handler starts to read
// the document: the push is then in progress. It returns the connection,
// to send the document on, and its reader.
func startPut(t *testing.T, a *api, length int) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(a.url, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "PUT /config HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n", length)
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusContinue, res.StatusCode)
	return c, br
}

// A push beyond MaxPushes is answered 429 with Retry-After at once, never
// queued, and is not published; the place frees when the push in
// progress ends.
func TestPushesBeyondMaxPushes(t *testing.T) {
	a := newAPI(t, Config{MaxPushes: 1})
	doc := fixedDoc("app.test", "one")
	c, br := startPut(t, a, len(doc))

	ans := a.do("PUT", "/config", fixedDoc("app.test", "two"))
	assert.Equal(t, http.StatusTooManyRequests, ans.status, ans.body)
	assert.Equal(t, CodeBusy, errorCode(t, ans))
	assert.Equal(t, "1", ans.header.Get("Retry-After"))
	ans = a.do("POST", "/config/check", fixedDoc("app.test", "two"))
	assert.Equal(t, http.StatusTooManyRequests, ans.status, "a check shares the pushes' places: %s", ans.body)
	assert.Equal(t, CodeBusy, errorCode(t, ans))

	_, err := io.WriteString(c, doc)
	require.NoError(t, err)
	res, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode, "the push in progress applies")
	assert.Len(t, a.pub.History(), 1, "the refused push was never published")

	ans, _ = a.push(fixedDoc("app.test", "three"))
	assert.Equal(t, http.StatusOK, ans.status, "the place is free again: %s", ans.body)
}

// ApplyTimeout counts from the start of a push: a document that does not
// arrive within it gets 408, and a push whose turn does not come within
// it (the one before it is still persisting, on a Persist that does not
// heed its context) gets 504 and is not published.
func TestPushWithinApplyTimeout(t *testing.T) {
	persisting, release := make(chan struct{}, 1), make(chan struct{})
	a := newAPI(t, Config{ApplyTimeout: 200 * time.Millisecond, Persist: func(context.Context, []byte) error {
		persisting <- struct{}{}
		<-release
		return nil
	}})
	free := sync.OnceFunc(func() { close(release) })
	t.Cleanup(free) // before the server closes, should the test stop early

	c, br := startPut(t, a, 100)
	io.WriteString(c, "hosts: ")
	res, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	assert.Equal(t, http.StatusRequestTimeout, res.StatusCode, string(b))
	assert.Contains(t, string(b), CodeBodyTimeout)

	done := make(chan answer, 1)
	go func() {
		ans := a.do("PUT", "/config", fixedDoc("app.test", "one"))
		done <- ans
	}()
	select {
	case <-persisting: // the first push holds the turn until release
	case <-time.After(10 * time.Second):
		t.Fatal("the first push never reached Persist")
	}
	ans := a.do("PUT", "/config", fixedDoc("app.test", "two"))
	assert.Equal(t, http.StatusGatewayTimeout, ans.status, ans.body)
	assert.Equal(t, CodeApplyTimeout, errorCode(t, ans))
	assert.Contains(t, ans.body, "it was not published")
	free()
	first := <-done
	assert.Equal(t, http.StatusOK, first.status, first.body)
	assert.Len(t, a.pub.History(), 1, "the push that had no turn was never published")
}
