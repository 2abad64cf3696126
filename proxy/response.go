package proxy

import (
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/paduraksa/paduraksa/upstream"
)

var bufPool = sync.Pool{New: func() any { b := make([]byte, 32*1024); return &b }}

// respond writes the upstream's response to the client and reports how
// the exchange ended; cut reports a response whose header was sent and
// whose body was not completed.
func (f *forward) respond(res *http.Response, d *upstream.Destination) (out upstream.Outcome, cut bool) {
	rt, w, r, rq, up, rid := f.rt, f.w, f.r, f.rq, f.upgrade, f.rid
	setAffinity := f.setAffinity && rt.cluster.Affinity != nil
	if res.StatusCode < 100 || res.StatusCode > 599 {
		// net/http's client reads any three digits; WriteHeader panics
		// below 100, and nothing above 599 is HTTP.
		res.Body.Close()
		rt.answer(w, r, rq, http.StatusBadGateway)
		return upstream.ResponseHeaderError, false
	}
	if res.StatusCode == http.StatusSwitchingProtocols {
		if up == "" {
			res.Body.Close()
			rt.answer(w, r, rq, http.StatusBadGateway)
			return upstream.ResponseHeaderError, false
		}
		if setAffinity {
			rt.cluster.Affinity.Set(w, r, d)
		}
		if err := switchProtocols(w, res, up, &f.o.idle); err != nil {
			rt.answer(w, r, rq, http.StatusBadGateway)
			return upstream.ResponseHeaderError, false
		}
		return upstream.Success, false
	}
	defer res.Body.Close()
	h := res.Header
	if res.Close && res.ProtoMajor == 1 && h["Connection"] == nil {
		// net/http deleted a Connection field that said close, with the
		// names it listed: the connection read them.
		f.o.conn.RemoveListed(h)
	}
	removeListed(h, h["Connection"])
	dst := w.Header()
	for k, vv := range h {
		if hopByHop(k) {
			continue
		}
		switch k {
		case "Alt-Svc":
			continue // the gate's to announce
		case "Server":
			if _, own := dst["Server"]; own {
				continue
			}
		case "X-Request-Id":
			if rid != nil {
				continue
			}
		}
		dst[k] = vv
	}
	if loc := dst["Location"]; len(loc) == 1 && rt.rw.active {
		if m, ok := rt.rw.mapLocation(loc[0], r.Host, f.o.req.Host, rq.Scheme); ok {
			dst["Location"] = []string{m}
		}
	}
	enc := codingNone
	if rt.site != nil {
		var varies bool
		if enc, varies = rt.site.comp.choose(r, res, up != ""); varies {
			varyOnAcceptEncoding(dst)
		}
		if enc != codingNone {
			representationHeaders(dst, enc)
		}
	}
	rt.respRules.apply(dst)
	if setAffinity {
		rt.cluster.Affinity.Set(w, r, d) // appends to the upstream's Set-Cookie
	}
	if len(res.Trailer) > 0 {
		// Announce the trailers and drop a known length: either would
		// stop HTTP/1.1 from chunking (an HTTP/2 upstream may send a
		// length with trailers), and the trailers would be lost.
		delete(dst, "Content-Length")
		keys := make([]string, 0, len(res.Trailer))
		for k := range res.Trailer {
			keys = append(keys, k)
		}
		dst["Trailer"] = keys
	}
	w.WriteHeader(res.StatusCode)
	f.o.idle.touch()
	f.o.idle.setBody(res.Body)

	events := isEventStream(h)
	fl := flushAtEnd
	switch {
	case events:
		fl = flushEachRead
	case res.ContentLength < 0:
		fl = flushAtPause
	}
	if events {
		// The head goes now, not with the first event: a client waits
		// for it (EventSource's open), and an event may be long in coming.
		if err := http.NewResponseController(w).Flush(); err != nil {
			return upstream.ClientAbort, true
		}
	}
	var rerr, werr error
	if enc == codingNone {
		rerr, werr = copyBody(w, w, res.Body, fl, nil, &f.o.idle)
	} else {
		e := getEncoder(enc, w)
		rerr, werr = copyBody(w, e, res.Body, fl, e, &f.o.idle)
		if rerr == nil && werr == nil {
			werr = e.Close()
		}
		putEncoder(enc, e)
	}
	switch {
	case werr != nil:
		return upstream.ClientAbort, true
	case rerr != nil:
		if r.Context().Err() != nil {
			return upstream.ClientAbort, true
		}
		return upstream.BodyError, true
	}
	for k, vv := range res.Trailer {
		dst[http.TrailerPrefix+k] = vv
	}
	return upstream.Success, false
}

func isEventStream(h http.Header) bool {
	ct := h["Content-Type"]
	return len(ct) == 1 && len(ct[0]) >= 17 && strings.EqualFold(ct[0][:17], "text/event-stream")
}

// flushing is when copyBody flushes what it forwarded to the client.
type flushing uint8

const (
	// flushAtEnd leaves a body of known length to net/http's buffers.
	flushAtEnd flushing = iota
	// flushAtPause flushes a body of unknown length when the upstream's
	// has nothing more at hand (see h1client.Exchange.Pending): as the
	// upstream flushed, not after every read. A chunk read in pieces
	// (a 16 KiB chunk comes as two reads) is one flush, and one deflate
	// block, instead of a flush and a sync-flushed block a read. A body
	// that cannot tell (net/http's client, HTTP/2) is flushed every read.
	flushAtPause
	// flushEachRead flushes after every read: an event stream.
	flushEachRead
)

// copyBody copies src to dst with a pooled buffer, stamping activity on
// every read, and flushes as fl says (the encoder first, if any) so data
// reaches the client as it arrives. It returns the read and the write
// error apart: only the first is the upstream's fault.
func copyBody(w http.ResponseWriter, dst io.Writer, src io.Reader, fl flushing, enc *compressWriter, it *idleTimer) (rerr, werr error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	rc := http.NewResponseController(w)
	var pending interface{ Pending() bool }
	if fl == flushAtPause {
		pending, _ = src.(interface{ Pending() bool })
	}
	for {
		n, err := src.Read(buf)
		if n > 0 {
			it.touch()
			if _, werr = dst.Write(buf[:n]); werr != nil {
				return nil, werr
			}
			if fl == flushEachRead || fl == flushAtPause && (pending == nil || !pending.Pending()) {
				if enc != nil {
					if werr = enc.Flush(); werr != nil {
						return nil, werr
					}
				}
				if werr = rc.Flush(); werr != nil {
					return nil, werr
				}
			}
		}
		if err == io.EOF {
			return nil, nil
		}
		if err != nil {
			return err, nil
		}
	}
}
