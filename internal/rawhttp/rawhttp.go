package rawhttp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/quic-go/qpack"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/quicvarint"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Field is one header field as sent: no case change, no check.
type Field struct{ Name, Value string }

// Request is one request: its fields, then optionally a body and
// trailers.
type Request struct {
	// Fields go out in order, pseudo-fields included, in one HEADERS
	// frame.
	Fields []Field
	// Body, when not nil, goes out in one DATA frame.
	Body []byte
	// Trailers, when not empty, go out in a second HEADERS frame.
	Trailers []Field
}

// Answer is how the server answered.
type Answer struct {
	// Status is the final response's :status; 0 when none came.
	Status int
	// Header holds the final response's other fields, their names in
	// canonical form.
	Header http.Header
	// Reset reports that the server refused the request without a
	// response: it reset the stream, or closed the connection. Code is
	// its error code (HTTP/2's RST_STREAM or GOAWAY code, HTTP/3's
	// stream or application error code), 0 for a bare close.
	Reset bool
	Code  uint64
}

// H2 sends req on stream 1 of a new HTTP/2 connection over c, which the
// caller dialed and closes, and reads the answer. It sends the client
// preface and an empty SETTINGS frame first, and acknowledges the
// server's. One request per connection.
func H2(ctx context.Context, c net.Conn, req Request) (Answer, error) {
	defer watch(ctx, c)()
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		return Answer{}, err
	}
	fr := http2.NewFramer(c, c)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if err := fr.WriteSettings(); err != nil {
		return Answer{}, err
	}
	// A server that refuses the request may close the connection before
	// we are done writing: its GOAWAY, or the close, is read below.
	end := req.Body == nil && len(req.Trailers) == 0
	err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hpackBlock(req.Fields), EndStream: end, EndHeaders: true})
	if err == nil && req.Body != nil {
		err = fr.WriteData(1, len(req.Trailers) == 0, req.Body)
	}
	if err == nil && len(req.Trailers) > 0 {
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hpackBlock(req.Trailers), EndStream: true, EndHeaders: true})
	}
	for {
		f, err := fr.ReadFrame()
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			return Answer{Reset: true}, nil // closed without an answer
		}
		if err != nil {
			return Answer{}, err
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				if err := fr.WriteSettingsAck(); err != nil {
					return Answer{}, err
				}
			}
		case *http2.MetaHeadersFrame:
			if f.StreamID != 1 {
				continue
			}
			st, err := strconv.Atoi(f.PseudoValue("status"))
			if err != nil {
				return Answer{}, errors.New("rawhttp: response without a numeric :status")
			}
			if st >= 200 {
				h := http.Header{}
				for _, hf := range f.RegularFields() {
					h.Add(hf.Name, hf.Value)
				}
				return Answer{Status: st, Header: h}, nil
			}
		case *http2.RSTStreamFrame:
			if f.StreamID == 1 {
				return Answer{Reset: true, Code: uint64(f.ErrCode)}, nil
			}
		case *http2.GoAwayFrame:
			if f.LastStreamID < 1 || f.ErrCode != http2.ErrCodeNo {
				return Answer{Reset: true, Code: uint64(f.ErrCode)}, nil
			}
		}
	}
}

func hpackBlock(fields []Field) []byte {
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	for _, f := range fields {
		enc.WriteField(hpack.HeaderField{Name: f.Name, Value: f.Value})
	}
	return b.Bytes()
}

// watch makes c's reads and writes return when ctx ends, and sets ctx's
// deadline on c. The returned function stops the watch.
func watch(ctx context.Context, c net.Conn) func() bool {
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	return context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
}

// HTTP/3 frame and stream types (RFC 9114 sections 6.2 and 7.2).
const (
	h3Data     = 0x00
	h3Headers  = 0x01
	h3Settings = 0x04
	h3Control  = 0x00 // the control stream's type
)

// H3 sends req on a new request stream of conn, a QUIC connection the
// caller dialed with "h3" and closes, and reads the answer. It opens the
// control stream with an empty SETTINGS frame first: one request per
// connection.
func H3(ctx context.Context, conn *quic.Conn, req Request) (Answer, error) {
	ctrl, err := conn.OpenUniStream()
	if err != nil {
		return Answer{}, err
	}
	if _, err := ctrl.Write([]byte{h3Control, h3Settings, 0}); err != nil {
		return Answer{}, err
	}
	str, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return Answer{}, err
	}
	if dl, ok := ctx.Deadline(); ok {
		str.SetDeadline(dl)
	}
	b := appendFrame(nil, h3Headers, qpackBlock(req.Fields))
	if req.Body != nil {
		b = appendFrame(b, h3Data, req.Body)
	}
	if len(req.Trailers) > 0 {
		b = appendFrame(b, h3Headers, qpackBlock(req.Trailers))
	}
	// A server that refuses the request may stop our sending side before
	// we are done: the reason is read below, as the reset of its side.
	if _, err := str.Write(b); err == nil {
		str.Close()
	}
	r := quicvarint.NewReader(str)
	for {
		typ, err := quicvarint.Read(r)
		if err != nil {
			return refused(err)
		}
		n, err := quicvarint.Read(r)
		if err != nil {
			return refused(err)
		}
		if n > 1<<20 {
			return Answer{}, errors.New("rawhttp: HTTP/3 frame over 1 MiB")
		}
		p := make([]byte, n)
		if _, err := io.ReadFull(r, p); err != nil {
			return refused(err)
		}
		if typ != h3Headers {
			continue
		}
		a, err := qpackAnswer(p)
		if err != nil {
			return Answer{}, err
		}
		if a.Status >= 200 {
			return a, nil
		}
	}
}

// refused reads a stream's error: a reset or a closed connection is the
// server's refusal; an end without a response header too.
func refused(err error) (Answer, error) {
	var se *quic.StreamError
	var ae *quic.ApplicationError
	var te *quic.TransportError
	switch {
	case errors.As(err, &se):
		return Answer{Reset: true, Code: uint64(se.ErrorCode)}, nil
	case errors.As(err, &ae):
		return Answer{Reset: true, Code: uint64(ae.ErrorCode)}, nil
	case errors.As(err, &te):
		return Answer{Reset: true, Code: uint64(te.ErrorCode)}, nil
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return Answer{Reset: true}, nil
	}
	return Answer{}, err
}

func appendFrame(b []byte, typ uint64, payload []byte) []byte {
	b = quicvarint.Append(b, typ)
	b = quicvarint.Append(b, uint64(len(payload)))
	return append(b, payload...)
}

func qpackBlock(fields []Field) []byte {
	var b bytes.Buffer
	enc := qpack.NewEncoder(&b)
	for _, f := range fields {
		enc.WriteField(qpack.HeaderField{Name: f.Name, Value: f.Value})
	}
	enc.Close()
	return b.Bytes()
}

// qpackAnswer decodes a response's field section.
func qpackAnswer(block []byte) (Answer, error) {
	a := Answer{Header: http.Header{}}
	next := qpack.NewDecoder().Decode(block)
	for {
		f, err := next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Answer{}, err
		}
		if f.Name == ":status" {
			if a.Status, err = strconv.Atoi(f.Value); err != nil {
				return Answer{}, errors.New("rawhttp: response without a numeric :status")
			}
			continue
		}
		a.Header.Add(f.Name, f.Value)
	}
	if a.Status == 0 {
		return Answer{}, errors.New("rawhttp: response without :status")
	}
	return a, nil
}
