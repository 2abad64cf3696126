package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/admin"
	"github.com/paduraksa/paduraksa/connlimit"
	"github.com/paduraksa/paduraksa/edge"
	"github.com/paduraksa/paduraksa/proxyproto"
	"github.com/paduraksa/paduraksa/simulate"
	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/paduraksa/paduraksa/tlsselect"
)

// demoUpstream stands in for the address of the demo upstream, which the
// daemon picks when it starts; a simulation of the embedded config names
// it so.
const demoUpstream = "127.0.0.1:8081"

// headerFlags collects repeated -H 'Name: value' flags.
type headerFlags http.Header

func (h headerFlags) String() string { return "" }

func (h headerFlags) Set(v string) error {
	name, value, ok := strings.Cut(v, ":")
	if !ok || strings.TrimSpace(name) == "" {
		return errors.New("want 'Name: value'")
	}
	http.Header(h).Add(strings.TrimSpace(name), strings.TrimSpace(value))
	return nil
}

// runSimulate is "paduraksad simulate": what a request would get from the
// config, and why, without serving anything.
func runSimulate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("paduraksad simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: paduraksad simulate [-config FILE] [-gateway-api FILE] [-https ADDR] [-from ADDR] [-sni NAME] [-H 'Name: value'] [-json] METHOD URL")
		fs.PrintDefaults()
	}
	configPath := fs.String("config", "", "config document (JSON or YAML), compiled as a reload would and not applied; empty: the embedded demo config")
	gatewayPath := fs.String("gateway-api", "", "Kubernetes Gateway API objects (YAML), translated as the daemon's -gateway-api translates them, beside -config when both are given; their Secrets are served by self-signed certificates and written nowhere")
	from := fs.String("from", "", "the peer address the request comes from (IP or IP:port); empty: "+simulate.DefaultPeer.String())
	sni := fs.String("sni", "", "the TLS server name; empty: the URL's host")
	version := fs.Int("http-version", 0, "HTTP version the client asks for: 1, 2 or 3; 0: 1")
	proxyFrom := fs.String("proxy-protocol-from", "", "as the daemon's flag: prefixes of load balancers that must send a PROXY header")
	proxySource := fs.String("proxy-source", "", "send a PROXY header naming this client (IP:port), as a load balancer at -from does")
	deny := fs.String("deny", "", "as the daemon's flag: prefixes refused before TLS")
	https := fs.String("https", "", "as the daemon's flag: the HTTPS address, whose port Alt-Svc and HTTPS redirects name unless the document's global.httpsPort says; empty: 443, or 127.0.0.1:8443 for the embedded demo config")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	header := headerFlags{}
	fs.Var(header, "H", "a request header 'Name: value' (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return errors.New("simulate: want METHOD URL")
	}
	probe := simulate.Probe{Method: fs.Arg(0), URL: fs.Arg(1), Header: http.Header(header), HTTPVersion: *version}
	if *from != "" {
		peer, err := simulate.ParsePeer(*from)
		if err != nil {
			return fmt.Errorf("-from: %w", err)
		}
		probe.Peer = peer
	}
	if *proxySource != "" {
		src, err := netip.ParseAddrPort(*proxySource)
		if err != nil {
			return fmt.Errorf("-proxy-source: %w", err)
		}
		probe.ProxyProtocol = src
	}
	if *sni != "" {
		probe.TLS = &simulate.TLS{SNI: *sni}
	}
	var target simulate.Target
	var gw *gatewayDocs
	var err error
	if *gatewayPath != "" {
		target, gw, err = gatewayTarget(*gatewayPath, *configPath, *https)
	} else {
		target, err = simulationTarget(*configPath, *https)
	}
	if err != nil {
		return err
	}
	if target.Listener.ProxyProtocol.TrustedProxies, err = parsePrefixes(*proxyFrom); err != nil {
		return fmt.Errorf("-proxy-protocol-from: %w", err)
	}
	var denied []netip.Prefix
	if denied, err = parsePrefixes(*deny); err != nil {
		return fmt.Errorf("-deny: %w", err)
	}
	target.Listener.Connections = connlimit.Config{Deny: denied}
	target.Listener.ProxyProtocol = proxyproto.Config{TrustedProxies: target.Listener.ProxyProtocol.TrustedProxies}

	res, err := simulate.Run(target, probe)
	var refused *simulate.DraftRefused
	if gw != nil && errors.As(err, &refused) {
		// Said at the objects' paths, as the daemon says them.
		return &simulate.DraftRefused{Errors: gw.explain(refused.Errors)}
	}
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	_, err = io.WriteString(stdout, probe.Method+" "+probe.URL+"\n"+res.Describe())
	return err
}

// simulationTarget is the config to simulate: the file as a draft, or the
// embedded demo config with its own certificate, compiled for the HTTPS
// address https as the daemon's -https.
func simulationTarget(path, https string) (simulate.Target, error) {
	var data []byte
	if https == "" && path == "" {
		https = "127.0.0.1:8443"
	}
	c := &snapshot.Compiler{HTTPSPort: portOf(https)}
	if https != "" && c.HTTPSPort == 0 {
		return simulate.Target{}, fmt.Errorf("-https: %q is not host:port", https)
	}
	if path == "" {
		self, err := tlsselect.SelfSigned(24*time.Hour, "localhost", "*.localhost", "127.0.0.1", "::1")
		if err != nil {
			return simulate.Target{}, err
		}
		c.Certificates = map[string]tlsselect.Source{"localhost": tlsselect.Static(self)}
		data = bytes.ReplaceAll(defaultConfig, []byte("{{DEMO}}"), []byte(demoUpstream))
	} else {
		var err error
		if data, err = snapshot.ReadDocument(path, admin.DefaultMaxDocumentBytes); err != nil {
			return simulate.Target{}, err
		}
	}
	return simulate.Target{DraftData: data, Compiler: c}, nil
}

// gatewayTarget is the document of the Gateway API objects of path,
// beside the -config document of configPath when given, as the daemon
// composes them, compiled for the HTTPS address https; the translation's
// problems are said at the objects' paths. A simulation writes no
// Secret: each certificate is served by a self-signed one for its hosts'
// names, and the document serves both listeners whatever the Gateways
// have.
func gatewayTarget(path, configPath, https string) (simulate.Target, *gatewayDocs, error) {
	g := &gatewayDocs{secretDir: "gateway-api-secrets", simulation: true}
	var err error
	if g.objs, err = snapshot.ReadDocument(path, admin.DefaultMaxDocumentBytes); err != nil {
		return simulate.Target{}, nil, fmt.Errorf("-gateway-api: %w", err)
	}
	if configPath != "" {
		if g.cfg, err = snapshot.ReadDocument(configPath, admin.DefaultMaxDocumentBytes); err != nil {
			return simulate.Target{}, nil, err
		}
	}
	data, probs := g.compose()
	if probs != nil {
		return simulate.Target{}, nil, &simulate.DraftRefused{Errors: probs}
	}
	c := &snapshot.Compiler{HTTPSPort: portOf(https)}
	if https != "" && c.HTTPSPort == 0 {
		return simulate.Target{}, nil, fmt.Errorf("-https: %q is not host:port", https)
	}
	return simulate.Target{DraftData: data, Compiler: c, TestCertificates: true}, g, nil
}

// logWhatIf logs what a reloaded document would change for the recent
// requests, before it is published.
func logWhatIf(log *slog.Logger, store *snapshot.Store, c *snapshot.Compiler, ec edge.Config, sample *simulate.Sample, data []byte) {
	l := simulate.Listener{ProxyProtocol: ec.ProxyProtocol, Connections: ec.Connections, Limits: ec.Limits}
	rep, err := simulate.Diff(simulate.Target{Store: store, Listener: l},
		simulate.Target{DraftData: data, Compiler: c, Live: store, Listener: l}, sample.Probes())
	if err != nil {
		log.Warn("what-if: the new config was not compared", "err", err)
		return
	}
	log.Info(rep.Summary())
}
