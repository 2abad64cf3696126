package h1client

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkRead reads raw through a CheckedConn armed for one request of the
// method, in reads of the sizes steps cycles through: the bytes the
// reader was handed, and the refusal.
func checkRead(raw []byte, method string, steps []byte) ([]byte, error) {
	c := NewCheckedConn(&wireConn{r: &stepper{b: raw, steps: steps}})
	c.Arm(method == http.MethodHead)
	var got []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			return got, nil
		}
		if err != nil {
			return got, err
		}
	}
}

// stepper reads b in pieces of the sizes steps cycles through (1 to 256
// bytes; all at once without steps).
type stepper struct {
	b     []byte
	steps []byte
	i     int
}

func (s *stepper) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	n := len(s.b)
	if len(s.steps) > 0 {
		n = int(s.steps[s.i%len(s.steps)]) + 1
		s.i++
	}
	n = copy(p, s.b[:min(n, len(s.b))])
	s.b = s.b[n:]
	return n, nil
}

// FuzzCheckerAgrees checks the CheckedConn against the client's own
// reader on the same bytes: it refuses exactly the answers the client
// refuses, however the bytes arrive, and when it refuses, what it handed
// over is not an answer net/http's reader completes.
func FuzzCheckerAgrees(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n2\r\nok\r\n0\r\nX-T: 1\r\n\r\n",
		"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX Bad: 1\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX-A: 1\r\n 2\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\nContent-Length: 0\n\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokXX0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nContent-Length: 5\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;" + strings.Repeat("e", 5000) + "\r\nok\r\n0\r\n\r\n",
		"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\nanything\n at all",
		strings.Repeat("HTTP/1.1 103 Early Hints\r\n\r\n", 6) + "HTTP/1.1 204\r\n\r\n",
	} {
		f.Add([]byte(s), false, []byte{})
		f.Add([]byte(s), false, []byte{0, 6, 2, 40})
	}
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"), true, []byte{1})
	f.Fuzz(func(t *testing.T, raw []byte, head bool, steps []byte) {
		if len(raw) > 64<<10 {
			return
		}
		method := "GET"
		if head {
			method = "HEAD"
		}
		passed, err := checkRead(raw, method, steps)
		first := len(raw)
		if len(steps) > 0 {
			first = int(steps[0]) + 1
		}
		if len(raw) > 0 && !bytes.HasPrefix([]byte("HTTP/"), raw[:min(len(raw), first, 5)]) {
			// Not HTTP/1.x text: unchecked, and no answer to net/http.
			require.NoError(t, err)
			if _, _, rerr := stdRead(raw, method); rerr == nil {
				t.Fatalf("net/http reads an answer that does not start with HTTP/\n%q", raw)
			}
			return
		}
		_, _, derr := directRead(raw, method)
		var refused *ResponseError
		if errors.As(derr, &refused) != (err != nil) {
			t.Fatalf("client: %v, checker: %v\n%q", derr, err, raw)
		}
		if err == nil {
			if !bytes.Equal(passed, raw) {
				t.Fatalf("an answer it accepts is not handed over whole\n%q", raw)
			}
			return
		}
		require.True(t, bytes.HasPrefix(raw, passed))
		if _, _, rerr := stdRead(passed, method); rerr == nil {
			t.Fatalf("net/http reads a whole answer from what the checker handed over before refusing (%v)\n%q", err, passed)
		}
	})
}

// TestCheckedConnWithholdsTheRefusedUnit: a refused unit that starts in
// a read is cut from it, the refusal comes with the next read, and every
// read after; what came before is handed over.
func TestCheckedConnWithholdsTheRefusedUnit(t *testing.T) {
	early := "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
	c := NewCheckedConn(&wireConn{r: strings.NewReader(early + "HTTP/1.1 200 OK\r\nX-A: 1\r\n 2\r\n\r\n")})
	c.Arm(false)
	buf := make([]byte, 1024)
	n, err := c.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, early, string(buf[:n]))
	for range 2 {
		n, err = c.Read(buf)
		assert.Zero(t, n)
		assert.ErrorIs(t, err, errObsFold)
	}
}

// TestCheckedConnReadsOnlyWhatItIsArmedFor: bytes before any arm, after
// the final response and on a connection that is not HTTP/1.x text pass
// unchecked.
func TestCheckedConnReadsOnlyWhatItIsArmedFor(t *testing.T) {
	bad := "HTTP/1.1 200 OK\r\nX Bad: 1\r\n\r\n"
	for _, tc := range []struct {
		name string
		raw  string
		arm  bool
	}{
		{"never armed", bad, false},
		{"after the response", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok" + bad, true},
		{"not HTTP/1.x", "\x16\x03\x01" + bad, true},
		{"a tunnel", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n" + bad, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCheckedConn(&wireConn{r: strings.NewReader(tc.raw)})
			if tc.arm {
				c.Arm(false)
			}
			got, err := io.ReadAll(c)
			require.NoError(t, err)
			assert.Equal(t, tc.raw, string(got))
		})
	}
}

// TestCheckedConnRemembersConnectionNames: the names the final head's
// Connection fields list are removed, close and keep-alive kept apart;
// an informational head's are not the final head's.
func TestCheckedConnRemembersConnectionNames(t *testing.T) {
	raw := "HTTP/1.1 103 Early Hints\r\nConnection: X-Early\r\n\r\n" +
		"HTTP/1.1 200 OK\r\nConnection: X-Secret, close\r\nconnection: x-other\r\nContent-Length: 0\r\n\r\n"
	c := NewCheckedConn(&wireConn{r: &stepper{b: []byte(raw), steps: []byte{4}}})
	c.Arm(false)
	_, err := io.ReadAll(c)
	require.NoError(t, err)
	h := http.Header{"X-Secret": {"1"}, "X-Other": {"1"}, "X-Early": {"1"}, "X-Public": {"1"}}
	c.RemoveListed(h)
	assert.Equal(t, http.Header{"X-Early": {"1"}, "X-Public": {"1"}}, h)
	var none *CheckedConn
	none.RemoveListed(h)
}

var _ net.Conn = (*CheckedConn)(nil)
