package proxy

import (
	"encoding/hex"
	"math/rand/v2"
	"net/http"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/internal/enum"
	"github.com/paduraksa/paduraksa/internal/problem"
)

// RequestIDMode says what the proxy does with X-Request-Id.
type RequestIDMode uint8

const (
	// RequestIDPass leaves X-Request-Id alone both ways (the zero value).
	RequestIDPass RequestIDMode = iota
	// RequestIDKeep keeps a client's X-Request-Id when it is 1-128 visible
	// ASCII characters and makes a new one otherwise; the upstream gets
	// it and the client gets it back, on the proxy's own answers too (the
	// upstream's is replaced).
	RequestIDKeep
	// RequestIDGenerate always makes a new one (32 hex digits), replacing
	// the client's, and sends it both ways like RequestIDKeep.
	RequestIDGenerate
)

var requestIDModeNames = enum.Names[RequestIDMode]{"pass", "keep", "generate"}

// String returns the mode's name: "pass", "keep" or "generate".
func (m RequestIDMode) String() string { return requestIDModeNames.Name(m) }

// ParseRequestIDMode returns the mode a name stands for.
func ParseRequestIDMode(name string) (RequestIDMode, bool) { return requestIDModeNames.Parse(name) }

// RequestIDModeNames returns the names of the request ID modes, the
// default first: the names a config document uses.
func RequestIDModeNames() []string { return requestIDModeNames }

// SiteConfig holds a host's forwarding settings, shared by its routes.
type SiteConfig struct {
	// RequestHeaders and ResponseHeaders are the host's custom header
	// rules; a route's rules merge over them by name.
	RequestHeaders  []HeaderRule
	ResponseHeaders []HeaderRule
	Compression     Compression
	RequestID       RequestIDMode
	// KeepUnderscoreHeaders forwards request header names with
	// underscores, except those that spell a field the gateway owns with
	// hyphens (X_Forwarded_For, an identity header). By default every
	// such name is dropped, as nginx does: CGI, WSGI, Rack and PHP
	// upstreams read X_Auth_User as X-Auth-User.
	KeepUnderscoreHeaders bool
}

// Site is a compiled SiteConfig; it is immutable and safe for concurrent
// use. A nil *Site, and a zero one, are a host without settings.
type Site struct {
	cfg       SiteConfig
	comp      compressor
	requestID RequestIDMode
	reqRules  headerRules
	respRules headerRules
}

// NewSite checks and compiles a host's settings. It returns every problem
// of cfg at once, each a [ValidationError] with a path relative to cfg.
func NewSite(cfg SiteConfig) (*Site, error) {
	var errs problem.List
	s := &Site{cfg: cfg, requestID: cfg.RequestID}
	s.reqRules = compileRules(&errs, "requestHeaders", Request, nil, cfg.RequestHeaders)
	s.respRules = compileRules(&errs, "responseHeaders", Response, nil, cfg.ResponseHeaders)
	var err error
	s.comp, err = newCompressor(cfg.Compression)
	errs.Under("compression", CodeCompressionMinimumSize, err)
	if !requestIDModeNames.Known(cfg.RequestID) {
		errs.Add(CodeSiteRequestIDUnknown, "requestID", "unknown request ID mode "+cfg.RequestID.String()+" (want "+requestIDModeNames.List()+")")
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return s, nil
}

var _ gate.AnswerHeaders = (*Site)(nil)

// SetAnswerHeaders adds the host's request ID and custom response rules to
// an answer the gate gives itself for the host ([gate.AnswerHeaders]), so
// it carries what the proxy's own answers carry.
func (s *Site) SetAnswerHeaders(h http.Header, r *http.Request) {
	if s.requestID != RequestIDPass {
		h["X-Request-Id"] = s.requestIDValue(r)
	}
	s.respRules.apply(h)
}

// requestIDValue returns the request ID to send both ways, or nil.
func (s *Site) requestIDValue(r *http.Request) []string {
	if s == nil || s.requestID == RequestIDPass {
		return nil
	}
	if s.requestID == RequestIDKeep {
		if v := r.Header["X-Request-Id"]; len(v) == 1 && validRequestID(v[0]) {
			return v
		}
	}
	var b [16]byte
	var id [32]byte
	u1, u2 := rand.Uint64(), rand.Uint64()
	for i := range 8 {
		b[i], b[8+i] = byte(u1>>(8*i)), byte(u2>>(8*i))
	}
	hex.Encode(id[:], b[:])
	return []string{string(id[:])}
}

func validRequestID(v string) bool {
	if len(v) == 0 || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c <= 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}
