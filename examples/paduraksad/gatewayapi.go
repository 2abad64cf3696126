package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/paduraksa/paduraksa/admin"
	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/gatewayapi"
	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/paduraksa/paduraksa/source"
)

// Problem codes of the daemon's Gateway API wiring.
const (
	// codeGatewayListeners: the Gateways' HTTP and HTTPS listeners are not
	// the daemon's -http and -https.
	codeGatewayListeners = "paduraksad.gatewayApi.listeners"
	// codeGatewaySecrets: a Secret's files could not be written.
	codeGatewaySecrets = "paduraksad.gatewayApi.secrets"
	// codeGatewayEncode: the combined document could not be encoded.
	codeGatewayEncode = "paduraksad.gatewayApi.encode"
)

// gatewayDocs makes the daemon's document of the -gateway-api file's
// objects, beside the -config file's document when there is one: the
// -config document's global settings, policies and access lists, and its
// hosts, upstreams and certificates after the translation's (a host name
// or an ID in both is refused by the publisher, as in one document).
// Each file is watched by a source.File of its own (two agreeing reads,
// SIGHUP); a change of either publishes the combination of both as last
// read. The publisher's problems are said at the objects' paths
// (gatewayapi.Result.Explain) or at the -config document's own.
type gatewayDocs struct {
	secretDir   string
	http, https bool // the daemon's listeners
	// simulation composes for paduraksad simulate: the listeners are not
	// checked against the daemon's, and no Secret is written.
	simulation bool

	mu   sync.Mutex
	cfg  []byte // the -config file as last read; nil without one
	objs []byte // the -gateway-api file as last read
	res  *gatewayapi.Result
}

// compose returns the document of the files as last read, or the
// problems that refuse it.
func (g *gatewayDocs) compose() ([]byte, []*snapshot.ValidationError) {
	objs, err := gatewayapi.Decode(g.objs)
	if err != nil {
		return nil, problem.All(err)
	}
	res, err := gatewayapi.Translate(objs, gatewayapi.Options{SecretDir: g.secretDir})
	if err != nil {
		return nil, problem.All(err)
	}
	var probs problem.List
	if g.simulation {
		g.http, g.https = res.HTTP.Port != 0, res.HTTPS.Port != 0
	}
	if (res.HTTP.Port != 0) != g.http {
		probs.Add(codeGatewayListeners, "-http", listenerMismatch("HTTP", res.HTTP.Port, g.http, "-http"))
	}
	if (res.HTTPS.Port != 0) != g.https {
		probs.Add(codeGatewayListeners, "-https", listenerMismatch("HTTPS", res.HTTPS.Port, g.https, "-https"))
	}
	if len(probs) > 0 {
		return nil, probs
	}
	doc := res.Document
	if g.cfg != nil {
		cd, err := config.Decode(g.cfg)
		if err != nil {
			return nil, problem.All(err)
		}
		port := doc.Global.HTTPSPort
		doc.Global = cd.Global
		if doc.Global.HTTPSPort == 0 {
			doc.Global.HTTPSPort = port
		}
		doc.Hosts = append(doc.Hosts, cd.Hosts...)
		doc.Upstreams = append(doc.Upstreams, cd.Upstreams...)
		doc.Certificates = append(doc.Certificates, cd.Certificates...)
		doc.AccessLists, doc.RuleSets, doc.RateLimits, doc.ForwardAuths = cd.AccessLists, cd.RuleSets, cd.RateLimits, cd.ForwardAuths
	}
	data, err := json.Marshal(&doc)
	if err != nil {
		return nil, []*snapshot.ValidationError{{Code: codeGatewayEncode, Msg: err.Error()}}
	}
	if g.simulation {
		g.res = res
		return data, nil
	}
	if err := res.WriteSecrets(); err != nil {
		return nil, []*snapshot.ValidationError{{Code: codeGatewaySecrets, Path: "-gateway-api-secrets", Msg: err.Error()}}
	}
	g.res = res
	return data, nil
}

func listenerMismatch(proto string, port int32, has bool, flag string) string {
	if has {
		return "the Gateways have no " + proto + " listener, and the daemon serves " + proto + " (" + flag + "): give " + flag + ` ""`
	}
	return "the Gateways have an " + proto + " listener (port " + strconv.Itoa(int(port)) + "), and the daemon serves no " + proto + ": give " + flag
}

var listPath = regexp.MustCompile(`^(hosts|upstreams|certificates)\[(\d+)\]`)

// explain says where the publisher's problems of the combined document
// are: in the objects, or in the -config document at its own index.
func (g *gatewayDocs) explain(ps []*snapshot.ValidationError) []*snapshot.ValidationError {
	if g.res == nil {
		return ps
	}
	n := map[string]int{"hosts": len(g.res.Document.Hosts), "upstreams": len(g.res.Document.Upstreams), "certificates": len(g.res.Document.Certificates)}
	out := make([]*snapshot.ValidationError, 0, len(ps))
	for _, p := range ps {
		m := listPath.FindStringSubmatch(p.Path)
		if m == nil {
			out = append(out, p)
			continue
		}
		i, _ := strconv.Atoi(m[2])
		if i >= n[m[1]] {
			q := *p
			q.Path = "-config: " + m[1] + "[" + strconv.Itoa(i-n[m[1]]) + "]" + p.Path[len(m[0]):]
			out = append(out, &q)
			continue
		}
		out = append(out, g.res.Explain([]*snapshot.ValidationError{p})...)
	}
	return out
}

// publisher returns the Publish of one of the files: it keeps what the
// file holds (set) and publishes the combination through next.
func (g *gatewayDocs) publisher(set func(data []byte), next source.Publish) source.Publish {
	return func(ctx context.Context, d source.Document) (snapshot.Outcome, error) {
		g.mu.Lock()
		set(d.Data)
		data, probs := g.compose()
		g.mu.Unlock()
		if probs != nil {
			return snapshot.Outcome{Status: snapshot.Refused, Errors: probs}, nil
		}
		o, err := next(ctx, source.Document{Data: data, Why: d.Why, Version: d.Version})
		g.mu.Lock()
		o.Errors = g.explain(o.Errors)
		o.Warnings = g.explain(o.Warnings)
		g.mu.Unlock()
		return o, err
	}
}

// loadGateway reads the -gateway-api file (and the -config file, when
// given), publishes their document, and sets the reload and the watches
// up.
func (a *app) loadGateway(ctx context.Context, period time.Duration) (snapshot.Outcome, error) {
	g := &gatewayDocs{secretDir: a.f.gatewaySecrets, http: a.f.listen != "", https: a.f.https != ""}
	open := func(path string) (*source.File, []byte, error) {
		f, err := source.NewFile(source.FileConfig{Path: path, Period: period, MaxBytes: admin.DefaultMaxDocumentBytes, Logger: a.log})
		if err != nil {
			return nil, nil, err
		}
		d, err := f.Load(ctx)
		return f, d.Data, err
	}
	gw, objs, err := open(a.f.gatewayPath)
	if err != nil {
		return snapshot.Outcome{}, fmt.Errorf("-gateway-api: %w", err)
	}
	g.objs = objs
	a.watches = append(a.watches, watch{gw, g.publisher(func(b []byte) { g.objs = b }, a.publishChange)})
	reloads := []func(){gw.Reload}
	if a.f.configPath != "" {
		cf, data, err := open(a.f.configPath)
		if err != nil {
			return snapshot.Outcome{}, err
		}
		g.cfg = data
		a.watches = append(a.watches, watch{cf, g.publisher(func(b []byte) { g.cfg = b }, a.publishChange)})
		reloads = append(reloads, cf.Reload)
	}
	a.reload = func() {
		for _, r := range reloads {
			r()
		}
	}
	o, err := g.publisher(func([]byte) {}, source.To(a.pub))(ctx, source.Document{})
	if err == nil && o.Status == snapshot.Refused && len(o.Errors) == 0 {
		err = errors.New("refused without a problem")
	}
	return o, err
}
