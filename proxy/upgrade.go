package proxy

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
)

// upgradeType returns the protocol an HTTP/1.1 request asks to switch to:
// its Upgrade value when Connection names upgrade. h2c is never forwarded
// (a client would tunnel HTTP/2 past the gate's path and host decisions),
// so a request offering it gets "".
func upgradeType(r *http.Request) string {
	if r.ProtoMajor != 1 || !containsToken(r.Header["Connection"], "upgrade") {
		return ""
	}
	up := r.Header["Upgrade"]
	if len(up) == 0 || up[0] == "" || containsToken(up, "h2c") {
		return ""
	}
	return up[0]
}

// errUpgradeMismatch reports a 101 for a protocol the client did not ask.
var errUpgradeMismatch = errors.New("proxy: upstream switched to a protocol the client did not ask for")

// switchProtocols completes an upgrade the upstream accepted: checks the
// protocol, writes the 101 with the upstream's fields (minus hop-by-hop
// ones) on the hijacked client connection, hands over bytes the client sent
// early, then pipes both ways until either end closes or the idle timer
// cuts the tunnel. It returns an error only when nothing was written to the
// client yet.
func switchProtocols(w http.ResponseWriter, res *http.Response, want string, it *idleTimer) error {
	got := res.Header["Upgrade"]
	if len(got) == 0 || !strings.EqualFold(got[0], want) {
		res.Body.Close()
		return errUpgradeMismatch
	}
	back, ok := res.Body.(io.ReadWriteCloser)
	if !ok {
		res.Body.Close()
		return errors.New("proxy: 101 response without a writable body")
	}
	proto := got[0]
	removeHopByHop(res.Header)
	delete(res.Header, "Alt-Svc")
	dst := w.Header()
	for k, vv := range res.Header {
		switch old, own := dst[k]; {
		case own && k == "Server":
			continue
		case own && k == "Set-Cookie":
			vv = append(old[:len(old):len(old)], vv...)
		}
		dst[k] = vv
	}
	dst["Connection"] = connUpgrade
	dst["Upgrade"] = []string{proto}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		back.Close()
		return err
	}
	defer conn.Close()
	defer back.Close()
	if !it.setConns(conn, back) {
		return nil
	}
	brw.WriteString("HTTP/1.1 101 Switching Protocols\r\n")
	dst.Write(brw)
	brw.WriteString("\r\n")
	if err := brw.Flush(); err != nil {
		return nil
	}
	if n := brw.Reader.Buffered(); n > 0 {
		early, _ := brw.Reader.Peek(n)
		if _, err := back.Write(early); err != nil {
			return nil
		}
	}
	pipe(conn, back, it)
	return nil
}

// pipe copies both ways until both directions end; an error in either
// closes both. A clean end of one direction is passed on as a half-close
// where the connection supports it.
func pipe(client net.Conn, back io.ReadWriteCloser, it *idleTimer) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := copyActive(back, client, it); err != nil || !closeWrite(back) {
			client.Close()
			back.Close()
		}
	}()
	if err := copyActive(client, back, it); err != nil || !closeWrite(client) {
		client.Close()
		back.Close()
	}
	<-done
}

func closeWrite(c any) bool {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite() == nil
	}
	return false
}

// copyActive copies src to dst with a pooled buffer, stamping activity on
// every read. It returns nil at src's EOF.
func copyActive(dst io.Writer, src io.Reader, it *idleTimer) error {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			it.touch()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}
