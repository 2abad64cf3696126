package proxy

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/internal/enum"
	"github.com/paduraksa/paduraksa/internal/problem"
)

// HostHeader says which Host header a route sends upstream.
type HostHeader uint8

const (
	// HostClient sends the client's Host as received (the zero value).
	HostClient HostHeader = iota
	// HostDestination sends the destination's address (without the
	// scheme's default port).
	HostDestination
	// HostCustom sends RouteConfig.HostName.
	HostCustom
)

var hostHeaderNames = enum.Names[HostHeader]{"client", "destination", "custom"}

// String returns the mode's name: "client", "destination" or "custom".
func (h HostHeader) String() string { return hostHeaderNames.Name(h) }

// ParseHostHeader returns the mode a name stands for.
func ParseHostHeader(name string) (HostHeader, bool) { return hostHeaderNames.Parse(name) }

// HostHeaderNames returns the names of the Host modes, the default first:
// the names a config document uses.
func HostHeaderNames() []string { return hostHeaderNames }

// RouteConfig describes a route's forwarding. Only Cluster is required.
type RouteConfig struct {
	Cluster *Cluster
	// Site holds the host's settings; nil means none.
	Site *Site
	// HostHeader is the Host sent upstream; on an https destination the
	// same name is the SNI and, with system trust, the name the
	// certificate is checked against (pinned and any trust check no name).
	// A ClientConfig.ServerName overrides it for the SNI and the check.
	HostHeader HostHeader
	// HostName is the custom Host of HostCustom: a host name or IP literal
	// with an optional port.
	HostName string
	Rewrite  Rewrite
	// RequestHeaders and ResponseHeaders merge over the site's by name.
	RequestHeaders  []HeaderRule
	ResponseHeaders []HeaderRule
	Retry           Retry
	// Mirror, when not nil, copies a sampled share of the route's
	// requests to another cluster (see [Mirror]); the sides of a
	// [Split] share one. Its cluster must be another upstream than
	// Cluster's.
	Mirror *Mirror
	// Timeouts bound the wait for the answer's head; the zero value sets
	// none.
	Timeouts Timeouts
}

// Route is the proxy's [gate.Target]: it forwards a route's requests to a
// cluster. Build one with [NewRoute]; the zero Route has no cluster, and
// [Route.CheckTarget] (which gate.New asks) refuses it. A Route is
// immutable, belongs to one snapshot and is safe for concurrent use; it
// must not be copied after first use.
type Route struct {
	cluster *Cluster

	site      *Site
	hostMode  HostHeader
	hostName  string
	sniName   string
	rw        rewriter
	prefixHdr []string
	reqRules  headerRules
	respRules headerRules
	retry     retrier
	mirror    *Mirror
	timeouts  Timeouts
	timed     bool // timeouts has one
}

var _ gate.Target = (*Route)(nil)

// NewRoute checks and compiles a route. It returns every problem of cfg
// at once, each a [ValidationError] with a path relative to cfg. Header
// rules are merged over the site's: at most MaxHeaderRules per direction
// after the merge.
func NewRoute(cfg RouteConfig) (*Route, error) {
	rt := &Route{cluster: cfg.Cluster, site: cfg.Site, hostMode: cfg.HostHeader}
	var errs problem.List
	checkCluster(&errs, cfg.Cluster)
	checkLimits(&errs, cfg.Cluster)
	switch cfg.HostHeader {
	case HostClient, HostDestination:
		if cfg.HostName != "" {
			errs.Add(CodeRouteHostNameUnused, "hostName", "a host name is only used with Host mode custom")
		}
	case HostCustom:
		if !validHostName(cfg.HostName) {
			errs.Add(CodeRouteHostNameInvalid, "hostName", quote(cfg.HostName)+" is not a host name or IP literal with an optional port")
		}
		rt.hostName = cfg.HostName
		rt.sniName = strings.TrimSuffix(strings.ToLower(hostOnly(cfg.HostName)), ".")
	default:
		errs.Add(CodeRouteHostHeaderUnknown, "hostHeader", "unknown Host mode "+cfg.HostHeader.String()+" (want "+hostHeaderNames.List()+")")
	}
	var err error
	rt.rw, err = newRewriter(cfg.Rewrite)
	errs.Under("rewrite", CodeRewriteAddPrefixInvalid, err)
	if rt.rw.strip != "" {
		rt.prefixHdr = []string{rt.rw.strip}[:1:1]
	}
	var siteReq, siteResp headerRules
	if cfg.Site != nil {
		siteReq, siteResp = cfg.Site.reqRules, cfg.Site.respRules
	}
	rt.reqRules = compileRules(&errs, "requestHeaders", Request, siteReq, cfg.RequestHeaders)
	rt.respRules = compileRules(&errs, "responseHeaders", Response, siteResp, cfg.ResponseHeaders)
	errs.Under("retry", CodeRetryAttemptsInvalid, CheckRetry(cfg.Retry))
	rt.retry.init(cfg.Retry)
	rt.mirror = checkMirror(&errs, &cfg)
	errs.Under("timeouts", CodeTimeoutsRequestInvalid, CheckTimeouts(cfg.Timeouts))
	rt.timeouts, rt.timed = cfg.Timeouts, cfg.Timeouts != (Timeouts{})
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return rt, nil
}

// checkCluster adds a problem at the first part of a route's cluster that
// is missing.
func checkCluster(errs *problem.List, c *Cluster) {
	switch {
	case c == nil:
		errs.Add(CodeRouteClusterMissing, "cluster", "a route needs a cluster")
	case c.Upstream == nil:
		errs.Add(CodeRouteClusterMissing, "cluster.upstream", "the route's cluster has no runtime state (an upstream.Cluster)")
	case c.Upstream.Members() == nil:
		errs.Add(CodeRouteClusterMissing, "cluster.upstream", "the route's upstream.Cluster was not made by upstream.NewCluster or a Registry")
	case c.Transport == nil:
		errs.Add(CodeRouteClusterMissing, "cluster.transport", "the route's cluster has no transport")
	default:
		if t, ok := c.Transport.(*Transport); ok && t.base == nil {
			errs.Add(CodeRouteClusterMissing, "cluster.transport", "the route's *proxy.Transport was not made by NewTransport")
		}
	}
}

var _ gate.AnswerHeaders = (*Route)(nil)

// SetAnswerHeaders adds the route's request ID and custom response rules
// (merged over its site's) to an answer the gate gives itself once the
// route matched ([gate.AnswerHeaders]): a refusal of the route's policies,
// 413, a path it does not allow.
func (rt *Route) SetAnswerHeaders(h http.Header, r *http.Request) {
	if rt.site != nil && rt.site.requestID != RequestIDPass {
		h["X-Request-Id"] = rt.site.requestIDValue(r)
	}
	rt.respRules.apply(h)
}

var _ gate.PathValueReader = (*Route)(nil)

// PathValues returns the template route values the route's rewrite
// template reads ([gate.PathValueReader]), so gate.New refuses a route
// whose path does not capture them.
func (rt *Route) PathValues() []gate.PathValueUse { return rt.rw.values }

// Cluster returns the cluster the route forwards to, as [NewRoute] was
// given it; nil for the zero Route. It must not be modified.
func (rt *Route) Cluster() *Cluster { return rt.cluster }

// Mirror returns the route's mirror, as [NewRoute] was given it; nil when
// it mirrors nothing.
func (rt *Route) Mirror() *Mirror { return rt.mirror }

// CheckTarget reports whether the route can forward: a Route not built by
// [NewRoute] (the zero Route) cannot. [gate.New] asks every target that
// has this method, so such a route is refused when the gate is built
// instead of failing on its first request.
func (rt *Route) CheckTarget() error {
	var errs problem.List
	checkCluster(&errs, rt.cluster)
	checkLimits(&errs, rt.cluster)
	return errs.Err()
}

func quote(s string) string { return strconv.Quote(s) }
