package simulate

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/paduraksa/paduraksa/snapshot"
)

// DefaultMaxRequestBytes bounds a request to a [Handler] without
// HandlerConfig.MaxRequestBytes: room for a draft of a few thousand hosts.
const DefaultMaxRequestBytes = 16 << 20

// HandlerConfig configures [NewHandler].
type HandlerConfig struct {
	// Store is the live gateway; required.
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
// request or the probe), 404 (an unknown revision), 422 (a draft a
// publish would refuse, with every problem) or 503 (nothing published
// yet), each as {"errors": [{"code", "path", "message"}]}.
func NewHandler(cfg HandlerConfig) http.Handler {
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	h := &handler{cfg: cfg}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /simulate", h.simulate)
	mux.HandleFunc("POST /simulate/diff", h.diff)
	return mux
}

type handler struct{ cfg HandlerConfig }

// Codes of the handler's own refusals.
const (
	CodeRequestInvalid   = "simulate.request.invalid"   // the body is not the JSON the endpoint takes
	CodeRequestTooLarge  = "simulate.request.tooLarge"  // the body is over MaxRequestBytes
	CodeRevisionUnknown  = "simulate.revision.unknown"  // no kept revision has the number
	CodeDiffProbesNeeded = "simulate.diff.probes.empty" // no probes and no sample
	CodeInternal         = "simulate.internal"          // a failure of the simulation itself
)

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

func (h *handler) simulate(w http.ResponseWriter, r *http.Request) {
	var req simulateRequest
	if !h.read(w, r, &req) {
		return
	}
	if req.Probe == nil {
		h.fail(w, http.StatusBadRequest, &ProbeError{Code: CodeRequestInvalid, Path: "probe", Msg: "a probe is required"})
		return
	}
	var errs problem.List
	probe := req.Probe.probe(&errs, "probe")
	if err := errs.Err(); err != nil {
		h.fail(w, http.StatusBadRequest, err)
		return
	}
	target, ok := h.target(w, req.Draft, req.Revision)
	if !ok {
		return
	}
	res, err := Run(target, probe)
	if err != nil {
		h.failRun(w, err, "probe")
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (h *handler) diff(w http.ResponseWriter, r *http.Request) {
	var req diffRequest
	if !h.read(w, r, &req) {
		return
	}
	if len(req.Draft) == 0 {
		h.fail(w, http.StatusBadRequest, &ProbeError{Code: CodeRequestInvalid, Path: "draft", Msg: "a diff needs a draft"})
		return
	}
	var probes []Probe
	var errs problem.List
	for i := range req.Probes {
		probes = append(probes, req.Probes[i].probe(&errs, problem.Index("probes", i)))
	}
	if err := errs.Err(); err != nil {
		h.fail(w, http.StatusBadRequest, err)
		return
	}
	if len(probes) == 0 && h.cfg.Sample != nil {
		probes = h.cfg.Sample.Probes()
	}
	if len(probes) == 0 {
		h.fail(w, http.StatusBadRequest, &ProbeError{Code: CodeDiffProbesNeeded, Path: "probes", Msg: "no probes given and no recent requests sampled"})
		return
	}
	draft, ok := h.target(w, req.Draft, 0)
	if !ok {
		return
	}
	rep, err := Diff(Target{Store: h.cfg.Store, Listener: h.cfg.Listener}, draft, probes)
	if err != nil {
		h.failRun(w, err, "")
		return
	}
	writeJSON(w, http.StatusOK, rep)
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
		if errors.As(err, &tooLarge) {
			h.fail(w, http.StatusRequestEntityTooLarge, &ProbeError{Code: CodeRequestTooLarge, Msg: "the body is over " + strconv.FormatInt(h.cfg.MaxRequestBytes, 10) + " bytes"})
		} else {
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
