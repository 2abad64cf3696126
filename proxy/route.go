package proxy

import (
	"errors"
	"strings"

	"github.com/paduraksa/paduraksa/gate"
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
}

// Route is the proxy's [gate.Target]: it forwards a route's requests to a
// cluster. Build one with [NewRoute]; a Route with only Cluster set
// forwards with the defaults. A Route is immutable, belongs to one snapshot
// and is safe for concurrent use; it must not be copied after first use.
type Route struct {
	Cluster *Cluster

	site      *Site
	hostMode  HostHeader
	hostName  string
	sniName   string
	rw        rewriter
	prefixHdr []string
	reqRules  headerRules
	respRules headerRules
	retry     retrier
}

var _ gate.Target = (*Route)(nil)

// ErrInvalidRoute wraps every problem [NewRoute] finds.
var ErrInvalidRoute = errors.New("proxy: invalid route")

// NewRoute checks and compiles a route. Header rules are merged over the
// site's: at most MaxHeaderRules per direction after the merge.
func NewRoute(cfg RouteConfig) (*Route, error) {
	rt := &Route{Cluster: cfg.Cluster, site: cfg.Site, hostMode: cfg.HostHeader}
	var errs []error
	if cfg.Cluster == nil || cfg.Cluster.Upstream == nil || cfg.Cluster.Transport == nil {
		errs = append(errs, errors.New("route without a cluster, its runtime state or its transport"))
	}
	switch cfg.HostHeader {
	case HostClient, HostDestination:
		if cfg.HostName != "" {
			errs = append(errs, errors.New("a host name is only used with HostCustom"))
		}
	case HostCustom:
		if !validHostName(cfg.HostName) {
			errs = append(errs, errors.New("custom Host "+quote(cfg.HostName)+" is not a host name or IP literal with an optional port"))
		}
		rt.hostName = cfg.HostName
		rt.sniName = strings.TrimSuffix(strings.ToLower(hostOnly(cfg.HostName)), ".")
	default:
		errs = append(errs, errors.New("unknown Host header mode"))
	}
	var err error
	if rt.rw, err = newRewriter(cfg.Rewrite); err != nil {
		errs = append(errs, err)
	}
	if rt.rw.strip != "" {
		rt.prefixHdr = []string{rt.rw.strip}[:1:1]
	}
	var siteReq, siteResp []HeaderRule
	if cfg.Site != nil {
		siteReq, siteResp = cfg.Site.cfg.RequestHeaders, cfg.Site.cfg.ResponseHeaders
	}
	if rt.reqRules, err = compileRules(Request, siteReq, cfg.RequestHeaders); err != nil {
		errs = append(errs, err)
	}
	if rt.respRules, err = compileRules(Response, siteResp, cfg.ResponseHeaders); err != nil {
		errs = append(errs, err)
	}
	if err := CheckRetry(cfg.Retry); err != nil {
		errs = append(errs, err)
	}
	rt.retry.init(cfg.Retry)
	if len(errs) > 0 {
		return nil, errors.Join(append([]error{ErrInvalidRoute}, errs...)...)
	}
	return rt, nil
}

func quote(s string) string { return `"` + s + `"` }
