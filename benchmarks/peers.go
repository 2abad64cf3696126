package main

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"text/template"
	"time"

	"github.com/paduraksa/paduraksa/config"
)

//go:embed templates/*.tmpl
var templateFS embed.FS

var templates = template.Must(template.ParseFS(templateFS, "templates/*.tmpl"))

// The peers, by the name the table uses.
const (
	kindNginx    = "nginx"
	kindHAProxy  = "haproxy"
	kindCaddy    = "caddy"
	kindBaseline = "httputil"
	kindDaemon   = "paduraksad"
)

var allKinds = []string{kindNginx, kindHAProxy, kindCaddy, kindBaseline, kindDaemon}

// Ports every peer listens on, each peer on its own loopback address.
const (
	httpPort  = 8080
	httpsPort = 8443
	adminPort = 8444
)

// hostEntry is one virtual host besides the main one; each has its own
// upstream pool in every peer's config.
type hostEntry struct{ ID, Name string }

// pool is an upstream of several backends under a balancing policy,
// reached through its own host name. Directive and Extra are written in
// the peer's own syntax.
type pool struct {
	ID, Host, Directive, Extra, ServerOpts string
	Backends                               []string
}

// confData is what every template is rendered from.
type confData struct {
	Dir, IP, Main, Upstream        string
	HTTPPort, HTTPSPort, AdminPort int
	Hosts                          []hostEntry
	Pools                          []pool
	// Gen is written into a request header on the main host's route, so
	// a change of Gen changes that route and nothing else.
	Gen int
	// TLS renders the daemon's TLS fields (only when it has -https).
	TLS  bool
	Cert certFiles
	// Limit puts a rate limit no load reaches on the main host: "local"
	// or "cluster" buckets (the daemon only; "" none).
	Limit string
}

// withHosts returns c with n filler hosts plus one extra host whose name
// is extra (the name a reload adds and a poll asks for).
func (c confData) withHosts(n int, extra string) confData {
	c.Hosts = make([]hostEntry, 0, n+1)
	for i := range n {
		c.Hosts = append(c.Hosts, hostEntry{ID: "h" + strconv.Itoa(i), Name: "h" + strconv.Itoa(i) + ".test"})
	}
	if extra != "" {
		c.Hosts = append(c.Hosts, hostEntry{ID: "extra", Name: extra})
	}
	return c
}

// Balancing policies, by the name the table uses.
var policies = []string{"round robin", "random", "two choices", "least conns"}

// poolDirective spells a policy for each peer ("" where it has none).
var poolDirective = map[string]map[string]string{
	kindNginx: {"round robin": "", "random": "random;", "two choices": "random two least_conn;", "least conns": "least_conn;"},
	kindHAProxy: {"round robin": "balance roundrobin", "random": "balance random(1)", "two choices": "balance random(2)",
		"least conns": "balance leastconn"},
	kindCaddy: {
		"round robin": `"load_balancing": {"selection_policy": {"policy": "round_robin"}}`,
		"random":      `"load_balancing": {"selection_policy": {"policy": "random"}}`,
		"two choices": `"load_balancing": {"selection_policy": {"policy": "random_choose", "choose": 2}}`,
		"least conns": `"load_balancing": {"selection_policy": {"policy": "least_conn"}}`,
	},
	kindDaemon: {"round robin": "loadBalancing: RoundRobin", "random": "loadBalancing: Random",
		"two choices": "loadBalancing: PowerOfTwoChoices", "least conns": "loadBalancing: LeastRequests"},
}

// healthPool is each peer's closest spelling of: round robin, no retries,
// a destination out after one failed request, active checks every second
// where the peer has them, back after 10 s of passive exclusion. The
// daemon keeps its default retry of requests that never left (no retry
// block), which is what the row measures for it.
var healthPool = map[string]pool{
	kindNginx: {Directive: "", Extra: "proxy_next_upstream off;"},
	kindHAProxy: {Directive: "balance roundrobin", Extra: "retries 0\n    option httpchk GET /health",
		ServerOpts: "check inter 1s fall 2 rise 1 downinter 1s observe layer4 error-limit 1 on-error mark-down"},
	kindCaddy: {Directive: poolDirective[kindCaddy]["round robin"],
		Extra: `"health_checks": {"active": {"uri": "/health", "interval": "1s", "timeout": "1s"}, "passive": {"fail_duration": "10s", "max_fails": 1}}`},
	kindDaemon: {Directive: "loadBalancing: RoundRobin",
		Extra: "health: {active: {enabled: true, interval: 1s, timeout: 1s, path: /health, threshold: 2}, " +
			"passive: {enabled: true, window: 10s, minRequests: 1, failureRate: 0.01, reactivationPeriod: 10s}}"},
}

// peer is one proxy under test.
type peer struct {
	kind    string
	ip      string
	dir     string
	s       *suite
	p       *proc
	conf    confData
	version string
	// flags are the daemon's command-line flags, read from its -h.
	flags map[string]bool
	// loads counts the POST /load calls Caddy answered 200.
	loads int
	// logMark is the log size when a count of applied reloads began.
	logMark int64
	// args are added to the daemon's command line by start.
	args []string
}

func (p *peer) String() string { return p.kind }

// feature names what a scenario needs of a peer.
type feature string

const (
	featTLS     feature = "tls"
	featH3      feature = "h3"
	featGzip    feature = "gzip"
	featReload  feature = "reload"
	featBalance feature = "balance"
)

// lacks returns why the peer cannot take part ("" when it can). A peer
// that lacks a feature is reported "n/a", never measured.
func (p *peer) lacks(f feature) string {
	switch {
	case p.kind == kindDaemon && (f == featTLS || f == featH3) && !p.flags["https"]:
		return "not available in this build (no -https)"
	case p.kind == kindBaseline && f == featGzip:
		return "httputil.ReverseProxy does not compress"
	case p.kind == kindBaseline && (f == featReload || f == featBalance):
		return "httputil.ReverseProxy has no config to reload and one target"
	case p.kind == kindBaseline && f == featH3:
		return "net/http serves no HTTP/3"
	case p.kind == kindNginx && f == featH3:
		return "nginx 1.22 has no HTTP/3 (1.25+)"
	case p.kind == kindHAProxy && f == featH3:
		return "Debian's HAProxy is built without QUIC"
	}
	return ""
}

// baseConf is the config every scenario starts from: the main host and
// nothing else.
func (p *peer) baseConf() confData {
	return confData{
		Dir: p.dir, IP: p.ip, Main: benchHost, Upstream: p.s.upstreamAddr,
		HTTPPort: httpPort, HTTPSPort: httpsPort, AdminPort: adminPort,
		TLS: p.kind == kindDaemon && p.flags["https"], Cert: p.s.cert,
	}
}

// withPools adds the balancing and health pools (only the balancing
// scenario runs their backends; elsewhere their health checks would be
// noise).
func (c confData) withPools(p *peer) confData {
	if hp, ok := healthPool[p.kind]; ok {
		for _, pol := range policies {
			c.Pools = append(c.Pools, pool{ID: poolID(pol), Host: poolID(pol) + ".pool.test",
				Directive: poolDirective[p.kind][pol], Backends: p.s.backendAddrs(p, "s")})
		}
		hp.ID, hp.Host, hp.Backends = "health", "health.pool.test", p.s.backendAddrs(p, "k")
		c.Pools = append(c.Pools, hp)
	}
	return c
}

func poolID(policy string) string { return strings.ReplaceAll(policy, " ", "-") }

// configFiles renders the peer's config files for c, by file name.
func (p *peer) configFiles(c confData) (map[string][]byte, error) {
	names := map[string]string{}
	switch p.kind {
	case kindNginx:
		names["nginx.conf"] = "nginx.conf.tmpl"
	case kindHAProxy:
		names["haproxy.cfg"] = "haproxy.cfg.tmpl"
		names["hosts.map"] = "haproxy.map.tmpl"
	case kindCaddy:
		names["caddy.json"] = "caddy.json.tmpl"
	case kindDaemon:
		names["paduraksad.yaml"] = "paduraksad.yaml.tmpl"
	}
	files := map[string][]byte{}
	for name, tmpl := range names {
		var b bytes.Buffer
		if err := templates.ExecuteTemplate(&b, tmpl, c); err != nil {
			return nil, err
		}
		files[name] = b.Bytes()
	}
	return files, nil
}

// writeFiles writes config files into the peer's directory, each
// atomically.
func (p *peer) writeFiles(files map[string][]byte) error {
	for name, data := range files {
		if err := writeAtomic(filepath.Join(p.dir, name), data); err != nil {
			return err
		}
	}
	return nil
}

// render writes the peer's config files for c.
func (p *peer) render(c confData) error {
	files, err := p.configFiles(c)
	if err != nil {
		return err
	}
	p.conf = c
	return p.writeFiles(files)
}

// start renders c and starts the peer on the proxy core; watch is the
// daemon's -watch.
func (p *peer) start(c confData, watch time.Duration) error {
	p.stop()
	if err := os.MkdirAll(filepath.Join(p.dir, "tmp"), 0o755); err != nil {
		return err
	}
	if err := p.render(c); err != nil {
		return err
	}
	env := []string{"GOMAXPROCS=1"}
	var argv []string
	switch p.kind {
	case kindNginx:
		argv = []string{"nginx", "-p", p.dir, "-e", filepath.Join(p.dir, "error.log"), "-c", filepath.Join(p.dir, "nginx.conf")}
	case kindHAProxy:
		os.Remove(filepath.Join(p.dir, "master.sock"))
		argv = []string{"haproxy", "-W", "-S", filepath.Join(p.dir, "master.sock"), "-f", filepath.Join(p.dir, "haproxy.cfg")}
	case kindCaddy:
		env = append(env, "XDG_DATA_HOME="+p.dir, "XDG_CONFIG_HOME="+p.dir, "HOME="+p.dir)
		argv = []string{"caddy", "run", "--config", filepath.Join(p.dir, "caddy.json")}
	case kindBaseline:
		argv = []string{p.s.bins.baseline, "-listen", net.JoinHostPort(p.ip, strconv.Itoa(httpPort)),
			"-tls", net.JoinHostPort(p.ip, strconv.Itoa(httpsPort)), "-cert", c.Cert.Cert, "-key", c.Cert.Key,
			"-upstream", c.Upstream}
	case kindDaemon:
		argv = []string{p.s.bins.daemon, "-config", filepath.Join(p.dir, "paduraksad.yaml"),
			"-listen", net.JoinHostPort(p.ip, strconv.Itoa(httpPort)),
			"-watch", watch.String(), "-max-conns-per-ip", "-1"}
		if p.flags["https"] {
			argv = append(argv, "-https", net.JoinHostPort(p.ip, strconv.Itoa(httpsPort)))
		}
		if p.flags["admin"] {
			argv = append(argv, "-admin", net.JoinHostPort(p.ip, strconv.Itoa(adminPort)))
		}
		if p.flags["access-log"] {
			// As the peers run: nginx with access_log off, HAProxy and
			// Caddy without request logs. The daemon's is on by default
			// and costs it about a tenth of an HTTP/1.1 request's CPU.
			argv = append(argv, "-access-log", "off")
		}
		argv = append(argv, p.args...)
	}
	pr, err := startProc(p.kind, proxyCPU, filepath.Join(p.dir, "log.txt"), env, argv...)
	if err != nil {
		return err
	}
	p.p = pr
	p.loads = 0
	if err := p.awaitHost(benchHost, 30*time.Second); err != nil {
		return err
	}
	if p.kind == kindHAProxy {
		// The master's CLI listens a little after the worker serves.
		c, err := p.masterCLI(10 * time.Second)
		if err != nil {
			return err
		}
		c.Close()
	}
	return nil
}

// masterCLI connects to HAProxy's master CLI, which is away for a moment
// while the master re-executes itself for a reload.
func (p *peer) masterCLI(limit time.Duration) (net.Conn, error) {
	deadline := time.Now().Add(limit)
	for {
		c, err := net.DialTimeout("unix", filepath.Join(p.dir, "master.sock"), time.Second)
		if err == nil || time.Now().After(deadline) || p.p.exited() {
			return c, err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// awaitHost polls host on the peer's plain HTTP address; see pollAddr.
func (p *peer) awaitHost(host string, limit time.Duration) error {
	if p.p == nil {
		return fmt.Errorf("%s is not running", p.kind)
	}
	return pollAddr(net.JoinHostPort(p.ip, strconv.Itoa(httpPort)), host, p.p, limit)
}

// pollAddr asks addr for host on a new connection every millisecond
// until it answers 200; it fails when pr exits or the time is up.
func pollAddr(addr, host string, pr *proc, limit time.Duration) error {
	start := time.Now()
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 2 * time.Second}
	for {
		req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
		req.Host = host
		if resp, err := c.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		if pr.exited() {
			return fmt.Errorf("%s exited: %s", pr.name, pr.tail(600))
		}
		if time.Since(start) > limit {
			return fmt.Errorf("%s at %s: %s did not answer 200 within %s", pr.name, addr, host, limit)
		}
		time.Sleep(time.Millisecond)
	}
}

func (p *peer) tail() string {
	if p.p == nil {
		return ""
	}
	return p.p.tail(600)
}

func (p *peer) stop() {
	if p.p != nil {
		p.p.stop(3 * time.Second)
		p.p = nil
	}
}

func (p *peer) pid() int { return p.p.pid() }

func (p *peer) addr(port int) string { return net.JoinHostPort(p.ip, strconv.Itoa(port)) }

// reloader applies a new config to a running peer the peer's own way.
// One with a reason in na is a way the peer will have but this build
// lacks: it is reported, never run.
type reloader struct {
	name string
	// prepare renders c and returns the reload call itself (write the
	// files and signal, or send the document), which is what is timed.
	prepare func(c confData) (func() error, error)
	na      string
}

func (rl reloader) apply(c confData) error {
	call, err := rl.prepare(c)
	if err != nil {
		return err
	}
	return call()
}

// reloaders lists the ways the peer can be reconfigured while running.
func (p *peer) reloaders() []reloader {
	switch p.kind {
	case kindNginx:
		return []reloader{{name: "SIGHUP", prepare: p.filesThen(false, p.hup)}}
	case kindHAProxy:
		return []reloader{{name: "master reload", prepare: p.filesThen(false, p.masterReload)}}
	case kindCaddy:
		return []reloader{{name: "POST /load", prepare: p.caddyLoad}}
	case kindDaemon:
		rs := []reloader{{name: "SIGHUP", prepare: p.filesThen(false, p.hup)},
			{name: "SIGHUP, JSON file", prepare: p.filesThen(true, p.hup)},
			{name: "file watch", prepare: p.filesThen(false, func() error { return nil })}}
		if p.flags["admin"] {
			rs = append(rs, reloader{name: "PUT /config", prepare: p.putConfig})
		} else {
			rs = append(rs, reloader{name: "PUT /config", na: "not available in this build (no -admin)"})
		}
		return rs
	}
	return nil
}

// filesThen renders c (the daemon's document as JSON when asJSON: it
// reads a file that starts with "{" as JSON, which shows beside the YAML
// row what decoding YAML costs a publish); the call writes the files and
// then does then.
func (p *peer) filesThen(asJSON bool, then func() error) func(confData) (func() error, error) {
	return func(c confData) (func() error, error) {
		files, err := p.configFiles(c)
		if err != nil {
			return nil, err
		}
		if asJSON {
			if files["paduraksad.yaml"], err = documentJSON(files["paduraksad.yaml"]); err != nil {
				return nil, err
			}
		}
		p.conf = c
		return func() error {
			if err := p.writeFiles(files); err != nil {
				return err
			}
			return then()
		}, nil
	}
}

func (p *peer) hup() error { return p.p.signal(syscall.SIGHUP) }

// masterReload asks HAProxy's master to reload through its CLI.
func (p *peer) masterReload() error {
	conn, err := p.masterCLI(5 * time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, "reload\n"); err != nil {
		return err
	}
	io.Copy(io.Discard, conn)
	return nil
}

func (p *peer) caddyLoad(c confData) (func() error, error) {
	files, err := p.configFiles(c)
	if err != nil {
		return nil, err
	}
	p.conf = c
	return func() error {
		return p.send("POST", "http://"+p.addr(adminPort)+"/load", "application/json", files["caddy.json"])
	}, nil
}

// documentJSON is the daemon's rendered YAML document as JSON. It decodes
// with the library's own decoder and encodes with encoding/json, a
// millisecond at 500 hosts where sigs.k8s.io/yaml's conversion took tens:
// the churn scenario converts once per reload on the load generator's
// core, so a slow conversion showed up as the daemon's lost throughput.
func documentJSON(yamlDoc []byte) ([]byte, error) {
	doc, err := config.Decode(yamlDoc)
	if err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}

func (p *peer) putConfig(c confData) (func() error, error) {
	files, err := p.configFiles(c)
	if err != nil {
		return nil, err
	}
	js, err := documentJSON(files["paduraksad.yaml"])
	if err != nil {
		return nil, err
	}
	p.conf = c
	return func() error {
		return p.send("PUT", "http://"+p.addr(adminPort)+"/config", "application/json", js)
	}, nil
}

func (p *peer) send(method, url, ctype string, body []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", ctype)
	resp, err := p.s.adminClient.Do(req)
	if err != nil {
		return err
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, bytes.TrimSpace(msg))
	}
	if p.kind == kindCaddy {
		p.loads++
	}
	return nil
}

// appliedLine matches the log line each peer writes per reload it applied.
var appliedLine = map[string]*regexp.Regexp{
	kindNginx:   regexp.MustCompile(`(?m)\[notice\] \d+#\d+: reconfiguring$`),
	kindHAProxy: regexp.MustCompile(`(?m)Loading success\.$`),
	kindDaemon:  regexp.MustCompile(`(?m)msg="config applied"`),
}

// markReloads starts a count of applied reloads.
func (p *peer) markReloads() {
	p.loads = 0
	if fi, err := os.Stat(p.logFile()); err == nil {
		p.logMark = fi.Size()
	}
}

// appliedReloads counts the reloads applied since markReloads, from the
// peer's own log (Caddy: its 200 answers to POST /load, which it sends
// once the config is running).
func (p *peer) appliedReloads() (int, error) {
	if p.kind == kindCaddy {
		return p.loads, nil
	}
	re := appliedLine[p.kind]
	if re == nil {
		return 0, errors.New("no reload log")
	}
	b, err := os.ReadFile(p.logFile())
	if err != nil {
		return 0, err
	}
	if int64(len(b)) > p.logMark {
		b = b[p.logMark:]
	}
	return len(re.FindAll(b, -1)), nil
}

var tookField = regexp.MustCompile(`msg="config applied" revision=\d+ took=(\S+)`)

// publishTimes are the daemon's own reports of how long each publish
// since markReloads took (validate, compile, swap), in milliseconds.
func (p *peer) publishTimes() []float64 {
	if p.kind != kindDaemon {
		return nil
	}
	b, err := os.ReadFile(p.logFile())
	if err != nil || int64(len(b)) < p.logMark {
		return nil
	}
	var out []float64
	for _, m := range tookField.FindAllSubmatch(b[p.logMark:], -1) {
		if d, err := time.ParseDuration(string(m[1])); err == nil {
			out = append(out, float64(d)/float64(time.Millisecond))
		}
	}
	return out
}

func (p *peer) logFile() string {
	if p.kind == kindNginx {
		return filepath.Join(p.dir, "error.log")
	}
	return filepath.Join(p.dir, "log.txt")
}
