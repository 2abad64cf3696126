package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/internal/gwconformance"
)

// echo is what a conformance backend answers: its name and the request
// as it arrived.
type echo struct {
	Backend string      `json:"backend"`
	Method  string      `json:"method"`
	URI     string      `json:"uri"`
	Header  http.Header `json:"header"`
}

// echoServer starts a backend that answers with an echo of its name.
func echoServer(t *testing.T, name string) int {
	t.Helper()
	_, port := conformanceBackend(t, name)
	return port
}

// backendLog is what a conformance backend has received: the
// gwconformance.ProbeHeader of every request, and a channel closed (and
// replaced) on each.
type backendLog struct {
	mu     sync.Mutex
	probes map[string]int
	next   chan struct{}
}

// await waits until the backend has received probe id, and reports
// whether it did within the deadline.
func (l *backendLog) await(id string, deadline time.Duration) bool {
	timer := time.NewTimer(deadline)
	defer timer.Stop()
	for {
		l.mu.Lock()
		n, next := l.probes[id], l.next
		l.mu.Unlock()
		if n > 0 {
			return true
		}
		select {
		case <-next:
		case <-timer.C:
			return false
		}
	}
}

// conformanceBackend starts a backend that answers with an echo of its
// name and the request, records the probes it receives, and holds a
// request with gwconformance.HoldHeader until its client gives up on it
// (10 s at most).
func conformanceBackend(t *testing.T, name string) (*backendLog, int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	log := &backendLog{probes: map[string]int{}, next: make(chan struct{})}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get(gwconformance.ProbeHeader); id != "" {
			log.mu.Lock()
			log.probes[id]++
			close(log.next)
			log.next = make(chan struct{})
			log.mu.Unlock()
		}
		if r.Header.Get(gwconformance.HoldHeader) != "" {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(10 * time.Second):
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(echo{Backend: name, Method: r.Method, URI: r.RequestURI, Header: r.Header})
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return log, ln.Addr().(*net.TCPAddr).Port
}

// gatewayFile writes objects to a file the daemon reads, by rename.
func gatewayFile(t *testing.T, path string, objects []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(path+".tmp", objects, 0o644))
	require.NoError(t, os.Rename(path+".tmp", path))
}

// TestGatewayAPIConformance runs every Gateway API conformance case of
// gatewayapi/testdata/conformance through the daemon over real sockets:
// -gateway-api with the case's objects, the Services' endpoints real
// backends on 127.0.0.1, each probe sent by net/http's client; the
// backend that answers, the headers it received and the headers of the
// answer are the case's. The same cases run through the simulator in
// gatewayapi's TestConformance.
func TestGatewayAPIConformance(t *testing.T) {
	cases, err := gwconformance.Load("../../gatewayapi/testdata/conformance")
	require.NoError(t, err)
	ports := map[string]int{}
	logs := map[string]*backendLog{}
	for _, s := range gwconformance.Services {
		logs[s], ports[s] = conformanceBackend(t, s)
	}
	probeID := 0
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "gateway.yaml")
			gatewayFile(t, path, append(c.Objects, gwconformance.Backends(ports)...))
			d := startDaemon(t, "-gateway-api", path, "-https", "off", "-watch", "0")
			client := &http.Client{Transport: d.tr, Timeout: 10 * time.Second,
				CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			for _, p := range c.Probes {
				got := map[string]int{} // answers by backend
				for range max(1, p.Count) {
					probeID++
					id := strconv.Itoa(probeID)
					e, ok := sendProbe(t, client, d.addr, &p, id)
					if !ok {
						break
					}
					got[e.Backend]++
					if p.Want.Mirror != "" && cmp.Or(p.Want.MirrorPercent, 100) == 100 {
						assert.True(t, logs[p.Want.Mirror].await(id, 5*time.Second), "%s: no copy at the mirror %s", &p, p.Want.Mirror)
					}
				}
				for svc, share := range p.Want.Shares {
					n := max(1, p.Count)
					assert.InDelta(t, share, 100*float64(got[svc])/float64(n), p.Want.Tolerance, "%s: %s's share of %d (got %v)", &p, svc, n, got)
				}
			}
		})
	}
}

// sendProbe sends p once with the probe number id and checks its
// answer; it returns the backend's echo, and false when the answer is
// not a backend's or failed its checks.
func sendProbe(t *testing.T, client *http.Client, addr string, p *gwconformance.Probe, id string) (echo, bool) {
	t.Helper()
	var e echo
	req, err := http.NewRequest(cmpOr(p.Method, "GET"), "http://"+addr+p.Path, nil)
	require.NoError(t, err)
	req.Host = p.Host
	for k, vs := range p.Headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set(gwconformance.ProbeHeader, id)
	res, err := client.Do(req)
	require.NoError(t, err, "%s", p)
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	want := cmp.Or(p.Want.Status, http.StatusOK)
	if !assert.Equal(t, want, res.StatusCode, "%s: %s", p, body) {
		return e, false
	}
	for k, v := range p.Want.ResponseHeaders {
		assert.Equal(t, v, res.Header.Get(k), "%s: response header %s", p, k)
	}
	if (p.Want.Backend == "" && len(p.Want.Shares) == 0) || want != http.StatusOK {
		// The edge's own answer.
		assert.Error(t, json.Unmarshal(body, &e), "%s: answered by a backend: %s", p, body)
		return e, false
	}
	require.NoError(t, json.Unmarshal(body, &e), "%s: %s", p, body)
	if p.Want.Backend != "" {
		assert.Equal(t, p.Want.Backend, e.Backend, "%s", p)
	}
	for k, v := range p.Want.RequestHeaders {
		assert.Equal(t, v, strings.Join(e.Header.Values(k), ", "), "%s: request header %s", p, k)
	}
	if p.Want.Path != "" {
		assert.Equal(t, p.Want.Path, e.URI, "%s: the path the backend receives", p)
	}
	return e, true
}

// TestGatewayAPIReloadAndConfig: -gateway-api beside -config serves the
// hosts of both, a change of the objects' file is served after the
// watch's two agreeing reads, a refused change keeps the previous
// document serving and is logged with the objects' code and path, and
// SIGHUP reads the files again.
func TestGatewayAPIReloadAndConfig(t *testing.T) {
	a, b := echoServer(t, "svc-a"), echoServer(t, "svc-b")
	dir := t.TempDir()
	gw, cfg := filepath.Join(dir, "gateway.yaml"), filepath.Join(dir, "config.yaml")
	objects := func(service string) []byte {
		return shopObjects("    - backendRefs: [{name: "+service+", port: 8080}]\n", map[string]int{"svc-a": a, "svc-b": b, "svc-c": a})
	}
	gatewayFile(t, gw, objects("svc-a"))
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, `hosts:
  - names: [static.test]
    routes: [{path: /, upstream: static}]
upstreams:
  - id: static
    destinations: [{id: one, address: "http://127.0.0.1:%d"}]
`, b), 0o644))
	d := startDaemon(t, "-gateway-api", gw, "-config", cfg, "-https", "off", "-watch", "20ms")
	backend := func(host string) string {
		status, body := d.get(t, host, "/")
		var e echo
		if status != 200 || json.Unmarshal([]byte(body), &e) != nil {
			return fmt.Sprint(status)
		}
		return e.Backend
	}
	assert.Equal(t, "svc-a", backend("shop.test"))
	assert.Equal(t, "svc-b", backend("static.test"))

	gatewayFile(t, gw, objects("svc-b"))
	waitFor(t, "the changed backendRef", func() bool { return backend("shop.test") == "svc-b" })

	// A change the translation refuses: the previous document serves.
	gatewayFile(t, gw, objects("svc-nowhere"))
	waitFor(t, "the refusal in the log", func() bool { return strings.Contains(d.logs.String(), "gatewayapi.backendRef.unknown") })
	assert.Contains(t, d.logs.String(), "HTTPRoute default/shop: spec.rules[0].backendRefs[0]")
	assert.Equal(t, "svc-b", backend("shop.test"))

	// A problem the publisher finds is said at the objects' path.
	gatewayFile(t, gw, []byte(strings.Replace(string(objects("svc-a")), "backendRefs:", "matches: [{headers: [{name: X-A, type: RegularExpression, value: \"(\"}]}]\n      backendRefs:", 1)))
	waitFor(t, "the publisher's refusal in the log", func() bool {
		return strings.Contains(d.logs.String(), "HTTPRoute default/shop: spec.rules[0].matches[0].headers[0]")
	})
	assert.Equal(t, "svc-b", backend("shop.test"))

	// A host in both files is refused by the publisher, as in one document.
	gatewayFile(t, gw, []byte(strings.Replace(string(objects("svc-a")), "[shop.test]", "[static.test]", 1)))
	waitFor(t, "the duplicate host's refusal", func() bool {
		return strings.Contains(d.logs.String(), `HTTPRoute default/shop: spec.hostnames[0]: \"static.test\" is used twice (the document's hosts[0].names[0]) (gate.host.name.duplicate)`)
	})
	assert.Equal(t, "svc-b", backend("static.test"))
}

// TestGatewayAPIRefusedAtStart: objects the translation refuses stop
// the daemon at start with every problem's code and the object's path,
// and so do Gateways whose listeners are not the daemon's.
func TestGatewayAPIRefusedAtStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	gatewayFile(t, path, []byte(`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw}
spec:
  gatewayClassName: paduraksa
  listeners: [{name: tcp, protocol: TCP, port: 9000}, {name: http, protocol: HTTP, port: 80}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: x}
`))
	var out, logs syncBuffer
	err := run(context.Background(), []string{"-gateway-api", path, "-listen", "127.0.0.1:0"}, options{stdout: &out, stderr: &logs})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "objects[1] (ConfigMap default/x): ")
	assert.Contains(t, err.Error(), "gatewayapi.object.kind.unknown")

	gatewayFile(t, path, []byte(`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw}
spec:
  gatewayClassName: paduraksa
  listeners: [{name: tcp, protocol: TCP, port: 9000}, {name: http, protocol: HTTP, port: 80}]
`))
	err = run(context.Background(), []string{"-gateway-api", path, "-listen", "127.0.0.1:0"}, options{stdout: &out, stderr: &logs})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Gateway default/gw: spec.listeners[0].protocol: ")
	assert.Contains(t, err.Error(), "gatewayapi.listener.protocol.unsupported")

	gatewayFile(t, path, []byte(`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw}
spec:
  gatewayClassName: paduraksa
  listeners: [{name: http, protocol: HTTP, port: 80}]
`))
	err = run(context.Background(), []string{"-gateway-api", path, "-listen", "127.0.0.1:0", "-https", "127.0.0.1:0"}, options{stdout: &out, stderr: &logs})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-https: the Gateways have no HTTPS listener, and the daemon serves HTTPS (-https)")
}

// shopObjects is a Gateway with one HTTP listener and the HTTPRoute shop
// on shop.test with rules (YAML list items, indented by four), then the
// Services and EndpointSlices of backends.
func shopObjects(rules string, backends map[string]int) []byte {
	return append([]byte(`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw}
spec:
  gatewayClassName: paduraksa
  listeners: [{name: http, protocol: HTTP, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: shop}
spec:
  parentRefs: [{name: gw}]
  hostnames: [shop.test]
  rules:
`+rules), gwconformance.Backends(backends)...)
}
