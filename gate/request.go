package gate

import (
	"net/http"
	"net/netip"
	"time"

	"github.com/paduraksa/paduraksa/internal/ipaddr"
	"github.com/paduraksa/paduraksa/telemetry"
)

// Request is the per-request state the gate hands to a [Target]. It is
// owned by the gate and reused after the target returns: a target must not
// keep it. The zero Request is one no gate decided (a target called by a
// test): no host, route or client, and Answer writes the built-in
// answers.
type Request struct {
	// Host and Route are what the gate matched, from the same Gate.
	Host  *Host
	Route *Route
	// Match says how the host name matched.
	Match HostMatch
	// Peer is the connection's peer (the PROXY-protocol source when there
	// was one); Client the resolved client address.
	Peer         netip.AddrPort
	Client       netip.Addr
	ClientSource ClientSource
	// ProxyProtocol reports that Peer came from a PROXY header.
	ProxyProtocol bool
	// TrustedPeer reports that the peer is a trusted proxy.
	TrustedPeer bool
	// CloudflareTrusted reports Cloudflare mode and a trusted peer: only
	// then may the forwarder keep the client's cf-* and True-Client-IP
	// headers; otherwise it must strip them.
	CloudflareTrusted bool
	// Probe reports that the client is a configured probe source.
	Probe bool
	// Scheme is the trusted request scheme: "http" or "https".
	Scheme string
	// Path is the path view routes and rules matched on, and
	// ForwardPath the spelling a target forwards (see [PathView]). A
	// target forwards ForwardPath, never r.URL.Path or r.RequestURI.
	Path        string
	ForwardPath string
	// Upstream holds the headers policies established for the upstream
	// ([Request.SetUpstreamHeader]); nil when none did.
	Upstream http.Header
	// MaxBodyBytes is the body limit in force (0: none).
	MaxBodyBytes int64
	// Conn is the connection's [ConnInfo], or nil.
	Conn *ConnInfo
	// DryRun is set by [Gate.Simulate]: policies must not change state
	// or call out.
	DryRun bool
	// Tracer receives the target's steps too; nil in production.
	Tracer *Tracer
	// Record is the request's record for the metrics, the observer and
	// the access log. The gate fills what it decided, the status and the
	// bytes answered; a target adds what happened upstream (Upstream,
	// Destination, Error, RequestID, Retries, TTFB, BytesIn) and may set
	// Status itself for an answer nobody writes (499).
	Record telemetry.Record

	gate     *Gate
	rw       recorder
	metrics  *RouteMetrics
	start    time.Duration // since epoch
	returned bool          // the pipeline returned without panicking
	inFlight bool          // counted in metrics.InFlight
	keyBuf   [maxHostLen]byte
	// num is the ipaddr.Num of numOf, for clientNum.
	num   ipaddr.Num
	numOf netip.Addr
	kept  *requestKept // made on first use, kept across uses of a pooled Request
}

// requestKept is what a pooled Request keeps across requests: a
// template route's values (written by each match on one) and the scratch
// buffer of regular expressions. Few requests need it, and a Request
// that holds it only by pointer costs less to clear.
type requestKept struct {
	pathValues [MaxPathValues]segRange
	scratch    []byte
}

// keep returns the request's kept part, made on first use.
func (rq *Request) keep() *requestKept {
	if rq.kept == nil {
		rq.kept = new(requestKept)
	}
	return rq.kept
}

// clientNum returns the [ipaddr.Num] of rq.Client, converted once for
// every policy that looks the client up (trusted proxies, probe sources,
// allow and deny lists, rate limits); it is recomputed if Client changed.
// The invalid address gives the zero Num: check Client.IsValid first.
func (rq *Request) clientNum() ipaddr.Num {
	if rq.numOf != rq.Client {
		rq.num, rq.numOf = ipaddr.NumOf(rq.Client), rq.Client
	}
	return rq.num
}

// maxScratch bounds the scratch buffer a pooled Request keeps.
const maxScratch = 64 << 10

// Answer writes the gate's own answer for status (502, 503, 504, 404, ...)
// with the host's response headers. Unknown statuses get a bare status line.
func (rq *Request) Answer(w http.ResponseWriter, r *http.Request, status int) {
	if g := rq.gate; g != nil && g.answerHook != nil && !rq.DryRun && g.answerHook(w, r, rq, status) {
		if tr := rq.Tracer; tr != nil {
			tr.OnStep(Step{Kind: StepAnswer, Status: status, Reason: "answer hook"})
		}
		return
	}
	var answers *answerSet
	switch {
	case rq.Host != nil:
		answers = rq.Host.answers
	case rq.gate != nil:
		answers = rq.gate.defaultAnswers
	}
	if a := answers.get(status); a != nil {
		a.write(w, r)
	} else {
		w.WriteHeader(status)
	}
	if tr := rq.Tracer; tr != nil {
		tr.OnStep(Step{Kind: StepAnswer, Status: status})
	}
}
