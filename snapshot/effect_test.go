package snapshot

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/health"
	"github.com/paduraksa/paduraksa/tlsselect"
	"github.com/stretchr/testify/require"
)

// documentLeaves returns the JSON path of every leaf field of the document
// type ("hosts[].routes[].retry.budget") and its index path, for the tests
// that must cover every field.
func documentLeaves() (names []string, paths [][]int) {
	var walk func(typ reflect.Type, path []int, name string)
	walk = func(typ reflect.Type, path []int, name string) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			if !f.IsExported() {
				continue
			}
			p := append(append([]int(nil), path...), i)
			n := name + "." + strings.Split(f.Tag.Get("json"), ",")[0]
			ft := f.Type
			switch {
			case ft.Kind() == reflect.Struct:
				walk(ft, p, n)
			case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct:
				walk(ft.Elem(), p, n)
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				walk(ft.Elem(), p, n+"[]")
			default:
				paths = append(paths, p)
				names = append(names, n[1:])
			}
		}
	}
	walk(reflect.TypeFor[config.Document](), nil, "")
	return names, paths
}

// fingerprint describes everything a compiled snapshot holds, but the
// document itself and its canonical form: a deterministic text of every
// value reachable from the gate, the clusters, the compiled upstreams and
// the planned runtime state, unexported fields included. Two compiles of
// the same document by two compilers with the same affinity key give the
// same text.
func fingerprint(s *Snapshot) string {
	f := printer{seen: map[uintptr]int{}}
	ups := make(map[string]compiledUpstream, len(s.upstreams))
	for id, cu := range s.upstreams {
		c := *cu
		c.canon = nil
		ups[id] = c
	}
	for _, v := range []any{s.gate, s.clusters, ups, s.plan, s.health, s.hostIndex, s.tlsIn} {
		f.value(reflect.ValueOf(v))
		f.b.WriteByte('\n')
	}
	return f.b.String()
}

type printer struct {
	b    strings.Builder
	seen map[uintptr]int
}

// skipped are what differs between two compiles of one document by
// nature (rate-limit seeds and epochs, the wall clock) or is too large to
// print and holds nothing of the config (rate-limit buckets, net/http's
// transport under proxy.Transport, whose config is printed beside it).
var skipped = map[string]bool{"seed": true, "seed0": true, "seed1": true, "epoch": true, "sinceGate": true, "slots": true, "TicketSecret": true}

func (f *printer) value(v reflect.Value) {
	if !v.IsValid() {
		f.b.WriteString("<nil>")
		return
	}
	t := v.Type()
	switch t {
	case reflect.TypeFor[time.Time](), reflect.TypeFor[*gate.State](), reflect.TypeFor[netip.Addr]():
		if t == reflect.TypeFor[netip.Addr]() {
			f.b.WriteString(v.Interface().(netip.Addr).String())
		}
		return
	}
	if strings.HasPrefix(t.String(), "*http.Transport") || strings.HasPrefix(t.String(), "sync.") {
		return
	}
	if strings.HasPrefix(t.String(), "atomic.Pointer[") {
		ptr := v.FieldByName("v").UnsafePointer()
		if ptr == nil {
			f.b.WriteString("nil")
			return
		}
		elem := v.Field(0).Type().Elem().Elem() // _ [0]*T
		f.value(reflect.NewAt(elem, ptr))
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			f.b.WriteString("nil")
			return
		}
		if id, ok := f.seen[v.Pointer()]; ok {
			fmt.Fprintf(&f.b, "@%d", id)
			return
		}
		f.seen[v.Pointer()] = len(f.seen)
		f.b.WriteByte('&')
		f.value(v.Elem())
	case reflect.Interface:
		if v.IsNil() {
			f.b.WriteString("nil")
			return
		}
		f.b.WriteString(v.Elem().Type().String())
		f.value(v.Elem())
	case reflect.Struct:
		f.b.WriteString(t.String() + "{")
		for i := range t.NumField() {
			if skipped[t.Field(i).Name] {
				continue
			}
			f.b.WriteString(t.Field(i).Name + ":")
			f.value(v.Field(i))
			f.b.WriteByte(' ')
		}
		f.b.WriteByte('}')
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			f.b.WriteString("nil")
			return
		}
		f.b.WriteByte('[')
		for i := range v.Len() {
			f.value(v.Index(i))
			f.b.WriteByte(',')
		}
		f.b.WriteByte(']')
	case reflect.Map:
		// Entries in the order of their keys' own text, printed apart, so
		// the map's order reaches nothing.
		type entry struct {
			key string
			v   reflect.Value
		}
		var entries []entry
		for it := v.MapRange(); it.Next(); {
			kf := printer{seen: map[uintptr]int{}}
			kf.value(it.Key())
			entries = append(entries, entry{kf.b.String(), it.Value()})
		}
		slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.key, b.key) })
		f.b.WriteString("map[")
		for _, e := range entries {
			f.b.WriteString(e.key + ":")
			f.value(e.v)
			f.b.WriteByte(',')
		}
		f.b.WriteByte(']')
	case reflect.Func:
		if v.IsNil() {
			f.b.WriteString("nil")
		} else {
			f.b.WriteString("func")
		}
	case reflect.Chan, reflect.UnsafePointer:
	case reflect.String:
		f.b.WriteString(strconv.Quote(v.String()))
	case reflect.Bool:
		f.b.WriteString(strconv.FormatBool(v.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		f.b.WriteString(strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		f.b.WriteString(strconv.FormatUint(v.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		f.b.WriteString(strconv.FormatFloat(v.Float(), 'g', -1, 64))
	default:
		f.b.WriteString(v.Kind().String())
	}
}

// effectBase is a valid document whose every block is present where a
// field needs its block to take effect, with defaults almost everywhere.
func effectBase() *config.Document {
	return &config.Document{
		Global: config.Global{DefaultAnswer: &config.FixedAnswer{}},
		Hosts: []config.Host{
			{Names: []string{"app.test"}, AccessList: "office", Policies: []string{"waf", "rl", "sso"},
				Routes: []config.Route{{ID: "r", Path: "/api", Upstream: "u"}, {Path: "/", Upstream: "u2"}}},
			{Names: []string{"moved.test"}, Kind: "redirect", Redirect: &config.Redirect{To: "https://app.test"}},
			{Names: []string{"fixed.test"}, Kind: "fixed", Fixed: &config.FixedAnswer{}},
		},
		Upstreams: []config.Upstream{
			{ID: "u", Destinations: []config.Destination{{ID: "d", Address: "http://127.0.0.1:9"}}},
			{ID: "u2", Destinations: []config.Destination{{ID: "d", Address: "https://127.0.0.1:9"}}},
		},
		AccessLists:  []config.AccessList{{ID: "office", Allow: []string{"10.0.0.0/8"}}},
		RuleSets:     []config.RuleSet{{ID: "waf", Rules: []config.Rule{{PathPrefix: "/wp-"}}}},
		RateLimits:   []config.RateLimit{{ID: "rl", Requests: 10, Period: "1s", Scope: "shared"}},
		ForwardAuths: []config.ForwardAuth{{ID: "sso", URL: "http://127.0.0.1:9/auth"}},
	}
}

// effect is how one document field takes effect: base prepares both
// documents (the block the field needs), set gives the field a valid value
// other than its default. A field that cannot take effect in this wiring
// names the code it is refused with.
type effect struct {
	base    func(d *config.Document)
	set     func(d *config.Document)
	refused string
	// compiler prepares both compilers (a country lookup, say).
	compiler func(c *Compiler)
}

type countries map[string]string

func (c countries) Country(a netip.Addr) string { return c[a.String()] }

func h0(d *config.Document) *config.Host     { return &d.Hosts[0] }
func r0(d *config.Document) *config.Route    { return &d.Hosts[0].Routes[0] }
func u0(d *config.Document) *config.Upstream { return &d.Upstreams[0] }

// effects has a case for every leaf field of the document.
func effects() map[string]effect {
	no := false
	withRouteRule := func(d *config.Document) {
		r0(d).Headers = config.Headers{Request: []config.HeaderRule{{Name: "X-A", Value: "1"}}, Response: []config.HeaderRule{{Name: "X-A", Value: "1"}}}
	}
	withHostRule := func(d *config.Document) {
		h0(d).Headers = config.Headers{Request: []config.HeaderRule{{Name: "X-A", Value: "1"}}, Response: []config.HeaderRule{{Name: "X-A", Value: "1"}}}
	}
	withHeaderMatch := func(d *config.Document) { r0(d).Match.Headers = []config.HeaderMatch{{Name: "X-A", Value: "1"}} }
	withQueryMatch := func(d *config.Document) { r0(d).Match.Query = []config.QueryMatch{{Name: "a", Value: "1"}} }
	active := func(d *config.Document) { u0(d).Health.Active.Enabled = true }
	passive := func(d *config.Document) { u0(d).Health.Passive.Enabled = true }
	outlier := func(d *config.Document) { u0(d).Health.Outlier.ConsecutiveGatewayErrors = 5 }
	affinity := func(d *config.Document) { u0(d).Affinity.Enabled = true }
	respond := func(d *config.Document) {
		d.RuleSets[0].Rules = append(d.RuleSets[0].Rules, config.Rule{PathExact: "/x", Action: "respond", Respond: &config.FixedAnswer{Status: 410}})
	}
	user := func(d *config.Document) {
		d.AccessLists[0].Users = []config.BasicUser{{Name: "ann", PasswordHash: testBcrypt}}
	}
	lookup := func(c *Compiler) { c.Countries = countries{} }
	nine := 9
	half := 0.5
	withBackends := func(d *config.Document) {
		r0(d).Upstream, r0(d).Backends = "", []config.Backend{{Upstream: "u", Weight: &nine}, {Upstream: "u2"}}
	}
	withForce := func(d *config.Document) {
		withBackends(d)
		r0(d).Split.Force = []config.Force{{Header: "X-Canary", Value: "always", Upstream: "u2"}}
	}
	withMirror := func(d *config.Document) {
		d.Upstreams = append(d.Upstreams,
			config.Upstream{ID: "m", Destinations: []config.Destination{{ID: "d", Address: "http://127.0.0.1:9"}}},
			config.Upstream{ID: "m2", Destinations: []config.Destination{{ID: "d", Address: "http://127.0.0.1:8"}}})
		r0(d).Mirror = &config.Mirror{Upstream: "m"}
	}
	redirect := func(d *config.Document) {
		r0(d).Upstream, r0(d).Redirect = "", &config.RouteRedirect{Host: "a.example"}
	}
	fixed := func(d *config.Document) { r0(d).Upstream, r0(d).Fixed = "", &config.FixedAnswer{} }
	return map[string]effect{
		"global.trustedProxies":            {set: func(d *config.Document) { d.Global.TrustedProxies = []string{"10.0.0.0/8"} }},
		"global.trustForwardedProto":       {set: func(d *config.Document) { d.Global.TrustForwardedProto = true }},
		"global.zone":                      {base: func(d *config.Document) { u0(d).LoadBalancing = "PreferLocalZone" }, set: func(d *config.Document) { d.Global.Zone = "eu-1" }},
		"global.server":                    {set: func(d *config.Document) { d.Global.Server = "edge" }},
		"global.defaultAnswer.status":      {set: func(d *config.Document) { d.Global.DefaultAnswer.Status = 410 }},
		"global.defaultAnswer.contentType": {set: func(d *config.Document) { d.Global.DefaultAnswer.ContentType = "text/html" }},
		"global.defaultAnswer.body":        {set: func(d *config.Document) { d.Global.DefaultAnswer.Body = "gone" }},
		"global.cloudflare":                {set: func(d *config.Document) { d.Global.Cloudflare = true }},
		"global.probeSources":              {set: func(d *config.Document) { d.Global.ProbeSources = []string{"192.0.2.1"} }},
		"global.httpsPort": {base: func(d *config.Document) { h0(d).HTTPSRedirect = &config.HTTPSRedirect{} },
			set: func(d *config.Document) { d.Global.HTTPSPort = 8443 }},

		"hosts[].names": {set: func(d *config.Document) { h0(d).Names = append(h0(d).Names, "www.app.test") }},
		"hosts[].kind": {set: func(d *config.Document) {
			d.Hosts[2].Kind, d.Hosts[2].Fixed, d.Hosts[2].Redirect = "redirect", nil, &config.Redirect{To: "https://app.test"}
		}},
		"hosts[].redirect.to":       {set: func(d *config.Document) { d.Hosts[1].Redirect.To = "https://app.test/new" }},
		"hosts[].redirect.status":   {set: func(d *config.Document) { d.Hosts[1].Redirect.Status = 301 }},
		"hosts[].redirect.dropPath": {set: func(d *config.Document) { d.Hosts[1].Redirect.DropPath = true }},
		"hosts[].fixed.status":      {set: func(d *config.Document) { d.Hosts[2].Fixed.Status = 503 }},
		"hosts[].fixed.contentType": {set: func(d *config.Document) { d.Hosts[2].Fixed.ContentType = "text/html" }},
		"hosts[].fixed.body":        {set: func(d *config.Document) { d.Hosts[2].Fixed.Body = "down" }},

		"hosts[].routes[].id":           {set: func(d *config.Document) { r0(d).ID = "api" }},
		"hosts[].routes[].path":         {set: func(d *config.Document) { r0(d).Path = "/v2" }},
		"hosts[].routes[].allowInPath":  {set: func(d *config.Document) { r0(d).AllowInPath = []string{"encodedSlash"} }},
		"hosts[].routes[].upstream":     {set: func(d *config.Document) { r0(d).Upstream = "u2" }},
		"hosts[].routes[].policies":     {set: func(d *config.Document) { r0(d).Policies = []string{"waf"} }},
		"hosts[].routes[].maxBodyBytes": {set: func(d *config.Document) { r0(d).MaxBodyBytes = 10 }},
		"hosts[].routes[].hostHeader":   {set: func(d *config.Document) { r0(d).HostHeader = "destination" }},
		"hosts[].routes[].hostName": {base: func(d *config.Document) { r0(d).HostHeader, r0(d).HostName = "custom", "a.internal" },
			set: func(d *config.Document) { r0(d).HostName = "b.internal" }},
		"hosts[].routes[].rewrite.stripPrefix": {set: func(d *config.Document) { r0(d).Rewrite.StripPrefix = true }},
		"hosts[].routes[].rewrite.addPrefix":   {set: func(d *config.Document) { r0(d).Rewrite.AddPrefix = "/v1" }},
		"hosts[].routes[].rewrite.rewriteLocation": {base: func(d *config.Document) { r0(d).Rewrite.StripPrefix = true },
			set: func(d *config.Document) { r0(d).Rewrite.RewriteLocation = &no }},
		"hosts[].routes[].headers.request[].name":       {base: withRouteRule, set: func(d *config.Document) { r0(d).Headers.Request[0].Name = "X-B" }},
		"hosts[].routes[].headers.request[].operation":  {base: withRouteRule, set: func(d *config.Document) { r0(d).Headers.Request[0].Operation = "add" }},
		"hosts[].routes[].headers.request[].value":      {base: withRouteRule, set: func(d *config.Document) { r0(d).Headers.Request[0].Value = "2" }},
		"hosts[].routes[].headers.response[].name":      {base: withRouteRule, set: func(d *config.Document) { r0(d).Headers.Response[0].Name = "X-B" }},
		"hosts[].routes[].headers.response[].operation": {base: withRouteRule, set: func(d *config.Document) { r0(d).Headers.Response[0].Operation = "add" }},
		"hosts[].routes[].headers.response[].value":     {base: withRouteRule, set: func(d *config.Document) { r0(d).Headers.Response[0].Value = "2" }},
		"hosts[].routes[].pathType":                     {set: func(d *config.Document) { r0(d).PathType = "exact" }},
		"hosts[].routes[].match.methods":                {set: func(d *config.Document) { r0(d).Match.Methods = []string{"GET"} }},
		"hosts[].routes[].match.headers[].name":         {base: withHeaderMatch, set: func(d *config.Document) { r0(d).Match.Headers[0].Name = "X-B" }},
		"hosts[].routes[].match.headers[].type":         {base: withHeaderMatch, set: func(d *config.Document) { r0(d).Match.Headers[0].Type = "prefix" }},
		"hosts[].routes[].match.headers[].value":        {base: withHeaderMatch, set: func(d *config.Document) { r0(d).Match.Headers[0].Value = "2" }},
		"hosts[].routes[].match.query[].name":           {base: withQueryMatch, set: func(d *config.Document) { r0(d).Match.Query[0].Name = "b" }},
		"hosts[].routes[].match.query[].type":           {base: withQueryMatch, set: func(d *config.Document) { r0(d).Match.Query[0].Type = "regex" }},
		"hosts[].routes[].match.query[].value":          {base: withQueryMatch, set: func(d *config.Document) { r0(d).Match.Query[0].Value = "2" }},
		"hosts[].routes[].order":                        {set: func(d *config.Document) { r0(d).Order = 1 }},
		"hosts[].routes[].rewrite.template": {base: func(d *config.Document) { r0(d).PathType, r0(d).Path = "template", "/api/{**rest}" },
			set: func(d *config.Document) { r0(d).Rewrite.Template = "/v2/{rest}" }},
		"hosts[].routes[].rewrite.replacePrefix": {set: func(d *config.Document) { r0(d).Rewrite.ReplacePrefix = "/v2" }},
		"hosts[].routes[].rewrite.path":          {set: func(d *config.Document) { r0(d).Rewrite.Path = "/x" }},
		"hosts[].routes[].rewrite.query.set":     {set: func(d *config.Document) { r0(d).Rewrite.Query.Set = map[string]string{"a": "1"} }},
		"hosts[].routes[].rewrite.query.add":     {set: func(d *config.Document) { r0(d).Rewrite.Query.Add = map[string]string{"a": "1"} }},
		"hosts[].routes[].rewrite.query.remove":  {set: func(d *config.Document) { r0(d).Rewrite.Query.Remove = []string{"a"} }},
		"hosts[].routes[].redirect.scheme":       {base: redirect, set: func(d *config.Document) { r0(d).Redirect.Scheme = "https" }},
		"hosts[].routes[].redirect.host":         {base: redirect, set: func(d *config.Document) { r0(d).Redirect.Host = "b.example" }},
		"hosts[].routes[].redirect.port":         {base: redirect, set: func(d *config.Document) { r0(d).Redirect.Port = 8443 }},
		"hosts[].routes[].redirect.path":         {base: redirect, set: func(d *config.Document) { r0(d).Redirect.Path = "/x" }},
		"hosts[].routes[].redirect.prefix":       {base: redirect, set: func(d *config.Document) { r0(d).Redirect.Prefix = "/x" }},
		"hosts[].routes[].redirect.status":       {base: redirect, set: func(d *config.Document) { r0(d).Redirect.Status = 301 }},
		"hosts[].routes[].fixed.status":          {base: fixed, set: func(d *config.Document) { r0(d).Fixed.Status = 503 }},
		"hosts[].routes[].fixed.contentType":     {base: fixed, set: func(d *config.Document) { r0(d).Fixed.ContentType = "text/html" }},
		"hosts[].routes[].fixed.body":            {base: fixed, set: func(d *config.Document) { r0(d).Fixed.Body = "down" }},
		"hosts[].routes[].timeouts.request":      {set: func(d *config.Document) { r0(d).Timeouts.Request = "30s" }},
		"hosts[].routes[].timeouts.perTry":       {set: func(d *config.Document) { r0(d).Timeouts.PerTry = "5s" }},
		"hosts[].routes[].retry.attempts":        {set: func(d *config.Document) { r0(d).Retry.Attempts = 2 }},
		"hosts[].routes[].retry.bodyLimit":       {set: func(d *config.Document) { r0(d).Retry.BodyLimit = 4096 }},
		"hosts[].routes[].retry.budget":          {set: func(d *config.Document) { r0(d).Retry.Budget = 0.5 }},

		"hosts[].routes[].backends[].upstream": {base: withBackends, set: func(d *config.Document) {
			d.Upstreams = append(d.Upstreams, config.Upstream{ID: "u3", Destinations: []config.Destination{{ID: "d", Address: "http://127.0.0.1:7"}}})
			r0(d).Backends[1].Upstream = "u3"
		}},
		"hosts[].routes[].backends[].weight":      {base: withBackends, set: func(d *config.Document) { *r0(d).Backends[0].Weight = 4 }},
		"hosts[].routes[].split.sticky.cookie":    {base: withBackends, set: func(d *config.Document) { r0(d).Split.Sticky.Cookie = "side" }},
		"hosts[].routes[].split.sticky.header":    {base: withBackends, set: func(d *config.Document) { r0(d).Split.Sticky.Header = "X-User" }},
		"hosts[].routes[].split.sticky.client":    {base: withBackends, set: func(d *config.Document) { r0(d).Split.Sticky.Client = true }},
		"hosts[].routes[].split.force[].header":   {base: withForce, set: func(d *config.Document) { r0(d).Split.Force[0].Header = "X-Side" }},
		"hosts[].routes[].split.force[].cookie":   {base: withForce, set: func(d *config.Document) { r0(d).Split.Force[0].Header, r0(d).Split.Force[0].Cookie = "", "side" }},
		"hosts[].routes[].split.force[].value":    {base: withForce, set: func(d *config.Document) { r0(d).Split.Force[0].Value = "yes" }},
		"hosts[].routes[].split.force[].upstream": {base: withForce, set: func(d *config.Document) { r0(d).Split.Force[0].Upstream = "u" }},
		"hosts[].routes[].mirror.upstream":        {base: withMirror, set: func(d *config.Document) { r0(d).Mirror.Upstream = "m2" }},
		"hosts[].routes[].mirror.percent":         {base: withMirror, set: func(d *config.Document) { r0(d).Mirror.Percent = &half }},
		"hosts[].routes[].mirror.maxBodyBytes":    {base: withMirror, set: func(d *config.Document) { r0(d).Mirror.MaxBodyBytes = 1024 }},
		"hosts[].routes[].mirror.maxInFlight":     {base: withMirror, set: func(d *config.Document) { r0(d).Mirror.MaxInFlight = 8 }},
		"hosts[].routes[].mirror.hostName":        {base: withMirror, set: func(d *config.Document) { r0(d).Mirror.HostName = "shadow.internal" }},
		"hosts[].routes[].mirror.timeout":         {base: withMirror, set: func(d *config.Document) { r0(d).Mirror.Timeout = "5s" }},

		"hosts[].accessList":  {base: func(d *config.Document) { h0(d).AccessList = "" }, set: func(d *config.Document) { h0(d).AccessList = "office" }},
		"hosts[].certificate": {base: withCertificate, set: func(d *config.Document) { h0(d).Certificate = "main" }},
		"hosts[].tls.clientAuth": {base: withHostCertificate, set: func(d *config.Document) {
			h0(d).TLS = &config.HostTLS{ClientAuth: "required", ClientCAs: "testdata/tls/cert.pem"}
		}},
		"hosts[].tls.clientCAs": {base: func(d *config.Document) {
			withHostCertificate(d)
			h0(d).TLS = &config.HostTLS{ClientAuth: "required", ClientCAs: "testdata/tls/cert.pem"}
		}, set: func(d *config.Document) { h0(d).TLS.ClientCAs = "testdata/tls/cert2.pem" }},
		"hosts[].server":         {set: func(d *config.Document) { h0(d).Server = "app" }},
		"hosts[].policies":       {set: func(d *config.Document) { h0(d).Policies = []string{"waf"} }},
		"hosts[].tls.minVersion": {base: withHostCertificate, set: func(d *config.Document) { h0(d).TLS = &config.HostTLS{MinVersion: "1.3"} }},
		"hosts[].tls.http1Only":  {base: withHostCertificate, set: func(d *config.Document) { h0(d).TLS = &config.HostTLS{HTTP1Only: true} }},
		"hosts[].tls.http3":      {base: withHostCertificate, set: func(d *config.Document) { h0(d).TLS = &config.HostTLS{HTTP3: true} }},
		"hosts[].tls.altSvc": {base: func(d *config.Document) { withHostCertificate(d); h0(d).TLS = &config.HostTLS{HTTP3: true} },
			set: func(d *config.Document) { h0(d).TLS.AltSvc = `h3=":8443"; ma=60` }},
		"hosts[].hsts.maxAge": {base: func(d *config.Document) { h0(d).HSTS = &config.HSTS{MaxAge: "1h"} }, set: func(d *config.Document) { h0(d).HSTS.MaxAge = "2h" }},
		"hosts[].hsts.includeSubdomains": {base: func(d *config.Document) { h0(d).HSTS = &config.HSTS{MaxAge: "1h"} },
			set: func(d *config.Document) { h0(d).HSTS.IncludeSubdomains = true }},
		"hosts[].hsts.preload": {base: func(d *config.Document) { h0(d).HSTS = &config.HSTS{MaxAge: "1h"} }, set: func(d *config.Document) { h0(d).HSTS.Preload = true }},
		"hosts[].httpsRedirect.status": {base: func(d *config.Document) { h0(d).HTTPSRedirect = &config.HTTPSRedirect{} },
			set: func(d *config.Document) { h0(d).HTTPSRedirect.Status = 301 }},
		"hosts[].httpsRedirect.port": {base: func(d *config.Document) { h0(d).HTTPSRedirect = &config.HTTPSRedirect{} },
			set: func(d *config.Document) { h0(d).HTTPSRedirect.Port = 8443 }},
		"hosts[].robots":                       {set: func(d *config.Document) { h0(d).Robots = "User-agent: *\n" }},
		"hosts[].limits.maxUriBytes":           {set: func(d *config.Document) { h0(d).Limits = &config.RequestLimits{MaxURIBytes: 100} }},
		"hosts[].limits.maxHeaderCount":        {set: func(d *config.Document) { h0(d).Limits = &config.RequestLimits{MaxHeaderCount: 10} }},
		"hosts[].limits.maxHeaderBytes":        {set: func(d *config.Document) { h0(d).Limits = &config.RequestLimits{MaxHeaderBytes: 1000} }},
		"hosts[].limits.maxBodyBytes":          {set: func(d *config.Document) { h0(d).Limits = &config.RequestLimits{MaxBodyBytes: 1000} }},
		"hosts[].headers.request[].name":       {base: withHostRule, set: func(d *config.Document) { h0(d).Headers.Request[0].Name = "X-B" }},
		"hosts[].headers.request[].operation":  {base: withHostRule, set: func(d *config.Document) { h0(d).Headers.Request[0].Operation = "add" }},
		"hosts[].headers.request[].value":      {base: withHostRule, set: func(d *config.Document) { h0(d).Headers.Request[0].Value = "2" }},
		"hosts[].headers.response[].name":      {base: withHostRule, set: func(d *config.Document) { h0(d).Headers.Response[0].Name = "X-B" }},
		"hosts[].headers.response[].operation": {base: withHostRule, set: func(d *config.Document) { h0(d).Headers.Response[0].Operation = "add" }},
		"hosts[].headers.response[].value":     {base: withHostRule, set: func(d *config.Document) { h0(d).Headers.Response[0].Value = "2" }},
		"hosts[].compression.enabled":          {set: func(d *config.Document) { h0(d).Compression.Enabled = true }},
		"hosts[].compression.minimumSize": {base: func(d *config.Document) { h0(d).Compression.Enabled = true },
			set: func(d *config.Document) { h0(d).Compression.MinimumSize = 10 }},
		"hosts[].compression.encodings": {base: func(d *config.Document) { h0(d).Compression.Enabled = true },
			set: func(d *config.Document) { h0(d).Compression.Encodings = []string{"br"} }},
		"hosts[].requestId":             {set: func(d *config.Document) { h0(d).RequestID = "generate" }},
		"hosts[].keepUnderscoreHeaders": {set: func(d *config.Document) { h0(d).KeepUnderscoreHeaders = true }},
		"hosts[].accessLog":             {set: func(d *config.Document) { h0(d).AccessLog = &no }},

		"upstreams[].id":                      {set: func(d *config.Document) { u0(d).ID, r0(d).Upstream = "u9", "u9" }},
		"upstreams[].destinations[].id":       {set: func(d *config.Document) { u0(d).Destinations[0].ID = "d9" }},
		"upstreams[].destinations[].address":  {set: func(d *config.Document) { u0(d).Destinations[0].Address = "http://127.0.0.1:10" }},
		"upstreams[].destinations[].health":   {set: func(d *config.Document) { u0(d).Destinations[0].Health = "http://127.0.0.1:11" }},
		"upstreams[].destinations[].metadata": {set: func(d *config.Document) { u0(d).Destinations[0].Metadata = map[string]string{"zone": "eu-1"} }},
		"upstreams[].loadBalancing":           {set: func(d *config.Document) { u0(d).LoadBalancing = "RoundRobin" }},
		"upstreams[].http.version":            {set: func(d *config.Document) { d.Upstreams[1].HTTP.Version = "2" }},
		"upstreams[].http.versionPolicy":      {set: func(d *config.Document) { u0(d).HTTP.VersionPolicy = "exact" }},
		"upstreams[].http.connectTimeout":     {set: func(d *config.Document) { u0(d).HTTP.ConnectTimeout = "1s" }},
		"upstreams[].http.idleTimeout":        {set: func(d *config.Document) { u0(d).HTTP.IdleTimeout = "1m" }},
		"upstreams[].http.http1Client":        {set: func(d *config.Document) { u0(d).HTTP.HTTP1Client = "netHTTP" }},
		"upstreams[].http.tls.trust":          {set: func(d *config.Document) { d.Upstreams[1].HTTP.TLS.Trust = "any" }},
		"upstreams[].http.tls.pins": {base: func(d *config.Document) {
			d.Upstreams[1].HTTP.TLS = config.UpstreamTLS{Trust: "pinned", Pins: []string{testPin}}
		},
			set: func(d *config.Document) { d.Upstreams[1].HTTP.TLS.Pins = []string{strings.Repeat("0", 64)} }},
		"upstreams[].http.tls.serverName": {set: func(d *config.Document) { d.Upstreams[1].HTTP.TLS.ServerName = "api.internal" }},
		"upstreams[].http.tls.caFile": {base: func(d *config.Document) {
			d.Upstreams[1].HTTP.TLS = config.UpstreamTLS{Trust: "caFile", CAFile: "testdata/tls/cert.pem"}
		},
			set: func(d *config.Document) { d.Upstreams[1].HTTP.TLS.CAFile = "testdata/tls/cert2.pem" }},
		"upstreams[].http.tls.clientCertificate": {base: withCertificate,
			set: func(d *config.Document) { d.Upstreams[1].HTTP.TLS.ClientCertificate = "main" }},
		"upstreams[].http.proxyProtocol": {set: func(d *config.Document) { u0(d).HTTP.ProxyProtocol = "v2" }},
		// Drain.
		"upstreams[].destinations[].drain": {set: func(d *config.Document) { u0(d).Destinations[0].Drain = true }},
		// Circuit breakers.
		"upstreams[].limits.maxInFlight":        {set: func(d *config.Document) { u0(d).Limits.MaxInFlight = 100 }},
		"upstreams[].limits.maxPending":         {set: func(d *config.Document) { u0(d).Limits.MaxPending = 10 }},
		"upstreams[].limits.maxRetriesInFlight": {set: func(d *config.Document) { u0(d).Limits.MaxRetriesInFlight = 3 }},
		"upstreams[].limits.maxConnectionsPerDestination": {set: func(d *config.Document) {
			u0(d).Limits.MaxConnectionsPerDestination = 8
		}},
		"upstreams[].health.active.enabled":  {set: active},
		"upstreams[].health.active.interval": {base: active, set: func(d *config.Document) { u0(d).Health.Active.Interval = "1m" }},
		"upstreams[].health.active.timeout":  {base: active, set: func(d *config.Document) { u0(d).Health.Active.Timeout = "1s" }},
		"upstreams[].health.active.path":     {base: active, set: func(d *config.Document) { u0(d).Health.Active.Path = "/healthz" }},
		"upstreams[].health.active.query":    {base: active, set: func(d *config.Document) { u0(d).Health.Active.Query = "deep=1" }},
		"upstreams[].health.active.policy": {base: active, set: func(d *config.Document) { u0(d).Health.Active.Policy = "Custom" },
			compiler: func(c *Compiler) {
				c.Health = health.New(health.Options{ActivePolicies: map[string]health.ActivePolicy{"Custom": health.ConsecutiveFailures{}}})
			}},
		"upstreams[].health.active.threshold":           {base: active, set: func(d *config.Document) { u0(d).Health.Active.Threshold = 5 }},
		"upstreams[].health.passive.enabled":            {set: passive},
		"upstreams[].health.passive.policy":             {base: passive, set: func(d *config.Document) { u0(d).Health.Passive.Policy = "FailureRateWith5xx" }},
		"upstreams[].health.passive.window":             {base: passive, set: func(d *config.Document) { u0(d).Health.Passive.Window = "30s" }},
		"upstreams[].health.passive.minRequests":        {base: passive, set: func(d *config.Document) { u0(d).Health.Passive.MinRequests = 50 }},
		"upstreams[].health.passive.failureRate":        {base: passive, set: func(d *config.Document) { u0(d).Health.Passive.FailureRate = 0.5 }},
		"upstreams[].health.passive.reactivationPeriod": {base: passive, set: func(d *config.Document) { u0(d).Health.Passive.ReactivationPeriod = "5m" }},
		"upstreams[].health.availability":               {set: func(d *config.Document) { u0(d).Health.Availability = "HealthyAndUnknown" }},
		"upstreams[].health.probeFirst":                 {base: active, set: func(d *config.Document) { u0(d).Health.ProbeFirst = true }},
		"upstreams[].health.slowStart":                  {set: func(d *config.Document) { u0(d).Health.SlowStart = "30s" }},
		"upstreams[].affinity.enabled":                  {set: affinity},
		"upstreams[].affinity.mode":                     {base: affinity, set: func(d *config.Document) { u0(d).Affinity.Mode = "ArrCookie" }},
		"upstreams[].affinity.failurePolicy":            {base: affinity, set: func(d *config.Document) { u0(d).Affinity.FailurePolicy = "Return503" }},
		"upstreams[].affinity.key":                      {base: affinity, set: func(d *config.Document) { u0(d).Affinity.Key = "sticky" }},
		"upstreams[].affinity.cookie.path":              {base: affinity, set: func(d *config.Document) { u0(d).Affinity.Cookie.Path = "/app" }},
		"upstreams[].affinity.cookie.domain":            {base: affinity, set: func(d *config.Document) { u0(d).Affinity.Cookie.Domain = "app.test" }},
		"upstreams[].affinity.cookie.httpOnly":          {base: affinity, set: func(d *config.Document) { u0(d).Affinity.Cookie.HTTPOnly = &no }},
		"upstreams[].affinity.cookie.secure":            {base: affinity, set: func(d *config.Document) { u0(d).Affinity.Cookie.Secure = "Always" }},
		"upstreams[].affinity.cookie.sameSite":          {base: affinity, set: func(d *config.Document) { u0(d).Affinity.Cookie.SameSite = "Strict" }},
		"upstreams[].affinity.cookie.maxAge":            {base: affinity, set: func(d *config.Document) { u0(d).Affinity.Cookie.MaxAge = "1h" }},
		"upstreams[].metadata":                          {set: func(d *config.Document) { u0(d).Metadata = map[string]string{"team": "api"} }},

		"accessLists[].id":                   {set: func(d *config.Document) { d.AccessLists[0].ID, h0(d).AccessList = "lan", "lan" }},
		"accessLists[].allow":                {set: func(d *config.Document) { d.AccessLists[0].Allow = []string{"192.168.0.0/16"} }},
		"accessLists[].deny":                 {set: func(d *config.Document) { d.AccessLists[0].Deny = []string{"10.9.9.9"} }},
		"accessLists[].allowCountries":       {set: func(d *config.Document) { d.AccessLists[0].AllowCountries = []string{"DE"} }, compiler: lookup},
		"accessLists[].denyCountries":        {set: func(d *config.Document) { d.AccessLists[0].DenyCountries = []string{"DE"} }, compiler: lookup},
		"accessLists[].mode":                 {set: func(d *config.Document) { d.AccessLists[0].Mode = "shadow" }},
		"accessLists[].users[].name":         {base: user, set: func(d *config.Document) { d.AccessLists[0].Users[0].Name = "bob" }},
		"accessLists[].users[].passwordHash": {base: user, set: func(d *config.Document) { d.AccessLists[0].Users[0].PasswordHash = testBcrypt2 }},
		"accessLists[].realm":                {base: user, set: func(d *config.Document) { d.AccessLists[0].Realm = "office" }},
		"certificates[].id": {base: withHostCertificate, set: func(d *config.Document) {
			d.Certificates[0].ID, h0(d).Certificate = "other", "other"
		}},
		"certificates[].certFile": {base: withHostCertificate, set: func(d *config.Document) {
			d.Certificates[0].CertFile, d.Certificates[0].KeyFile = "testdata/tls/cert2.pem", "testdata/tls/key2.pem"
		}},
		"certificates[].keyFile": {base: withHostCertificate, set: func(d *config.Document) { d.Certificates[0].KeyFile = "testdata/tls/key2.pem" },
			refused: tlsselect.CodeCertificateKeyMismatch},
		"certificates[].acme": {base: withHostCertificate, set: func(d *config.Document) { d.Certificates[0] = config.Certificate{ID: "main", ACME: true} },
			refused: CodeCertificateSourceMissing},
		"global.tls.defaultCertificate": {base: withCertificate, set: func(d *config.Document) { d.Global.TLS.DefaultCertificate = "main" }},
		"global.tls.unknownSni":         {base: withHostCertificate, set: func(d *config.Document) { d.Global.TLS.UnknownSNI = "refuse" }},
		"global.tls.noSni":              {base: withHostCertificate, set: func(d *config.Document) { d.Global.TLS.NoSNI = "refuse" }},
		"global.tls.ticketKeyPeriod":    {base: withHostCertificate, set: func(d *config.Document) { d.Global.TLS.TicketKeyPeriod = "1h" }},

		"ruleSets[].id":                          {set: func(d *config.Document) { d.RuleSets[0].ID, h0(d).Policies[0] = "wall", "wall" }},
		"ruleSets[].mode":                        {set: func(d *config.Document) { d.RuleSets[0].Mode = "off" }},
		"ruleSets[].rules[].pathPrefix":          {set: func(d *config.Document) { d.RuleSets[0].Rules[0].PathPrefix = "/admin" }},
		"ruleSets[].rules[].pathExact":           {set: func(d *config.Document) { d.RuleSets[0].Rules[0].PathExact = "/wp-login.php" }},
		"ruleSets[].rules[].methods":             {set: func(d *config.Document) { d.RuleSets[0].Rules[0].Methods = []string{"POST"} }},
		"ruleSets[].rules[].userAgentContains":   {set: func(d *config.Document) { d.RuleSets[0].Rules[0].UserAgentContains = "bot" }},
		"ruleSets[].rules[].action":              {set: func(d *config.Document) { d.RuleSets[0].Rules[0].Action = "allow" }},
		"ruleSets[].rules[].respond.status":      {base: respond, set: func(d *config.Document) { d.RuleSets[0].Rules[1].Respond.Status = 451 }},
		"ruleSets[].rules[].respond.contentType": {base: respond, set: func(d *config.Document) { d.RuleSets[0].Rules[1].Respond.ContentType = "text/html" }},
		"ruleSets[].rules[].respond.body":        {base: respond, set: func(d *config.Document) { d.RuleSets[0].Rules[1].Respond.Body = "gone" }},

		"rateLimits[].id":           {set: func(d *config.Document) { d.RateLimits[0].ID, h0(d).Policies[1] = "slow", "slow" }},
		"rateLimits[].mode":         {set: func(d *config.Document) { d.RateLimits[0].Mode = "shadow" }},
		"rateLimits[].requests":     {set: func(d *config.Document) { d.RateLimits[0].Requests = 20 }},
		"rateLimits[].period":       {set: func(d *config.Document) { d.RateLimits[0].Period = "1m" }},
		"rateLimits[].burst":        {set: func(d *config.Document) { d.RateLimits[0].Burst = 5 }},
		"rateLimits[].scope":        {set: func(d *config.Document) { d.RateLimits[0].Scope = "route" }},
		"rateLimits[].exemptProbes": {set: func(d *config.Document) { d.RateLimits[0].ExemptProbes = true }},
		"rateLimits[].buckets": {set: func(d *config.Document) { d.RateLimits[0].Buckets = "cluster" }, compiler: func(c *Compiler) {
			if c.GateState == nil {
				c.GateState = new(gate.State)
			}
			c.GateState.SetRateLimitStore(gate.RateLimitStoreConfig{Store: allowAll{}})
		}},

		"forwardAuths[].id":              {set: func(d *config.Document) { d.ForwardAuths[0].ID, h0(d).Policies[2] = "auth", "auth" }},
		"forwardAuths[].mode":            {set: func(d *config.Document) { d.ForwardAuths[0].Mode = "off" }},
		"forwardAuths[].url":             {set: func(d *config.Document) { d.ForwardAuths[0].URL = "http://127.0.0.1:9/check" }},
		"forwardAuths[].timeout":         {set: func(d *config.Document) { d.ForwardAuths[0].Timeout = "1s" }},
		"forwardAuths[].requestHeaders":  {set: func(d *config.Document) { d.ForwardAuths[0].RequestHeaders = []string{"Authorization"} }},
		"forwardAuths[].identityHeaders": {set: func(d *config.Document) { d.ForwardAuths[0].IdentityHeaders = []string{"X-User"} }},

		// Failures: connect-failure retries and outlier ejection.
		"hosts[].routes[].retry.connectFailures":              {set: func(d *config.Document) { r0(d).Retry.ConnectFailures = "off" }},
		"upstreams[].health.outlier.consecutiveGatewayErrors": {set: func(d *config.Document) { u0(d).Health.Outlier.ConsecutiveGatewayErrors = 3 }},
		"upstreams[].health.outlier.consecutive5xx":           {set: func(d *config.Document) { u0(d).Health.Outlier.Consecutive5xx = 3 }},
		"upstreams[].health.outlier.baseEjectionTime":         {base: outlier, set: func(d *config.Document) { u0(d).Health.Outlier.BaseEjectionTime = "10s" }},
		"upstreams[].health.outlier.maxEjectionTime":          {base: outlier, set: func(d *config.Document) { u0(d).Health.Outlier.MaxEjectionTime = "60s" }},
		"upstreams[].health.outlier.maxEjectionPercent":       {base: outlier, set: func(d *config.Document) { u0(d).Health.Outlier.MaxEjectionPercent = 20 }},
	}
}

// allowAll is a rate-limit store that allows everything.
type allowAll struct{}

func (allowAll) Allow(context.Context, string, time.Duration, int) (bool, error) { return true, nil }

// testBcrypt2 is another well-formed bcrypt hash (cost 4).
const testBcrypt2 = "$2a$04$Tj0l7dyXcLk4SQZtJrMKj.QT7vUm9D8iGvAvJQnWmkR4oK5G1uQ2W"

// deepCopy returns a copy of d that shares nothing with it.
func deepCopy(t *testing.T, d *config.Document) *config.Document {
	t.Helper()
	b, err := json.Marshal(d)
	require.NoError(t, err)
	var c config.Document
	require.NoError(t, json.Unmarshal(b, &c))
	return &c
}

// TestEveryFieldTakesEffect: for every field of the document, a valid
// value other than its default changes what the document compiles to
// (the gate, the clusters, their policies, health and client configs, the
// planned destinations), or, where it cannot take effect in this wiring,
// is refused with a code. A field added to the document without a case
// here fails the test, and so does a field the compiler drops.
func TestEveryFieldTakesEffect(t *testing.T) {
	cases := effects()
	names, _ := documentLeaves()
	key := []byte("0123456789abcdef0123456789abcdef")
	compile := func(t *testing.T, e effect, d *config.Document) (*Snapshot, error) {
		t.Helper()
		c := &Compiler{AffinityKey: key}
		if e.compiler != nil {
			e.compiler(c)
		}
		return c.compileDocument(d)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			e, ok := cases[name]
			if !ok {
				t.Fatalf("no case says how %s takes effect: add one to effects()", name)
			}
			base := effectBase()
			if e.base != nil {
				e.base(base)
			}
			changed := deepCopy(t, base)
			e.set(changed)
			before, err := compile(t, e, base)
			require.NoError(t, err, "the base document")
			again, err := compile(t, e, deepCopy(t, base))
			require.NoError(t, err)
			require.Equal(t, fingerprint(before), fingerprint(again), "two compiles of one document differ")
			after, err := compile(t, e, changed)
			if e.refused != "" {
				require.Error(t, err, "%s cannot take effect: it must be refused", name)
				require.Contains(t, codePaths(Problems(err))[0], e.refused)
				return
			}
			require.NoError(t, err)
			if fingerprint(before) == fingerprint(after) {
				t.Errorf("%s was accepted and changed nothing the document compiles to", name)
			}
		})
	}
	for name := range cases {
		if !slices.Contains(names, name) {
			t.Errorf("a case for %s, which the document does not have", name)
		}
	}
}

// withCertificate adds the test certificate "main" (testdata/tls, for
// app.test); withHostCertificate also gives it to the first host.
func withCertificate(d *config.Document) {
	d.Certificates = []config.Certificate{{ID: "main", CertFile: "testdata/tls/cert.pem", KeyFile: "testdata/tls/key.pem"}}
}

func withHostCertificate(d *config.Document) {
	withCertificate(d)
	h0(d).Certificate = "main"
}
