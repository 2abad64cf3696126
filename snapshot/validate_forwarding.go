package snapshot

import (
	"github.com/paduraksa/paduraksa/proxy"
)

// hostForwarding checks a host's forwarding settings: custom headers,
// compression, request ID.
func (c *docCheck) hostForwarding(i int, h *Host) {
	if h.Headers.any() {
		c.headerRules(hostPath(i, ".headers"), &h.Headers)
	}
	cp := &h.Compression
	if cp.MinimumSize < 0 || cp.MinimumSize > 1<<20 {
		c.add(CodeHostCompressionMinimumSizeInvalid, hostPath(i, ".compression.minimumSize"), itoa(cp.MinimumSize)+" is not 0 to 1048576 bytes")
	}
	seen := map[string]bool{}
	for k, e := range cp.Encodings {
		switch {
		case e != "gzip" && e != "zstd" && e != "br":
			c.add(CodeHostCompressionEncodingInvalid, hostPath(i, index(".compression.encodings", k)), quote(e)+" is not gzip, zstd or br")
		case seen[e]:
			c.add(CodeHostCompressionEncodingInvalid, hostPath(i, index(".compression.encodings", k)), quote(e)+" is listed twice")
		}
		seen[e] = true
	}
	switch h.RequestID {
	case "", "pass", "keep", "generate":
	default:
		c.add(CodeHostRequestIDInvalid, hostPath(i, ".requestId"), quote(h.RequestID)+" is not pass, keep or generate")
	}
}

// routeForwarding checks a route's Host mode, rewrite, headers and retries.
func (c *docCheck) routeForwarding(i, j int, r *Route) {
	switch r.HostHeader {
	case "", "client", "destination":
		if r.HostName != "" {
			c.add(CodeRouteHostNameInvalid, routePath(i, j, ".hostName"), "a host name is only used with hostHeader \"custom\"")
		}
	case "custom":
		if !proxy.ValidHostHeader(r.HostName) {
			c.add(CodeRouteHostNameInvalid, routePath(i, j, ".hostName"), quote(r.HostName)+" is not a host name or IP literal with an optional port")
		}
	default:
		c.add(CodeRouteHostHeaderInvalid, routePath(i, j, ".hostHeader"), quote(r.HostHeader)+" is not client, destination or custom")
	}
	if r.Rewrite.StripPrefix && routeKey(r.Path) == "" {
		c.add(CodeRouteRewriteStripPrefixRoot, routePath(i, j, ".rewrite.stripPrefix"), "the route \"/\" has no prefix to strip")
	}
	if p := r.Rewrite.AddPrefix; p != "" && proxy.CheckRewrite(proxy.Rewrite{AddPrefix: p}) != nil {
		c.add(CodeRouteRewriteAddPrefixInvalid, routePath(i, j, ".rewrite.addPrefix"), quote(p)+": want /segments of URL path characters and valid escapes, no trailing /, no empty, . or .. segment, at most 256 bytes")
	}
	if r.Headers.any() {
		c.headerRules(routePath(i, j, ".headers"), &r.Headers)
	}
	rt := &r.Retry
	if rt.Attempts < 0 || rt.Attempts > proxy.MaxRetryAttempts {
		c.add(CodeRouteRetryAttemptsInvalid, routePath(i, j, ".retry.attempts"), itoa(rt.Attempts)+" is not 0 to 5")
	}
	if rt.BodyLimit < 0 || rt.BodyLimit > 1<<20 {
		c.add(CodeRouteRetryBodyLimitInvalid, routePath(i, j, ".retry.bodyLimit"), itoa(rt.BodyLimit)+" is not 0 to 1048576 bytes")
	}
	if !(rt.Budget >= 0 && rt.Budget <= 1) {
		c.add(CodeRouteRetryBudgetInvalid, routePath(i, j, ".retry.budget"), "not a share between 0 and 1")
	}
}

// headerRules checks one layer of custom header rules.
// any reports whether h holds a rule: only then is its path worth
// building.
func (h *Headers) any() bool { return len(h.Request)+len(h.Response) > 0 }

func (c *docCheck) headerRules(path string, h *Headers) {
	for _, dir := range [...]struct {
		k     string
		d     proxy.Direction
		rules []HeaderRule
	}{{".request", proxy.Request, h.Request}, {".response", proxy.Response, h.Response}} {
		if len(dir.rules) > proxy.MaxHeaderRules {
			c.add(CodeHeadersTooMany, path+dir.k, itoa(len(dir.rules))+" rules, at most 32")
		}
		names := map[string]int{}
		for k, r := range dir.rules {
			p := path + index(dir.k, k)
			op, ok := headerOp(r.Operation)
			if !ok {
				c.add(CodeHeadersOperationInvalid, p+".operation", quote(r.Operation)+" is not set, add or remove")
				continue
			}
			var code string
			if ps := Problems(proxy.CheckHeaderRule(dir.d, proxy.HeaderRule{Name: r.Name, Op: op, Value: r.Value})); len(ps) > 0 {
				code = ps[0].Code
			}
			switch code {
			case "":
			case proxy.CodeHeaderNameInvalid:
				c.add(CodeHeadersNameInvalid, p+".name", quote(r.Name)+" is not 1-64 token characters")
				continue
			case proxy.CodeHeaderNameReserved:
				c.add(CodeHeadersNameReserved, p+".name", quote(r.Name)+" is owned by the proxy and cannot be a custom header")
				continue
			case proxy.CodeHeaderOpInvalid:
				c.add(CodeHeadersOperationInvalid, p+".operation", "Set-Cookie only takes add")
			case proxy.CodeHeaderValueUnexpected:
				c.add(CodeHeadersValueUnexpected, p+".value", "remove takes no value")
			default:
				c.add(CodeHeadersValueInvalid, p+".value", "not 1-4096 visible characters without leading or trailing space")
			}
			key := canonicalHeaderKey(r.Name)
			if prev, dup := names[key]; dup {
				c.add(CodeHeadersNameDuplicate, p+".name", quote(r.Name)+" has a rule already at "+index(dir.k[1:], prev))
			} else {
				names[key] = k
			}
		}
	}
}

func headerOp(s string) (proxy.HeaderOp, bool) {
	switch s {
	case "", "set":
		return proxy.HeaderSet, true
	case "add":
		return proxy.HeaderAdd, true
	case "remove":
		return proxy.HeaderRemove, true
	}
	return 0, false
}

func canonicalHeaderKey(s string) string {
	b := []byte(s)
	upper := true
	for i, c := range b {
		if upper && 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		} else if !upper && 'A' <= c && c <= 'Z' {
			b[i] = c - 'A' + 'a'
		}
		upper = c == '-'
	}
	return string(b)
}
