// Package gwconformance reads the Gateway API conformance cases of
// gatewayapi/testdata/conformance, which gatewayapi's tests run through
// the simulator and the reference daemon's tests over real sockets.
package gwconformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// Services are the Services the cases send to, in namespace default,
// each with port ServicePort named "http".
var Services = []string{"svc-a", "svc-b", "svc-c"}

// ServicePort is the Services' port.
const ServicePort = 8080

// Case is one file: its objects and probes.
type Case struct {
	Name    string
	Objects []byte
	Probes  []Probe
}

// Probe is one request and what it must get.
type Probe struct {
	Method  string            `json:"method,omitempty"`
	Host    string            `json:"host"`
	Path    string            `json:"path"`
	Headers map[string]Values `json:"headers,omitempty"`
	// Count is how many times the daemon sends the probe (for Shares);
	// 0 means once. The simulator runs it once.
	Count int  `json:"count,omitempty"`
	Want  Want `json:"want"`
}

// Want is what a probe must get.
type Want struct {
	// Status is the answer's status; 0 means 200.
	Status int `json:"status,omitempty"`
	// Backend is the Service that answers; empty for an answer of the
	// edge's own.
	Backend string `json:"backend,omitempty"`
	// Route is the document's route that decides.
	Route string `json:"route,omitempty"`
	// RequestHeaders are headers the backend receives; "" means absent.
	RequestHeaders map[string]string `json:"requestHeaders,omitempty"`
	// ResponseHeaders are headers the answer carries.
	ResponseHeaders map[string]string `json:"responseHeaders,omitempty"`
	// Path is the request target the backend receives (path and query).
	Path string `json:"path,omitempty"`
	// Shares are, for a weighted split, each Service's share of Count
	// probes in percent, within Tolerance points (the daemon); the
	// simulator checks that the side it would choose is one of them, by
	// weight, with a weight that is its share within Tolerance.
	Shares    map[string]float64 `json:"shares,omitempty"`
	Tolerance float64            `json:"tolerance,omitempty"`
	// Mirror is the Service a copy of the request goes to, and
	// MirrorPercent the share copied (0 means 100). The daemon waits for
	// the copy when every request is copied.
	Mirror        string  `json:"mirror,omitempty"`
	MirrorPercent float64 `json:"mirrorPercent,omitempty"`
	// Timeouts are the route's timeouts, as Go durations ("100ms").
	Timeouts *Timeouts `json:"timeouts,omitempty"`
}

// Timeouts are a route's request and per-try timeouts.
type Timeouts struct {
	Request string `json:"request,omitempty"`
	PerTry  string `json:"perTry,omitempty"`
}

// HoldHeader, on a probe, makes the conformance backends hold the
// request until the client (the edge) gives up on it: the way a case
// meets a timeout.
const HoldHeader = "X-Conformance-Hold"

// ProbeHeader carries a probe's sequence number to the backends, so a
// test can await the copy of one probe at a mirror.
const ProbeHeader = "X-Conformance-Probe"

// Values are a header's values: a string or a list.
type Values []string

// UnmarshalJSON reads a string or a list of strings.
func (v *Values) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*v = Values{s}
		return nil
	}
	return json.Unmarshal(b, (*[]string)(v))
}

// String is the probe's name in test output.
func (p *Probe) String() string {
	m := p.Method
	if m == "" {
		m = "GET"
	}
	var h []string
	for k, v := range p.Headers {
		h = append(h, k+"="+strings.Join(v, "|"))
	}
	sort.Strings(h)
	return m + " " + p.Host + p.Path + " " + strings.Join(h, " ")
}

const probesMark = "\n--- # probes\n"

// Load reads every case of dir.
func Load(dir string) ([]Case, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no case in %s", dir)
	}
	var cases []Case
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		objs, probes, ok := bytes.Cut(data, []byte(probesMark))
		if !ok {
			return nil, fmt.Errorf("%s: no %q line", f, strings.TrimSpace(probesMark))
		}
		c := Case{Name: strings.TrimSuffix(filepath.Base(f), ".yaml"), Objects: append(objs, '\n')}
		if err := yaml.UnmarshalStrict(probes, &c.Probes); err != nil {
			return nil, fmt.Errorf("%s: probes: %w", f, err)
		}
		if len(c.Probes) == 0 {
			return nil, fmt.Errorf("%s: no probe", f)
		}
		cases = append(cases, c)
	}
	return cases, nil
}

// Backends returns the Services and EndpointSlices of [Services], each
// slice's one endpoint 127.0.0.1 on ports[name].
func Backends(ports map[string]int) []byte {
	var b bytes.Buffer
	for _, s := range Services {
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: Service
metadata: {name: %[1]s, namespace: default}
spec:
  ports: [{name: http, port: %[2]d, targetPort: %[3]d}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: %[1]s-1
  namespace: default
  labels: {kubernetes.io/service-name: %[1]s}
addressType: IPv4
ports: [{name: http, port: %[3]d, protocol: TCP}]
endpoints: [{addresses: ["127.0.0.1"], conditions: {ready: true}}]
`, s, ServicePort, ports[s])
	}
	return b.Bytes()
}

// Upstream is the document's upstream of a Service of [Services].
func Upstream(service string) string {
	return "default." + service + "." + strconv.Itoa(ServicePort)
}
