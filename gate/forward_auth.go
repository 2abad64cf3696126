package gate

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/internal/problem"
	"golang.org/x/net/http/httpguts"
)

// ForwardAuthConfig configures a [ForwardAuth] policy.
type ForwardAuthConfig struct {
	ID string
	// URL is the auth service's endpoint (http or https).
	URL string
	// Timeout bounds the whole call; 0 means 5s. A timeout answers 504, an
	// unreachable service 503.
	Timeout time.Duration
	// RequestHeaders are copied from the client's request to the call
	// (Authorization and Cookie are the usual ones).
	RequestHeaders []string
	// IdentityHeaders are copied from a 2xx answer of the service to the
	// upstream request. The policy owns them ([HeaderOwner]): the
	// client's own values are removed from every request its chain sees,
	// whatever its mode, and what the service answered is sent after
	// everything else, so a client can neither forge nor remove them.
	// Names are header tokens without "_" (the forwarder drops names with
	// underscores, which CGI-style upstreams read as hyphens).
	IdentityHeaders []string
	// Client makes the calls; nil means a client of its own with the
	// timeout and no redirects followed.
	Client *http.Client
}

// ForwardAuth asks an auth service about each request: the service gets
// the original method and the headers X-Forwarded-Method, -Uri, -Host,
// -Proto and -For, plus the configured request headers, and no body. A 2xx
// answer continues and copies the identity headers upstream; any other
// answer is returned to the client (status, body up to 64 KiB, and its
// Content-Type, WWW-Authenticate, Location and Set-Cookie headers).
//
// It is the asynchronous policy: Evaluate only strips the identity headers
// and returns [Defer]; the gate then calls Await, which allocates and
// blocks for the round trip. In a dry run (the simulator) it reports
// "would call" and does not call.
//
// Build it with [NewForwardAuth]; [New] refuses a zero ForwardAuth, which
// has no service to ask.
type ForwardAuth struct {
	cfg      ForwardAuthConfig
	url      *url.URL
	client   *http.Client
	identity []string // canonical
	request  []string // canonical
	page503  *Page
	page504  *Page
	// wouldCall is the dry run's reason: "would call URL", built once.
	wouldCall string
}

var _ AsyncPolicy = (*ForwardAuth)(nil)

// maxAuthBody bounds the body of a refusal copied to the client.
const maxAuthBody = 64 << 10

// DefaultForwardAuthTimeout bounds a forward-auth call without a
// Timeout.
const DefaultForwardAuthTimeout = 5 * time.Second

// NewForwardAuth builds a forward-auth policy. It returns every problem of
// cfg at once, each a [ValidationError] with a path relative to cfg.
func NewForwardAuth(cfg ForwardAuthConfig) (*ForwardAuth, error) {
	var errs problem.List
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Fragment != "" {
		errs.Add(CodeForwardAuthURLInvalid, "url", strconv.Quote(cfg.URL)+": not an absolute http(s) URL without user info or fragment")
	}
	if cfg.Timeout < 0 {
		errs.Add(CodeForwardAuthTimeoutInvalid, "timeout", "negative (0 means 5s)")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultForwardAuthTimeout
	}
	a := &ForwardAuth{
		cfg:     cfg,
		url:     u,
		client:  cfg.Client,
		page503: statusPage(http.StatusServiceUnavailable, nil),
		page504: statusPage(http.StatusGatewayTimeout, nil),
	}
	if u != nil {
		a.wouldCall = "would call " + u.Redacted()
	}
	if a.client == nil {
		a.client = &http.Client{
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	for i, h := range cfg.IdentityHeaders {
		if !httpguts.ValidHeaderFieldName(h) || strings.IndexByte(h, '_') >= 0 {
			errs.Add(CodeForwardAuthHeaderInvalid, problem.Index("identityHeaders", i), strconv.Quote(h)+" is not a header name without underscores")
			continue
		}
		a.identity = append(a.identity, http.CanonicalHeaderKey(h))
	}
	for i, h := range cfg.RequestHeaders {
		if !httpguts.ValidHeaderFieldName(h) {
			errs.Add(CodeForwardAuthHeaderInvalid, problem.Index("requestHeaders", i), strconv.Quote(h)+" is not a header name")
			continue
		}
		a.request = append(a.request, http.CanonicalHeaderKey(h))
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *ForwardAuth) checkBuilt(errs *problem.List, at string) {
	if a == nil || a.url == nil {
		notBuilt(errs, at, "ForwardAuth", "NewForwardAuth")
	}
}

// OwnedHeaders returns the identity headers, canonical.
func (a *ForwardAuth) OwnedHeaders() []string { return a.identity }

var _ HeaderOwner = (*ForwardAuth)(nil)

// ID returns the configured ID.
func (a *ForwardAuth) ID() string { return a.cfg.ID }

// Evaluate defers to Await. The gate has removed the client's identity
// headers already.
func (a *ForwardAuth) Evaluate(r *http.Request, rq *Request) Decision {
	if rq.DryRun {
		return Decision{Verdict: Defer, Reason: a.wouldCall}
	}
	return Decision{Verdict: Defer, Reason: "calling auth service"}
}

var refusalHeaders = [...]string{"Content-Type", "Www-Authenticate", "Location", "Set-Cookie"}

// Await calls the auth service.
func (a *ForwardAuth) Await(r *http.Request, rq *Request) Decision {
	ctx, cancel := context.WithTimeout(r.Context(), a.cfg.Timeout)
	defer cancel()
	out, err := http.NewRequestWithContext(ctx, r.Method, a.url.String(), nil)
	if err != nil {
		return Decision{Verdict: Respond, Page: a.page503, Reason: "auth request: " + err.Error()}
	}
	for _, h := range a.request {
		if v, ok := r.Header[h]; ok {
			out.Header[h] = v
		}
	}
	out.Header.Set("X-Forwarded-Method", r.Method)
	out.Header.Set("X-Forwarded-Uri", requestURI(r))
	out.Header.Set("X-Forwarded-Host", r.Host)
	out.Header.Set("X-Forwarded-Proto", rq.Scheme)
	if rq.Client.IsValid() {
		out.Header.Set("X-Forwarded-For", rq.Client.String())
	}
	resp, err := a.client.Do(out)
	if err != nil {
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
			return Decision{Verdict: Respond, Page: a.page504, Reason: "auth service timed out"}
		}
		return Decision{Verdict: Respond, Page: a.page503, Reason: "auth service unreachable"}
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxAuthBody))
		for _, h := range a.identity {
			if v, ok := resp.Header[h]; ok {
				rq.SetUpstreamHeader(h, v)
			}
		}
		return Decision{Reason: "auth service allowed"}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAuthBody))
	if err != nil {
		return Decision{Verdict: Respond, Page: a.page503, Reason: "auth service answer unreadable"}
	}
	h := http.Header{}
	for _, k := range refusalHeaders[1:] {
		if v, ok := resp.Header[k]; ok {
			h[k] = v
		}
	}
	page := NewPage(resp.StatusCode, resp.Header.Get("Content-Type"), body, h)
	return Decision{Verdict: Respond, Page: page, Reason: "auth service refused"}
}
