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
		ct = "text/plain; charset=utf-8"
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
var gateStatuses = []int{400, 403, 404, 408, 413, 414, 421, 429, 431, 499, 500, 502, 503, 504}

func buildAnswers(server []string) map[int]*answer {
	m := make(map[int]*answer, len(gateStatuses))
	for _, s := range gateStatuses {
		m[s] = newAnswer(Answer{Status: s, Body: []byte(strconv.Itoa(s) + " " + http.StatusText(s) + "\n")}, server)
	}
	return m
}
