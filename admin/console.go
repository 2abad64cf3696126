package admin

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The console: static pages served from the binary under /console/, and
// the session that lets a browser use the API with the admin token typed
// once. See the package documentation's Console section.

//go:embed console
var consoleFiles embed.FS

// consoleFS is the console's directory, its files at the root.
var consoleFS = func() fs.FS {
	sub, err := fs.Sub(consoleFiles, "console")
	if err != nil {
		panic(err) // the directory is embedded: it is there
	}
	return sub
}()

// SessionCookie begins the name of the console's session cookie; the
// port of the request's Host follows it ("paduraksa_session_9901"), so
// the consoles of two gateways on one host keep their own sessions (a
// browser sends a host's cookies to every port of it).
const SessionCookie = "paduraksa_session"

// sessionCookieName returns the name of the session cookie of r's listener.
func sessionCookieName(r *http.Request) string {
	_, port, err := net.SplitHostPort(r.Host)
	if err != nil || port == "" || strings.Trim(port, "0123456789") != "" {
		return SessionCookie
	}
	return SessionCookie + "_" + port
}

// CSRFHeader is the header a request authenticated by the session cookie
// carries the session's CSRF token in, when its method is not GET or HEAD.
const CSRFHeader = "X-CSRF-Token"

// DefaultSessionTTL is how long a console session lasts by default.
const DefaultSessionTTL = 8 * time.Hour

// MaxSessions is the number of console sessions kept at once; a login
// beyond it ends the session that expires first.
const MaxSessions = 64

// contentSecurityPolicy allows the console's own files and nothing else:
// no inline script or style, no frame around it, no form posted elsewhere.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Session is the answer of POST /console/login and GET /console/session.
type Session struct {
	// Auth reports whether the API asks for authentication at all: false
	// when no token is configured (the console then needs no login).
	Auth bool `json:"auth"`
	// CSRF is the token to send in X-CSRF-Token with every request
	// whose method is not GET or HEAD; empty when Auth is false.
	CSRF string `json:"csrf,omitempty"`
	// Expires is when the session ends.
	Expires time.Time `json:"expires,omitzero"`
}

// session is one console login, kept by the digest of its cookie value.
type session struct {
	csrf    string
	expires time.Time
}

// sessions are the console's logins, kept in memory: a restart logs every
// browser out.
type sessions struct {
	mu  sync.Mutex
	ttl time.Duration
	now func() time.Time
	m   map[[sha256.Size]byte]session
}

// randomToken returns 32 random bytes, base64url.
func randomToken() string {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// create starts a session and returns its cookie value and CSRF token,
// ending expired ones, and the one that expires first when MaxSessions
// are open.
func (s *sessions) create() (id string, ses session) {
	id, ses = randomToken(), session{csrf: randomToken(), expires: s.now().Add(s.ttl)}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var first [sha256.Size]byte
	var firstAt time.Time
	for k, v := range s.m {
		if !now.Before(v.expires) {
			delete(s.m, k)
			continue
		}
		if firstAt.IsZero() || v.expires.Before(firstAt) {
			first, firstAt = k, v.expires
		}
	}
	if len(s.m) >= MaxSessions {
		delete(s.m, first)
	}
	s.m[sha256.Sum256([]byte(id))] = ses
	return id, ses
}

// get returns the live session of a cookie value.
func (s *sessions) get(id string) (session, bool) {
	key := sha256.Sum256([]byte(id))
	s.mu.Lock()
	defer s.mu.Unlock()
	ses, ok := s.m[key]
	if ok && !s.now().Before(ses.expires) {
		delete(s.m, key)
		return session{}, false
	}
	return ses, ok
}

// end ends the session of a cookie value.
func (s *sessions) end(id string) {
	key := sha256.Sum256([]byte(id))
	s.mu.Lock()
	delete(s.m, key)
	s.mu.Unlock()
}

// securityHeaders are set on every answer: the console's pages and the
// API's JSON alike are never framed, sniffed or referred from.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
}

// console serves /console/...: the login and logout, the session, and the
// static files. It reports false for a path that is not the console's.
// Only the logout is authenticated here: the files are public (what they
// show comes from the API, behind the token), and the login and session
// check the token and cookie themselves.
func (h *Handler) console(w http.ResponseWriter, r *http.Request) bool {
	p := r.URL.Path
	if p != "/console" && !strings.HasPrefix(p, "/console/") {
		return false
	}
	switch p {
	case "/console":
		http.Redirect(w, r, "console/", http.StatusMovedPermanently)
	case "/console/login":
		if r.Method != http.MethodPost {
			notAllowed(w, "POST")
			return true
		}
		h.login(w, r)
	case "/console/logout":
		if r.Method != http.MethodPost {
			notAllowed(w, "POST")
			return true
		}
		if h.authorized(w, r) {
			h.logout(w, r)
		}
	case "/console/session":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			notAllowed(w, "GET, HEAD")
			return true
		}
		h.getSession(w, r)
	default:
		h.consoleFile(w, r, strings.TrimPrefix(p, "/console/"))
	}
	return true
}

// consoleFile serves one embedded file.
func (h *Handler) consoleFile(w http.ResponseWriter, r *http.Request, name string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		notAllowed(w, "GET, HEAD")
		return
	}
	if name == "" {
		name = "index.html"
	}
	b, err := fs.ReadFile(consoleFS, name)
	if err != nil || strings.Contains(name, "/") {
		writeError(w, http.StatusNotFound, CodeNotFound, "no such console file: "+r.URL.Path)
		return
	}
	ctype := mime.TypeByExtension(name[strings.LastIndexByte(name, '.'):])
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	hd := w.Header()
	hd.Set("Content-Type", ctype)
	hd.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		w.Write(b)
	}
}

// loginRequest is the body of POST /console/login.
type loginRequest struct {
	Token string `json:"token"`
}

// login checks the admin token and starts a session. The body is JSON,
// so a form on another site cannot post it without a CORS preflight.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Token == "" {
		writeJSON(w, http.StatusOK, Session{})
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, CodeContentType, `a login is JSON: {"token": "..."} as application/json`)
		return
	}
	var req loginRequest
	err := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxTokenFileSize)).Decode(&req)
	if tooLarge := new(http.MaxBytesError); errors.As(err, &tooLarge) {
		writeError(w, http.StatusRequestEntityTooLarge, CodeBodyTooLarge, "a login is at most "+strconv.Itoa(MaxTokenFileSize)+" bytes")
		return
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, CodeBodyUnreadable, `a login is JSON: {"token": "..."}`)
		return
	}
	if req.Token = strings.TrimSpace(req.Token); req.Token == "" {
		writeError(w, http.StatusUnauthorized, CodeTokenMissing, "the admin token is required")
		return
	}
	if !h.tokenMatches(req.Token) {
		h.refusedLogins.log(h.cfg.Logger, h.sessions.now(), r.RemoteAddr)
		writeError(w, http.StatusUnauthorized, CodeTokenInvalid, "that is not the admin token")
		return
	}
	id, ses := h.sessions.create()
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookieName(r), Value: id, Path: "/", Expires: ses.expires, MaxAge: int(h.sessions.ttl.Seconds()),
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode,
	})
	h.cfg.Logger.Info("admin: console login", "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, Session{Auth: true, CSRF: ses.csrf, Expires: ses.expires})
}

// logout ends the session of the request (authenticated, with its CSRF
// token, by ServeHTTP) and clears the cookie.
func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookieName(r)); err == nil {
		h.sessions.end(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookieName(r), Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	writeJSON(w, http.StatusOK, Session{Auth: h.cfg.Token != ""})
}

// getSession answers the session of the request's cookie (its CSRF token,
// so that a reloaded page goes on), or 401.
func (h *Handler) getSession(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Token == "" {
		writeJSON(w, http.StatusOK, Session{})
		return
	}
	c, err := r.Cookie(sessionCookieName(r))
	if err != nil {
		writeError(w, http.StatusUnauthorized, CodeSessionMissing, "no console session: log in with the admin token")
		return
	}
	ses, ok := h.sessions.get(c.Value)
	if !ok {
		writeError(w, http.StatusUnauthorized, CodeSessionInvalid, "the console session has ended: log in again")
		return
	}
	writeJSON(w, http.StatusOK, Session{Auth: true, CSRF: ses.csrf, Expires: ses.expires})
}

// sessionAuthorized authenticates a request by its session cookie, and a
// request whose method changes state by its CSRF token too, answering 401
// or 403 when it fails.
func (h *Handler) sessionAuthorized(w http.ResponseWriter, r *http.Request, c *http.Cookie) bool {
	ses, ok := h.sessions.get(c.Value)
	if !ok {
		writeError(w, http.StatusUnauthorized, CodeSessionInvalid, "the console session has ended: log in again")
		return false
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	got := r.Header.Get(CSRFHeader)
	if got == "" {
		writeError(w, http.StatusForbidden, CodeCSRFMissing, "a request of the console session that changes state carries its CSRF token ("+CSRFHeader+")")
		return false
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(ses.csrf)) != 1 {
		writeError(w, http.StatusForbidden, CodeCSRFInvalid, "the "+CSRFHeader+" header is not the session's CSRF token")
		return false
	}
	return true
}

// loginLogEvery is how often a refused console login is logged at most:
// the login answers anyone who reaches the listener, and a line for each
// refusal would let them fill the log.
const loginLogEvery = 10 * time.Second

// refusedLogins logs refused console logins, one line per loginLogEvery
// at most, with how many were refused since the line before.
type refusedLogins struct {
	mu      sync.Mutex
	next    time.Time // when the next line may be written
	dropped int       // refusals not logged since the last line
}

func (l *refusedLogins) log(log *slog.Logger, now time.Time, remote string) {
	l.mu.Lock()
	if now.Before(l.next) {
		l.dropped++
		l.mu.Unlock()
		return
	}
	dropped := l.dropped
	l.next, l.dropped = now.Add(loginLogEvery), 0
	l.mu.Unlock()
	log.Warn("admin: console login refused", "remote", remote, "alsoRefusedSinceLastLine", dropped)
}
