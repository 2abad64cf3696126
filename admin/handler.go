package admin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/health"
	"github.com/paduraksa/paduraksa/internal/hostport"
	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/paduraksa/paduraksa/telemetry"
	"github.com/paduraksa/paduraksa/tlsselect"
)

// DefaultMaxDocumentBytes is the largest document PUT /config takes by
// default.
const DefaultMaxDocumentBytes = 16 << 20

// DefaultApplyTimeout is how long PUT /config takes at most by default.
const DefaultApplyTimeout = time.Minute

// DefaultMaxPushes is how many PUT /config calls are in progress at once
// by default.
const DefaultMaxPushes = 4

// Config configures a [Handler]. Only Publisher is required.
type Config struct {
	// Publisher is the gateway's publisher: GET /config and GET /revisions
	// read its history, PUT /config publishes through it.
	Publisher *snapshot.Publisher
	// Health answers GET /health; nil means the publisher's monitor
	// ([snapshot.Publisher.Health]).
	Health *health.Monitor
	// Metrics, when set, serves GET /metrics; nil answers 404.
	Metrics http.Handler
	// Simulate, when set, serves /simulate and /simulate/diff, every
	// method; nil answers 404.
	Simulate http.Handler
	// Recent, when set, serves GET /requests: the recent requests it
	// returns, newest first (simulate.Sample.Recent); nil answers 404.
	Recent func() []telemetry.Record
	// Compiler checks the drafts of POST /config/check, and a document
	// before it is saved in Store: set it to the publisher's
	// (snapshot.PublisherConfig.Compiler) so that the policies registered
	// on it are known. Nil means a compiler with the built-in names and
	// Health's monitor.
	Compiler *snapshot.Compiler
	// Token, when set, is the bearer token every request must carry
	// ("Authorization: Bearer <token>"); a request without it or with
	// another gets 401. Empty means no authentication: only for a
	// listener nobody else can reach, and then only requests addressed
	// to a loopback name, from no page or a loopback one, are served
	// (403 otherwise; see the package documentation).
	Token string
	// Persist, when set, is called with the bytes of every document that
	// PUT /config applied, before the answer, so that it survives a
	// restart (write it where the gateway reads its config from). Calls
	// come one at a time, in the order of the revisions. An error is
	// reported in the answer (500): the document serves, but is not
	// saved. Nil means pushed documents live in memory only, and answers
	// say so.
	Persist func(ctx context.Context, data []byte) error
	// Store, when set, is the fleet's store of its one document: PUT
	// /config checks the document as a publish would (422 with every
	// problem, nothing saved), saves it there in one compare-and-swap on
	// If-Match's version (412 when stale), and answers the outcome this
	// instance gives the saved version as it applies it from the
	// store's watch. GET /config's ETag is then the store's version, the
	// same on every instance, so an ETag read from one is a valid
	// If-Match on another. Persist is not called.
	Store Store
	// Cluster, when set, serves GET /cluster: the state of every
	// instance of the fleet, JSON-encodable, sorted by name; an error
	// answers 503 ([CodeClusterUnreachable]). Nil answers 404.
	Cluster func(ctx context.Context) (any, error)
	// Engines, when set, gives the reachability of the engines the
	// instance depends on (etcd, Redis) for GET /healthz.
	Engines func() []Engine
	// MaxDocumentBytes bounds the body of PUT /config; 0 means
	// [DefaultMaxDocumentBytes]. It may not exceed
	// [config.MaxDocumentSize].
	MaxDocumentBytes int64
	// ApplyTimeout bounds a PUT /config from its start: reading the
	// document (408 past it), waiting for the pushes before it, the
	// outcome and Persist (504 past it); 0 means [DefaultApplyTimeout]. A
	// client that goes away does not cut it short: an applied push is
	// persisted all the same.
	ApplyTimeout time.Duration
	// MaxPushes bounds the PUT /config calls in progress at once, from
	// reading the document to the answer: pushes apply one at a time, so
	// all but one wait, each holding its document. One beyond it is
	// answered 429 with Retry-After at once ([CodeBusy]), never queued.
	// 0 means [DefaultMaxPushes].
	MaxPushes int
	// Logger receives a record of every push; nil discards.
	Logger *slog.Logger
	// SessionTTL is how long a console login lasts; 0 means
	// [DefaultSessionTTL].
	SessionTTL time.Duration
	// Instance names this gateway in GET /overview and the console (a
	// host name, a fleet member's name); empty: none is shown.
	Instance string
	// ACME, when set, tells GET /certificates the state of the
	// certificates an ACME manager obtains ([tlsselect.ACME.Stats]); nil
	// shows each certificate's validity alone.
	ACME func() tlsselect.ACMEStats
}

// Error codes of the answers, in the "error" object of a JSON body (and,
// for PUT /config, in its errors list). They are stable.
const (
	CodeTokenMissing       = "admin.token.missing"           // 401: no bearer token
	CodeTokenInvalid       = "admin.token.invalid"           // 401: another token
	CodeNotFound           = "admin.notFound"                // 404: no such endpoint, or not configured
	CodeMethodNotAllowed   = "admin.method.notAllowed"       // 405: see the Allow header
	CodeBodyEmpty          = "admin.body.empty"              // 400: PUT /config without a document
	CodeBodyTooLarge       = "admin.body.tooLarge"           // 413: more than MaxDocumentBytes
	CodeBodyUnreadable     = "admin.body.unreadable"         // 400: the body broke off
	CodeBodyTimeout        = "admin.body.timeout"            // 408: the body did not arrive within ApplyTimeout
	CodeBusy               = "admin.busy"                    // 429: MaxPushes pushes are in progress
	CodeContentType        = "admin.contentType.unsupported" // 415: not a JSON or YAML type
	CodeIfMatchInvalid     = "admin.ifMatch.invalid"         // 400: If-Match is not one revision
	CodeRevisionStale      = "admin.revision.stale"          // 412: If-Match names another revision than the serving one
	CodeNoConfig           = "admin.config.none"             // 503: nothing serves yet
	CodeApplyTimeout       = "admin.apply.timeout"           // 504: no outcome within ApplyTimeout, or no turn (then not published)
	CodePersistFailed      = "admin.persist.failed"          // 500: applied, not saved
	CodeMaxDocumentInvalid = "admin.maxDocumentBytes.invalid"
	CodeMaxPushesInvalid   = "admin.maxPushes.invalid"
	CodePublisherMissing   = "admin.publisher.missing"

	CodeDestinationUnknown = "admin.destination.unknown" // 404: no such upstream or destination in the serving config
	CodeFilterInvalid      = "admin.filter.invalid"      // 400: a query parameter of GET /requests, at its name (path)
	CodeRevisionUnknown    = "admin.revision.unknown"    // 404: GET /revisions/{n} of a revision the publisher does not keep

	CodeSessionMissing    = "admin.session.missing" // 401: GET /console/session without a session cookie
	CodeSessionInvalid    = "admin.session.invalid" // 401: a session cookie of no live session (ended, expired, or another process's)
	CodeCSRFMissing       = "admin.csrf.missing"    // 403: a state change by a session without X-CSRF-Token
	CodeCSRFInvalid       = "admin.csrf.invalid"    // 403: an X-CSRF-Token that is not the session's
	CodeSessionTTLInvalid = "admin.sessionTtl.invalid"

	CodeHostUntrusted   = "admin.host.untrusted"   // 403: without a token, a request addressed (Host) to a name that is not loopback
	CodeOriginUntrusted = "admin.origin.untrusted" // 403: without a token, a request from a page (Origin) that is not on loopback
)

// Handler serves the admin API; see the package documentation. It is
// safe for concurrent use. Make it with [New]: the zero Handler has no
// publisher, and serving with it panics.
type Handler struct {
	cfg      Config
	token    [sha256.Size]byte // digest of cfg.Token, compared in constant time
	pushes   chan struct{}     // one value per PUT in progress, at most MaxPushes
	turn     chan struct{}     // held by the PUT applying: outcomes persist in order
	sessions *sessions         // the console's logins

	refusedLogins refusedLogins
}

// New returns the handler of cfg, or every problem of cfg.
func New(cfg Config) (*Handler, error) {
	var probs problem.List
	if cfg.Publisher == nil {
		probs.Add(CodePublisherMissing, "publisher", "a publisher is required")
	}
	if cfg.MaxDocumentBytes < 0 || cfg.MaxDocumentBytes > config.MaxDocumentSize {
		probs.Add(CodeMaxDocumentInvalid, "maxDocumentBytes",
			"must be 0 (the default) or 1 to "+strconv.Itoa(config.MaxDocumentSize))
	}
	if cfg.MaxPushes < 0 {
		probs.Add(CodeMaxPushesInvalid, "maxPushes", "must be 0 (the default) or more")
	}
	if cfg.SessionTTL < 0 {
		probs.Add(CodeSessionTTLInvalid, "sessionTtl", "must be 0 (the default) or more")
	}
	if err := probs.Err(); err != nil {
		return nil, err
	}
	if cfg.MaxDocumentBytes == 0 {
		cfg.MaxDocumentBytes = DefaultMaxDocumentBytes
	}
	if cfg.ApplyTimeout <= 0 {
		cfg.ApplyTimeout = DefaultApplyTimeout
	}
	if cfg.MaxPushes == 0 {
		cfg.MaxPushes = DefaultMaxPushes
	}
	if cfg.Health == nil {
		cfg.Health = cfg.Publisher.Health()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Compiler == nil {
		cfg.Compiler = &snapshot.Compiler{Health: cfg.Health}
	}
	if cfg.SessionTTL == 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	h := &Handler{cfg: cfg, pushes: make(chan struct{}, cfg.MaxPushes), turn: make(chan struct{}, 1),
		sessions: &sessions{ttl: cfg.SessionTTL, now: time.Now, m: map[[sha256.Size]byte]session{}}}
	if cfg.Token != "" {
		h.token = sha256.Sum256([]byte(cfg.Token))
	}
	return h, nil
}

// ServeHTTP authenticates the request and answers it.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	if !h.local(w, r) {
		return
	}
	if h.console(w, r) {
		return
	}
	if !h.authorized(w, r) {
		return
	}
	read := r.Method == http.MethodGet || r.Method == http.MethodHead
	switch r.URL.Path {
	case "/config":
		switch {
		case read:
			h.getConfig(w, r)
		case r.Method == http.MethodPut:
			h.putConfig(w, r)
		default:
			notAllowed(w, "GET, HEAD, PUT")
		}
		return
	case "/config/check":
		if r.Method != http.MethodPost {
			notAllowed(w, "POST")
			return
		}
		h.checkConfig(w, r)
		return
	case "/simulate", "/simulate/diff":
		if h.cfg.Simulate == nil {
			writeError(w, http.StatusNotFound, CodeNotFound, "no simulator is configured")
			return
		}
		h.cfg.Simulate.ServeHTTP(w, r)
		return
	}
	if strings.HasPrefix(r.URL.Path, "/upstreams/") {
		h.destination(w, r)
		return
	}
	if strings.HasPrefix(r.URL.Path, "/revisions/") {
		if !read {
			notAllowed(w, "GET, HEAD")
			return
		}
		h.getRevision(w, r)
		return
	}
	var serve func(http.ResponseWriter, *http.Request)
	switch r.URL.Path {
	case "/revisions":
		serve = h.getRevisions
	case "/health":
		serve = h.getHealth
	case "/healthz":
		serve = h.getHealthz
	case "/overview":
		serve = h.getOverview
	case "/certificates":
		serve = h.getCertificates
	case "/requests":
		serve = h.getRequests
	case "/cluster":
		serve = h.getCluster
	case "/metrics":
		if h.cfg.Metrics == nil {
			writeError(w, http.StatusNotFound, CodeNotFound, "no metrics are configured")
			return
		}
		serve = h.cfg.Metrics.ServeHTTP
	default:
		writeError(w, http.StatusNotFound, CodeNotFound, "no such endpoint: "+r.URL.Path)
		return
	}
	if !read {
		notAllowed(w, "GET, HEAD")
		return
	}
	serve(w, r)
}

// Protect returns next behind the handler's token: a request without it
// gets the 401 the admin API answers, one with it is served by next. It
// mounts what an admin listener serves beside the API (an MCP endpoint)
// under the same rule.
func (h *Handler) Protect(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.local(w, r) && h.authorized(w, r) {
			next.ServeHTTP(w, r)
		}
	})
}

// authorized reports whether the request carries the token, or the
// console's session cookie (and, to change state, its CSRF token),
// answering 401 or 403 when it does not.
func (h *Handler) authorized(w http.ResponseWriter, r *http.Request) bool {
	if h.cfg.Token == "" {
		return true
	}
	auth := r.Header.Get("Authorization")
	if auth == "" {
		if c, err := r.Cookie(sessionCookieName(r)); err == nil && c.Value != "" {
			return h.sessionAuthorized(w, r, c)
		}
	}
	scheme, token, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="paduraksa admin"`)
		writeError(w, http.StatusUnauthorized, CodeTokenMissing, "a bearer token is required (Authorization: Bearer <token>)")
		return false
	}
	if !h.tokenMatches(strings.TrimSpace(token)) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="paduraksa admin", error="invalid_token"`)
		writeError(w, http.StatusUnauthorized, CodeTokenInvalid, "the bearer token is not the admin token")
		return false
	}
	return true
}

// local reports whether a request may be served without a token, answering
// 403 when it may not. With a token set every request may (the token, or
// the session and its CSRF token, decide). Without one, the listener is
// trusted for being unreachable from elsewhere, and two requests reach it
// from elsewhere all the same, through a browser on the machine: a page
// whose name was rebound to 127.0.0.1 (DNS rebinding; its requests carry
// Host: that name), and a cross-site form posted to 127.0.0.1 (it carries
// the page's Origin). So the Host must be a loopback name (localhost,
// 127.0.0.0/8, ::1, with any port), and an Origin, when sent, a loopback
// origin.
func (h *Handler) local(w http.ResponseWriter, r *http.Request) bool {
	if h.cfg.Token != "" {
		return true
	}
	if !loopbackAuthority(r.Host) {
		writeError(w, http.StatusForbidden, CodeHostUntrusted,
			"without an admin token, only requests addressed to a loopback name (localhost, 127.0.0.1, [::1]) are served")
		return false
	}
	if o, ok := r.Header["Origin"]; ok {
		origin := strings.Join(o, ",")
		host, found := strings.CutPrefix(origin, "http://")
		if !found {
			host, found = strings.CutPrefix(origin, "https://")
		}
		if !found || !loopbackAuthority(host) {
			writeError(w, http.StatusForbidden, CodeOriginUntrusted,
				"without an admin token, only pages on a loopback origin may call the admin API")
			return false
		}
	}
	return true
}

// loopbackAuthority reports whether s, a host with an optional port,
// names only the loopback interface.
func loopbackAuthority(s string) bool {
	a, reason := hostport.ParseAuthority(s)
	if reason != "" {
		return false
	}
	if a.Host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(a.Host)
	return err == nil && ip.IsLoopback()
}

// tokenMatches reports whether token is the admin token. Digests compare
// in constant time whatever the lengths.
func (h *Handler) tokenMatches(token string) bool {
	sum := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(sum[:], h.token[:]) == 1
}

func notAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	writeError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed, "allowed: "+allow)
}

// ErrorBody is the JSON of an error answer.
type ErrorBody struct {
	Error Problem `json:"error"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, ErrorBody{Error: Problem{Code: code, Message: msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // the answers are read by tools and people, never embedded in HTML
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		// Every answer type encodes; this is a bug.
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":{"code":"admin.internal","message":"the answer did not encode"}}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}
