package proxyproto_test

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/proxyproto"
)

// chunkConn is a net.Conn that delivers data in chunks, then io.EOF: chunk
// i is sizes[i%len(sizes)]+1 bytes (1-256), or all that fits in the
// caller's buffer when sizes is empty. With eofWithData the last chunk
// comes with io.EOF, as io.Reader allows. Before each Read, onRead (if
// set) is given the number of bytes delivered so far. Writes are
// discarded, deadlines are recorded and never expire.
type chunkConn struct {
	data        []byte
	sizes       []byte
	eofWithData bool
	onRead      func(delivered int)

	off, next int
	deadline  time.Time
}

var (
	chunkRemote = &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 40000}
	chunkLocal  = &net.TCPAddr{IP: net.IPv4(10, 0, 0, 2), Port: 443}
)

// reset rewinds c to deliver data again from its start.
func (c *chunkConn) reset() { c.off, c.next, c.deadline = 0, 0, time.Time{} }

func (c *chunkConn) Read(b []byte) (int, error) {
	if c.onRead != nil {
		c.onRead(c.off)
	}
	if c.off == len(c.data) {
		return 0, io.EOF
	}
	end := len(c.data)
	if len(c.sizes) > 0 {
		end = min(end, c.off+int(c.sizes[c.next%len(c.sizes)])+1)
		c.next++
	}
	n := copy(b, c.data[c.off:end])
	c.off += n
	if c.off == len(c.data) && c.eofWithData {
		return n, io.EOF
	}
	return n, nil
}

func (c *chunkConn) Write(b []byte) (int, error)        { return len(b), nil }
func (c *chunkConn) Close() error                       { return nil }
func (c *chunkConn) LocalAddr() net.Addr                { return chunkLocal }
func (c *chunkConn) RemoteAddr() net.Addr               { return chunkRemote }
func (c *chunkConn) SetDeadline(t time.Time) error      { c.deadline = t; return nil }
func (c *chunkConn) SetReadDeadline(t time.Time) error  { c.deadline = t; return nil }
func (c *chunkConn) SetWriteDeadline(t time.Time) error { return nil }

// refTooLarge reports whether b begins a v2 header whose fixed part has
// arrived, is valid, and announces more than maxLen bytes.
func refTooLarge(b []byte, maxLen int) bool {
	if len(b) < 16 || string(b[:12]) != sig2 {
		return false
	}
	if _, _, err := proxyproto.Parse(b[:16]); err != nil && err != proxyproto.ErrIncomplete {
		return false
	}
	return 16+(int(b[14])<<8|int(b[15])) > maxLen
}

// refReadConn is what ReadConn must answer for data sent as one stream and
// then closed, with the header limit maxLen (0 or less, or more than
// MaxV2Len, meaning MaxV2Len): ErrHeaderTooLarge for a v2 header that
// refTooLarge refuses; otherwise Parse over the whole input decides, and an
// incomplete header is ErrNoProxyHeader for an empty stream and
// ErrIncomplete for any other.
func refReadConn(data []byte, maxLen int) (proxyproto.Header, int, error) {
	if maxLen <= 0 || maxLen > proxyproto.MaxV2Len {
		maxLen = proxyproto.MaxV2Len
	}
	if refTooLarge(data, maxLen) {
		return proxyproto.Header{}, 0, proxyproto.ErrHeaderTooLarge
	}
	h, n, err := proxyproto.Parse(data)
	if err == proxyproto.ErrIncomplete && len(data) == 0 {
		err = proxyproto.ErrNoProxyHeader
	}
	return h, n, err
}

// sameError reports whether got is the error want stands for: the same
// sentinel, or a ParseError with the same reason.
func sameError(got, want error) bool {
	var gp, wp *proxyproto.ParseError
	if errors.As(want, &wp) {
		return errors.As(got, &gp) && gp.Reason == wp.Reason
	}
	return errors.Is(got, want) && !errors.As(got, &gp)
}

// FuzzReadConn feeds ReadConn from a connection that delivers the input in
// fuzzer-chosen chunk sizes and checks it against refReadConn: the same
// header, or the same error, whatever the chunks; the bytes after the
// header come out of the returned Conn unchanged; the read deadline is
// cleared on success; and ReadConn never reads again once the bytes it
// holds decide the answer (on a socket, that read could wait for bytes
// that never come).
func FuzzReadConn(f *testing.F) {
	for _, v := range vectors() {
		f.Add([]byte(v.hdr+v.tail), []byte{0}, int32(0), false)
		f.Add([]byte(v.hdr+v.tail), []byte{11, 200, 3}, int32(0), true)
	}
	big := v2(0x21, 0x11, block4, tlv(0xE5, string(make([]byte, 600))))
	f.Add([]byte(big+"GET"), []byte{255}, int32(0), false)
	f.Add([]byte(big+"GET"), []byte{255}, int32(300), false)
	f.Add([]byte(v2(0x21, 0x11, block4)+"GET"), []byte(nil), int32(20), true)
	f.Add([]byte(v2(0x21, 0x11, block4)), []byte{15, 0}, int32(28), false)
	f.Add([]byte(v2len(0x11, 0x11, 900, block4)), []byte{15}, int32(100), false)
	// v1 lines longer than the Conn's own buffer (104 bytes), with payload
	// in the read that completes the line and in later ones.
	for _, n := range []int{105, 107} {
		long := "PROXY UNKNOWN " + strings.Repeat("f", n-len("PROXY UNKNOWN \r\n")) + "\r\n"
		f.Add([]byte(long+"GET"), []byte(nil), int32(0), false)
		f.Add([]byte(long+"GET"), []byte{103, 0}, int32(0), true)
	}
	f.Fuzz(func(t *testing.T, data, sizes []byte, maxLen int32, eofWithData bool) {
		if len(data) > proxyproto.MaxV2Len+64 {
			return
		}
		wantH, wantN, wantErr := refReadConn(data, int(maxLen))
		limit := int(maxLen)
		if limit <= 0 || limit > proxyproto.MaxV2Len {
			limit = proxyproto.MaxV2Len
		}
		inHeader := true
		raw := &chunkConn{data: data, sizes: sizes, eofWithData: eofWithData}
		raw.onRead = func(delivered int) {
			if !inHeader || delivered == 0 {
				return
			}
			p := data[:delivered]
			if _, _, err := proxyproto.Parse(p); err != proxyproto.ErrIncomplete || refTooLarge(p, limit) {
				t.Fatalf("ReadConn read again after %d bytes, which decide %v", delivered, err)
			}
		}
		c, err := proxyproto.ReadConn(raw, time.Now().Add(time.Hour), int(maxLen))
		inHeader = false
		if wantErr != nil {
			if err == nil || !sameError(err, wantErr) {
				t.Fatalf("ReadConn = %v, want %v", err, wantErr)
			}
			return
		}
		if err != nil {
			t.Fatalf("ReadConn = %v, want the %d-byte header %s", err, wantN, describe(wantH))
		}
		if got, want := describe(c.Header()), describe(wantH); got != want {
			t.Fatalf("header\n got %s\nwant %s", got, want)
		}
		if !raw.deadline.IsZero() {
			t.Fatal("read deadline not cleared")
		}
		if h := c.Header(); h.Command == proxyproto.Proxy && h.Protocol.IsIP() {
			want := netip.AddrPortFrom(h.Source.Addr().Unmap(), h.Source.Port()).String()
			if got := c.RemoteAddr().String(); got != want {
				t.Fatalf("RemoteAddr %s, want %s", got, want)
			}
		} else if h.Command == proxyproto.Local && c.RemoteAddr() != chunkRemote {
			t.Fatalf("RemoteAddr of a LOCAL header %v, want the socket's %v", c.RemoteAddr(), chunkRemote)
		}
		rest, err := io.ReadAll(c)
		if err != nil || string(rest) != string(data[wantN:]) {
			t.Fatalf("payload %q (%v), want %q", rest, err, data[wantN:])
		}
	})
}
