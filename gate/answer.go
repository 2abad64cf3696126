package gate

import (
	"net/http"
	"strconv"
)

// answer is an Answer with every header value precomputed.
type answer struct {
	status        int
	contentType   []string
	contentLength []string
	server        []string
	body          []byte
}

func newAnswer(a Answer, server []string) *answer {
	ct := a.ContentType
	if ct == "" {
		ct = DefaultContentType
	}
	return &answer{
		status:        a.Status,
		contentType:   headerValue(ct),
		contentLength: headerValue(strconv.Itoa(len(a.Body))),
		server:        server,
		body:          a.Body,
	}
}

// write sends the answer. The header map is written by direct assignment of
// shared values: no allocation of ours.
func (a *answer) write(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h["Server"] = a.server
	h["Content-Type"] = a.contentType
	h["Content-Length"] = a.contentLength
	h["X-Content-Type-Options"] = nosniff
	w.WriteHeader(a.status)
	if r.Method != http.MethodHead {
		w.Write(a.body)
	}
}

var nosniff = headerValue("nosniff")

// gateStatuses are the statuses the gate and the proxy answer themselves.
var gateStatuses = [...]int{400, 403, 404, 408, 413, 414, 421, 429, 431, 499, 500, 502, 503, 504}

// answerSet holds the gate's own answers for one Server header value, in
// the order of gateStatuses. Hosts with the same Server value share one.
type answerSet [len(gateStatuses)]*answer

func (s *answerSet) get(status int) *answer {
	if s == nil {
		return nil
	}
	for i, st := range gateStatuses {
		if st == status {
			return s[i]
		}
	}
	return nil
}

// answerCache builds each distinct answer set once per Gate.
type answerCache map[string]*answerSet

func (c answerCache) get(server []string) *answerSet {
	if s := c[server[0]]; s != nil {
		return s
	}
	s := new(answerSet)
	for i, st := range gateStatuses {
		s[i] = newAnswer(Answer{Status: st, Body: []byte(strconv.Itoa(st) + " " + http.StatusText(st) + "\n")}, server)
	}
	c[server[0]] = s
	return s
}
