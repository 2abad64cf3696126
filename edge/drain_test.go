package edge_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/edge"
)

// Drain answers the next request of every idle keep-alive connection
// with Connection: close before it shuts down, so a client that sends on
// its connection as the server drains gets its answer, never a reset;
// Shutdown alone closes those connections under it.
func TestDrainAnswersIdleKeepAlivesBeforeClosing(t *testing.T) {
	srv := start(t, edge.Config{HTTP: "127.0.0.1:0", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	})})
	addr := srv.Addr(edge.ListenerHTTP).String()
	const conns = 8
	type kept struct {
		c  net.Conn
		br *bufio.Reader
	}
	var cs []kept
	ask := func(k kept) (*http.Response, error) {
		if _, err := io.WriteString(k.c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n"); err != nil {
			return nil, err
		}
		res, err := http.ReadResponse(k.br, nil)
		if err == nil {
			_, err = io.ReadAll(res.Body)
		}
		return res, err
	}
	for range conns {
		c, err := net.DialTimeout("tcp", addr, patience)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		require.NoError(t, c.SetDeadline(time.Now().Add(patience)))
		k := kept{c, bufio.NewReader(c)}
		res, err := ask(k)
		require.NoError(t, err)
		require.False(t, res.Close, "a keep-alive connection")
		cs = append(cs, k)
	}

	drained := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		drained <- srv.Drain(ctx, patience)
	}()
	// The drain has begun once the listener refuses new connections.
	deadline := time.Now().Add(patience)
	for {
		c, err := net.DialTimeout("tcp", addr, patience)
		if err != nil {
			break
		}
		c.Close()
		require.True(t, time.Now().Before(deadline), "the listener still accepts while draining")
	}
	for i, k := range cs {
		res, err := ask(k)
		require.NoError(t, err, "connection %d: its request as the server drains", i)
		assert.Equal(t, 200, res.StatusCode)
		assert.True(t, res.Close, "connection %d: the last answer says Connection: close", i)
		_, err = k.br.ReadByte()
		assert.ErrorIs(t, err, io.EOF, "connection %d: closed after its last answer", i)
	}
	select {
	case err := <-drained:
		assert.NoError(t, err)
	case <-time.After(patience):
		t.Fatal("Drain did not return once every connection had closed")
	}
}
