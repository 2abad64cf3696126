package simulate

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/paduraksa/paduraksa/snapshot"
)

// Defaults of the zero fields of a [HandlerConfig].
const (
	// DefaultMaxRequestBytes bounds a request body: room for a draft of
	// a few thousand hosts (a draft of 90 000 hosts, 14 MiB, compiles in
	// about 3 s of CPU).
	DefaultMaxRequestBytes = 16 << 20
	// DefaultMaxConcurrent is how many calls run at once.
	DefaultMaxConcurrent = 2
	// DefaultTimeout is a call's deadline.
	DefaultTimeout = 10 * time.Second
	// DefaultMaxProbes is how many probes a diff simulates: the requests
	// a default [Sample] holds.
	DefaultMaxProbes = DefaultSampleSize
)

// HandlerConfig configures [NewHandler].
type HandlerConfig struct {
	// Store is the live gateway; nil means none, and a call that names
	// no draft and no revision is refused (simulate.target.none).
	Store *snapshot.Store
	// Compiler is the publisher's compiler, whose settings drafts compile
	// with (see [Target.Compiler]); nil means the built-in ones.
	Compiler *snapshot.Compiler
	// Revision returns an applied revision the publisher kept, or nil;
	// nil means only the live revision can be named.
	Revision func(id uint64) *snapshot.Snapshot
	// Listener is the daemon's connection stage.
	Listener Listener
	// Sample holds the recent requests a diff replays when its request
	// names none; nil means a diff needs its requests.
	Sample *Sample
	// MaxRequestBytes bounds a request body; 0 means
	// [DefaultMaxRequestBytes].
	MaxRequestBytes int64
	// MaxConcurrent bounds the calls served at once, from reading the
	// request to the end of the work; a call beyond it is answered 429
	// with Retry-After at once ([CodeBusy]), never queued. 0 means
	// [DefaultMaxConcurrent].
	MaxConcurrent int
	// Timeout is a call's deadline, from its start: reading the request,
	// compiling a draft, the simulations. A call past it is answered 503
	// with Retry-After ([CodeDeadline]); writing the answer gets Timeout
	// again. 0 means [DefaultTimeout].
	Timeout time.Duration
	// MaxProbes bounds the probes of a diff: a request with more is
	// refused with 413 ([CodeDiffProbesTooMany]), and of the Sample only
	// the newest MaxProbes are replayed (the report says how many were
	// not). 0 means [DefaultMaxProbes]; more than [DefaultMaxDiffProbes]
	// is taken as that, which [Diff] simulates at most.
	MaxProbes int
}

// NewHandler returns the simulator's HTTP API, for an admin listener to
// mount under its prefix:
//
//	POST /simulate       {"probe": {...}, "draft": {...} | "revision": N}  → a Result
//	POST /simulate/diff  {"draft": {...}, "probes": [...]}                 → a DiffReport
//
// A probe is {"method", "url", "header": {"Name": ["value"]}, "peer":
// "192.0.2.1:5000", "proxyProtocol": "203.0.113.7:4000", "tls": {"sni",
// "noSni", "alpn": [...], "version": "1.2" | "1.3"}, "httpVersion"}; only
// "url" is required. Without a draft or a revision the live config
// answers; a diff compares the live config with the draft over the
// probes, by default the handler's Sample. Problems answer 400 (the
// request or the probe), 404 (an unknown revision), 408 (the request
// did not arrive within Timeout), 413 (a body over MaxRequestBytes, more
// probes than MaxProbes), 422 (a draft a publish would refuse, with every
// problem), 429 (MaxConcurrent calls are running) or 503 (nothing
// published yet, or the work did not finish within Timeout), each as
// {"errors": [{"code", "path", "message"}]}; 429 and 503 at the deadline
// carry Retry-After.
//
// # Cost
//
// A call costs at most: MaxRequestBytes read and decoded; one draft
// compiled, whole (a draft is not cut short at the deadline, and the call
// keeps its place among MaxConcurrent until the compile ends); for a
// diff, two simulations per probe, at most MaxProbes of them, each about
// 0.1 ms of CPU over plain HTTP/1.1, 1 ms with TLS and 2 ms over HTTP/3,
// whatever body length a probe declares, and a few microseconds more per
// header line (at most [MaxProbeHeaderLines] a probe); all of it within
// Timeout, on about one core. Decoding a request of MaxRequestBytes into
// probes takes about 0.5 s of CPU at worst (millions of header values).
// So the API uses at most MaxConcurrent cores, and a caller who sends
// more gets 429 at once.
//
// Why 503 at the deadline: the time ran out on this server, in its own
// work (a busy machine makes simulations slower), with no upstream waited
// for (504) and the request read whole (else 408); Retry-After says when
// the calls that hold the other places are over, Timeout at most. 429
// says that the caller, who holds every place, sends more than the API
// serves at once.
func NewHandler(cfg HandlerConfig) http.Handler {
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxProbes <= 0 {
		cfg.MaxProbes = DefaultMaxProbes
	}
	cfg.MaxProbes = min(cfg.MaxProbes, DefaultMaxDiffProbes)
	h := &handler{cfg: cfg, places: make(chan struct{}, cfg.MaxConcurrent)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /simulate", h.call(h.simulate))
	mux.HandleFunc("POST /simulate/diff", h.call(h.diff))
	return mux
}

type handler struct {
	cfg    HandlerConfig
	places chan struct{} // one value per call in progress
}

// Codes of the handler's own refusals.
const (
	CodeRequestInvalid    = "simulate.request.invalid"     // the body is not the JSON the endpoint takes
	CodeRequestTooLarge   = "simulate.request.tooLarge"    // the body is over MaxRequestBytes
	CodeRevisionUnknown   = "simulate.revision.unknown"    // no kept revision has the number
	CodeDiffProbesNeeded  = "simulate.diff.probes.empty"   // no probes and no sample
	CodeDiffProbesTooMany = "simulate.diff.probes.tooMany" // more probes than MaxProbes
	CodeBusy              = "simulate.busy"                // MaxConcurrent calls are in progress
	CodeInternal          = "simulate.internal"            // a failure of the simulation itself
)

// work is what a call computes once its request is read: the answer and
// the path of the probe it simulates ("" for a diff).
type work func(ctx context.Context) (answer any, at string, err error)

// call serves one endpoint within the handler's bounds: a place among
// MaxConcurrent or 429 at once, the deadline for reading the request and
// for the work, and 503 when it passes. The work runs on a goroutine of
// its own that holds the place until it returns, so that a compile which
// outlasts the deadline still counts: the answer is on time, and the
// work in progress never exceeds MaxConcurrent calls.
func (h *handler) call(read func(w http.ResponseWriter, r *http.Request) (work, bool)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case h.places <- struct{}{}:
		default:
			w.Header().Set("Retry-After", "1")
			h.fail(w, http.StatusTooManyRequests, &ProbeError{Code: CodeBusy,
				Msg: strconv.Itoa(h.cfg.MaxConcurrent) + " simulations are in progress, the most served at once"})
			return
		}
		held := true
		defer func() {
			if held {
				<-h.places
			}
		}()
		deadline := time.Now().Add(h.cfg.Timeout)
		ctx, cancel := context.WithDeadline(r.Context(), deadline)
		defer cancel()
		rc := http.NewResponseController(w)
		rc.SetReadDeadline(deadline) // a writer without deadlines has the server's
		job, ok := read(w, r)
		if !ok {
			return
		}
		type result struct {
			v   any
			at  string
			err error
		}
		done := make(chan result, 1)
		held = false
		go func() {
			v, at, err := job(ctx)
			<-h.places // before the answer: a caller who has it finds the place free
			done <- result{v, at, err}
		}()
		var res result
		select {
		case res = <-done:
		case <-ctx.Done():
			res.err = ended(ctx)
		}
		rc.SetWriteDeadline(time.Now().Add(h.cfg.Timeout))
		switch {
		case errors.Is(res.err, context.DeadlineExceeded) || errors.Is(res.err, context.Canceled):
			h.deadline(w)
		case res.err != nil:
			h.failRun(w, res.err, res.at)
		default:
			writeJSON(w, http.StatusOK, res.v)
		}
	}
}

// deadline answers a call whose work did not finish within Timeout.
func (h *handler) deadline(w http.ResponseWriter) {
	w.Header().Set("Retry-After", strconv.Itoa(int((h.cfg.Timeout+time.Second-1)/time.Second)))
	h.fail(w, http.StatusServiceUnavailable, &ProbeError{Code: CodeDeadline,
		Msg: "the simulation did not finish within the deadline of " + h.cfg.Timeout.String()})
}

// wireProbe is a Probe as the API spells it.
type wireProbe struct {
	Method        string      `json:"method"`
	URL           string      `json:"url"`
	Header        http.Header `json:"header"`
	Peer          string      `json:"peer"`
	ProxyProtocol string      `json:"proxyProtocol"`
	TLS           *wireTLS    `json:"tls"`
	HTTPVersion   int         `json:"httpVersion"`
}

type wireTLS struct {
	SNI     string   `json:"sni"`
	NoSNI   bool     `json:"noSni"`
	ALPN    []string `json:"alpn"`
	Version string   `json:"version"`
}

var tlsVersions = map[string]uint16{"": 0, "1.0": tls.VersionTLS10, "1.1": tls.VersionTLS11, "1.2": tls.VersionTLS12, "1.3": tls.VersionTLS13}

// probe returns the Probe, or the problems of its wire form under at.
func (w *wireProbe) probe(errs *problem.List, at string) Probe {
	p := Probe{Method: w.Method, URL: w.URL, Header: w.Header, HTTPVersion: w.HTTPVersion}
	addr := func(field, s string) netip.AddrPort {
		if s == "" {
			return netip.AddrPort{}
		}
		ap, err := ParsePeer(s)
		if err != nil {
			errs.Add(CodeProbePeerInvalid, problem.Join(at, field), strconv.Quote(s)+" is not an IP address with an optional port")
		}
		return ap
	}
	p.Peer = addr("peer", w.Peer)
	p.ProxyProtocol = addr("proxyProtocol", w.ProxyProtocol)
	if w.TLS != nil {
		v, ok := tlsVersions[w.TLS.Version]
		if !ok {
			errs.Add(CodeProbeTLSVersionInvalid, problem.Join(at, "tls.version"), strconv.Quote(w.TLS.Version)+" is not 1.0, 1.1, 1.2 or 1.3")
		}
		p.TLS = &TLS{SNI: w.TLS.SNI, NoSNI: w.TLS.NoSNI, ALPN: w.TLS.ALPN, Version: v}
	}
	return p
}

type simulateRequest struct {
	Probe    *wireProbe      `json:"probe"`
	Draft    json.RawMessage `json:"draft"`
	Revision uint64          `json:"revision"`
}

type diffRequest struct {
	Draft  json.RawMessage `json:"draft"`
	Probes []wireProbe     `json:"probes"`
}

// simulate reads a POST /simulate.
func (h *handler) simulate(w http.ResponseWriter, r *http.Request) (work, bool) {
	var req simulateRequest
	if !h.read(w, r, &req) {
		return nil, false
	}
	if req.Probe == nil {
		h.fail(w, http.StatusBadRequest, &ProbeError{Code: CodeRequestInvalid, Path: "probe", Msg: "a probe is required"})
		return nil, false
	}
	var errs problem.List
	probe := req.Probe.probe(&errs, "probe")
	if err := errs.Err(); err != nil {
		h.fail(w, http.StatusBadRequest, err)
		return nil, false
	}
	target, ok := h.target(w, req.Draft, req.Revision)
	if !ok {
		return nil, false
	}
	return func(ctx context.Context) (any, string, error) {
		res, err := RunContext(ctx, target, probe)
		return res, "probe", err
	}, true
}

// diff reads a POST /simulate/diff.
func (h *handler) diff(w http.ResponseWriter, r *http.Request) (work, bool) {
	var req diffRequest
	if !h.read(w, r, &req) {
		return nil, false
	}
	if len(req.Draft) == 0 {
		h.fail(w, http.StatusBadRequest, &ProbeError{Code: CodeRequestInvalid, Path: "draft", Msg: "a diff needs a draft"})
		return nil, false
	}
	if n := len(req.Probes); n > h.cfg.MaxProbes {
		h.fail(w, http.StatusRequestEntityTooLarge, &ProbeError{Code: CodeDiffProbesTooMany, Path: "probes",
			Msg: strconv.Itoa(n) + " probes; a diff takes at most " + strconv.Itoa(h.cfg.MaxProbes)})
		return nil, false
	}
	var probes []Probe
	var errs problem.List
	for i := range req.Probes {
		probes = append(probes, req.Probes[i].probe(&errs, problem.Index("probes", i)))
	}
	if err := errs.Err(); err != nil {
		h.fail(w, http.StatusBadRequest, err)
		return nil, false
	}
	older := 0 // sampled requests left out
	if len(probes) == 0 && h.cfg.Sample != nil {
		probes = h.cfg.Sample.Probes()
		if n := len(probes); n > h.cfg.MaxProbes {
			older, probes = n-h.cfg.MaxProbes, probes[n-h.cfg.MaxProbes:]
		}
	}
	if len(probes) == 0 {
		h.fail(w, http.StatusBadRequest, &ProbeError{Code: CodeDiffProbesNeeded, Path: "probes", Msg: "no probes given and no recent requests sampled"})
		return nil, false
	}
	draft, ok := h.target(w, req.Draft, 0)
	if !ok {
		return nil, false
	}
	return func(ctx context.Context) (any, string, error) {
		rep, err := DiffContext(ctx, Target{Store: h.cfg.Store, Listener: h.cfg.Listener}, draft, probes)
		if err == nil && older > 0 {
			rep.Refused = append(rep.Refused, strconv.Itoa(older)+" older sampled requests past the limit of "+strconv.Itoa(h.cfg.MaxProbes)+" not simulated")
		}
		return rep, "", err
	}, true
}

// target returns the target a request names: a draft, a kept revision,
// or the live config.
func (h *handler) target(w http.ResponseWriter, draft json.RawMessage, revision uint64) (Target, bool) {
	t := Target{Listener: h.cfg.Listener, Live: h.cfg.Store, Compiler: h.cfg.Compiler}
	switch {
	case len(draft) > 0 && revision != 0:
		h.fail(w, http.StatusBadRequest, &ProbeError{Code: CodeRequestInvalid, Path: "revision", Msg: "name a draft or a revision, not both"})
		return t, false
	case len(draft) > 0:
		t.DraftData = draft
	case revision != 0:
		var snap *snapshot.Snapshot
		if cur := h.cfg.Store.Load(); cur != nil && cur.Revision() == revision {
			snap = cur
		} else if h.cfg.Revision != nil {
			snap = h.cfg.Revision(revision)
		}
		if snap == nil {
			h.fail(w, http.StatusNotFound, &ProbeError{Code: CodeRevisionUnknown, Path: "revision", Msg: "no kept revision " + strconv.FormatUint(revision, 10)})
			return t, false
		}
		t.Snapshot = snap
	default:
		t.Store, t.Live = h.cfg.Store, nil
	}
	return t, true
}

// read decodes the JSON body into v, answering the problem if it cannot.
func (h *handler) read(w http.ResponseWriter, r *http.Request, v any) bool {
	body := http.MaxBytesReader(w, r.Body, h.cfg.MaxRequestBytes)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			err = errors.New("data after the JSON object")
		}
	}
	if err != nil {
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			h.fail(w, http.StatusRequestEntityTooLarge, &ProbeError{Code: CodeRequestTooLarge, Msg: "the body is over " + strconv.FormatInt(h.cfg.MaxRequestBytes, 10) + " bytes"})
		case errors.Is(err, os.ErrDeadlineExceeded):
			// The client is slow, not the server: 408, and the
			// connection, whose read timed out, closes.
			w.Header().Set("Connection", "close")
			h.fail(w, http.StatusRequestTimeout, &ProbeError{Code: CodeDeadline,
				Msg: "the request did not arrive within the deadline of " + h.cfg.Timeout.String()})
		default:
			h.fail(w, http.StatusBadRequest, &ProbeError{Code: CodeRequestInvalid, Msg: err.Error()})
		}
		return false
	}
	return true
}

// failRun answers the error of a Run or a Diff; at is the path of the
// probe in the request.
func (h *handler) failRun(w http.ResponseWriter, err error, at string) {
	var refused *DraftRefused
	if errors.As(err, &refused) {
		h.fail(w, http.StatusUnprocessableEntity, err)
		return
	}
	status := http.StatusBadRequest
	var out problem.List
	for _, p := range problem.All(err) {
		switch {
		case p.Code == CodeTargetEmpty:
			status = http.StatusServiceUnavailable
		case at != "" && strings.HasPrefix(p.Code, "simulate.probe."):
			p = &ProbeError{Code: p.Code, Path: problem.Join(at, p.Path), Msg: p.Msg}
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		h.fail(w, http.StatusInternalServerError, &ProbeError{Code: CodeInternal, Msg: err.Error()})
		return
	}
	h.fail(w, status, out.Err())
}

type wireError struct {
	Code    string `json:"code"`
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
}

func (h *handler) fail(w http.ResponseWriter, status int, err error) {
	var out struct {
		Errors []wireError `json:"errors"`
	}
	for _, p := range problem.All(err) {
		out.Errors = append(out.Errors, wireError{Code: p.Code, Path: p.Path, Message: p.Msg})
	}
	if len(out.Errors) == 0 {
		out.Errors = []wireError{{Code: CodeRequestInvalid, Message: err.Error()}}
	}
	writeJSON(w, status, out)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}
