package admin

import (
	"crypto/tls"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/telemetry"
)

// MaxRequestsLimit is the largest limit GET /requests takes.
const MaxRequestsLimit = 10000

// RecentRequests is the answer of GET /requests.
type RecentRequests struct {
	// Requests are the recent requests that pass the filters, newest
	// first, at most the limit.
	Requests []RecentRequest `json:"requests"`
	// Kept counts the requests the sample holds, Matched those that pass
	// the filters.
	Kept    int `json:"kept"`
	Matched int `json:"matched"`
}

// RecentRequest is one recent request. Method, Host and Path are as the
// client sent them (Path without the query), never interpreted; no
// request header is kept, so none is shown.
type RecentRequest struct {
	Time            time.Time `json:"time,omitzero"`
	DurationSeconds float64   `json:"durationSeconds"`
	Method          string    `json:"method"`
	Host            string    `json:"host"`
	Path            string    `json:"path"`
	Proto           string    `json:"proto"`
	// Status is the status answered, 0 for a request dropped without an
	// answer.
	Status int `json:"status"`
	// HostID and Route name the host and route that matched.
	HostID string `json:"hostId,omitempty"`
	Route  string `json:"route,omitempty"`
	// Upstream and Destination are where the last attempt went.
	Upstream    string `json:"upstream,omitempty"`
	Destination string `json:"destination,omitempty"`
	// Client is the resolved client address, Peer the connection's.
	Client string `json:"client,omitempty"`
	Peer   string `json:"peer,omitempty"`
	// TLS is the connection's TLS version ("TLS 1.3"), SNI its server
	// name; both absent over plain HTTP.
	TLS string `json:"tls,omitempty"`
	SNI string `json:"sni,omitempty"`
	// Error is the kind of failure the answer stands for ("connect",
	// "timeout", ...).
	Error string `json:"error,omitempty"`
}

// requestFilter is what GET /requests keeps.
type requestFilter struct {
	host, upstream string
	status, class  int // an exact status, or a class (4 for 4xx)
	limit          int
}

// parseRequestFilter reads the query of GET /requests: host (as
// received, with or without its port, case-insensitive), status (404 or
// 4xx), upstream (its ID) and limit (1 to MaxRequestsLimit). Any other
// parameter, a repeated one or a bad value is a problem at its name.
func parseRequestFilter(q url.Values) (requestFilter, *Problem) {
	f := requestFilter{limit: MaxRequestsLimit}
	bad := func(name, msg string) (requestFilter, *Problem) {
		return requestFilter{}, &Problem{Code: CodeFilterInvalid, Path: name, Message: msg}
	}
	for name, vs := range q {
		if len(vs) != 1 {
			return bad(name, name+" is given more than once")
		}
		v := vs[0]
		switch name {
		case "host", "upstream":
			if v == "" || len(v) > 255 || strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
				return bad(name, name+" is 1 to 255 characters without spaces or controls")
			}
			if name == "host" {
				f.host = v
			} else {
				f.upstream = v
			}
		case "status":
			if len(v) == 3 && v[1:] == "xx" && v[0] >= '1' && v[0] <= '5' {
				f.class = int(v[0] - '0')
				break
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 599 || (n > 0 && n < 100) {
				return bad(name, `status is a status code (404, or 0 for a dropped request) or a class ("4xx")`)
			}
			f.status = n
			if n == 0 {
				f.status = -1 // 0: dropped
			}
		case "limit":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > MaxRequestsLimit {
				return bad(name, "limit is 1 to "+strconv.Itoa(MaxRequestsLimit))
			}
			f.limit = n
		default:
			return bad(name, "GET /requests takes host, status, upstream and limit, not "+strconv.Quote(name))
		}
	}
	return f, nil
}

// keeps reports whether the filter passes rec.
func (f *requestFilter) keeps(rec *telemetry.Record) bool {
	if f.host != "" && !strings.EqualFold(rec.Host, f.host) {
		h, _, ok := strings.Cut(rec.Host, ":")
		if strings.HasPrefix(rec.Host, "[") {
			h, _, ok = strings.Cut(rec.Host, "]:")
			h += "]"
		}
		if !ok || !strings.EqualFold(h, f.host) {
			return false
		}
	}
	switch {
	case f.upstream != "" && rec.Upstream != f.upstream,
		f.status > 0 && rec.Status != f.status,
		f.status < 0 && rec.Status != 0,
		f.class != 0 && rec.Status/100 != f.class:
		return false
	}
	return true
}

// getRequests answers the recent requests of Config.Recent.
func (h *Handler) getRequests(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Recent == nil {
		writeError(w, http.StatusNotFound, CodeNotFound, "no sample of recent requests is configured")
		return
	}
	f, prob := parseRequestFilter(r.URL.Query())
	if prob != nil {
		writeJSON(w, http.StatusBadRequest, ErrorBody{Error: *prob})
		return
	}
	recs := h.cfg.Recent()
	res := RecentRequests{Requests: []RecentRequest{}, Kept: len(recs)}
	for i := range recs {
		rec := &recs[i]
		if !f.keeps(rec) {
			continue
		}
		res.Matched++
		if len(res.Requests) < f.limit {
			res.Requests = append(res.Requests, recentRequest(rec))
		}
	}
	writeJSON(w, http.StatusOK, res)
}

func recentRequest(rec *telemetry.Record) RecentRequest {
	out := RecentRequest{
		Time: rec.Start, DurationSeconds: rec.Duration.Seconds(), Method: rec.Method, Host: rec.Host, Path: rec.Path, Proto: rec.Proto,
		Status: rec.Status, HostID: rec.HostID, Route: rec.RouteID, Upstream: rec.Upstream, Destination: rec.Destination,
		SNI: rec.SNI, Error: rec.Error,
	}
	if rec.Client.IsValid() {
		out.Client = rec.Client.String()
	}
	if rec.Peer.IsValid() {
		out.Peer = rec.Peer.String()
	}
	if rec.TLSVersion != 0 {
		out.TLS = tls.VersionName(rec.TLSVersion)
	}
	return out
}
