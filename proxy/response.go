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
		enc = rt.site.comp.choose(r, res, up != "")
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
	stream := res.ContentLength < 0 || events
	if events {
		// The head goes now, not with the first event: a client waits
		// for it (EventSource's open), and an event may be long in coming.
		if err := http.NewResponseController(w).Flush(); err != nil {
			return upstream.ClientAbort, true
		}
	}
	var rerr, werr error
	if enc == codingNone {
		rerr, werr = copyBody(w, w, res.Body, stream, nil, &f.o.idle)
	} else {
		e := getEncoder(enc, w)
		rerr, werr = copyBody(w, e, res.Body, stream, e, &f.o.idle)
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

// copyBody copies src to dst with a pooled buffer, stamping activity on
// every read; a stream is flushed after every read (the encoder first, if
// any) so data reaches the client as it arrives. It returns the read and
// the write error apart: only the first is the upstream's fault.
func copyBody(w http.ResponseWriter, dst io.Writer, src io.Reader, stream bool, enc *compressWriter, it *idleTimer) (rerr, werr error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	rc := http.NewResponseController(w)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			it.touch()
			if _, werr = dst.Write(buf[:n]); werr != nil {
				return nil, werr
			}
			if stream {
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
