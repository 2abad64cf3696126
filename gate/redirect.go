package gate

import (
	"net/http"
	"strings"
)

// httpsRedirect answers a plain-HTTP request with its HTTPS location. For
// an exact host name and the request target "/", the Location is
// precomputed (no allocation); any other target costs the one string and
// its header slice.
func (g *Gate) httpsRedirect(w http.ResponseWriter, r *http.Request, rq *Request, h *Host, key []byte) {
	uri := requestURI(r)
	var loc []string
	if l := h.httpsLoc[string(key)]; l != nil {
		if uri == "/" {
			loc = l.root
		} else {
			loc = []string{l.prefix + uri}
		}
	} else {
		name := string(key)
		if strings.IndexByte(name, ':') >= 0 {
			name = "[" + name + "]"
		}
		loc = []string{"https://" + name + h.httpsPort + uri}
	}
	w.Header()["Location"] = loc
	decorate(w, r, rq)
	h.httpsPage.write(w, r)
	if tr := rq.Tracer; tr != nil {
		tr.OnStep(Step{Kind: StepRedirect, Status: h.httpsPage.status, Name: loc[0], Reason: "https redirect"})
	}
}

// hostRedirect answers for a HostRedirect host.
func (g *Gate) hostRedirect(w http.ResponseWriter, r *http.Request, rq *Request, h *Host) {
	var loc []string
	switch uri := requestURI(r); {
	case h.dropLoc != nil:
		loc = h.dropLoc
	case uri == "/":
		loc = h.rootLoc
	default:
		loc = []string{h.Redirect.To + uri}
	}
	w.Header()["Location"] = loc
	decorate(w, r, rq)
	h.redirPage.write(w, r)
	if tr := rq.Tracer; tr != nil {
		tr.OnStep(Step{Kind: StepRedirect, Status: h.redirPage.status, Name: loc[0]})
	}
}

// requestURI returns the request's origin-form target.
func requestURI(r *http.Request) string {
	if u := r.RequestURI; len(u) > 0 && u[0] == '/' {
		return u
	}
	return r.URL.RequestURI()
}
