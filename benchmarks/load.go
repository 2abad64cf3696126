package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// load is what one run of a load generator reports.
type load struct {
	Requests int64         // completed with an answer
	Errors   int64         // socket errors, timeouts, and answers not 2xx or 3xx
	Non2xx   int64         // of Errors, the answers
	Elapsed  time.Duration // the generator's own measured time
	P50, P99 time.Duration
	// GenCPU is the CPU time of this program's own generator, when it ran.
	GenCPU time.Duration `json:"-"`
}

func (l load) rps() float64 {
	if l.Elapsed <= 0 {
		return 0
	}
	return float64(l.Requests) / l.Elapsed.Seconds()
}

// loadSpec is one load to put on a peer.
type loadSpec struct {
	proto    string // "h1", "h2", "h1-close" (HTTPS, a new connection per request), "h3"
	url      string // full URL, the peer's address in it
	host     string // Host or :authority
	headers  []string
	conns    int
	streams  int // per connection (h2, h3)
	duration time.Duration
}

// runLoad runs the generator that fits spec on the load core: wrk for
// HTTP/1.1, h2load for HTTP/2, this program's own for HTTP/3 (and for
// HTTP/1.1 when wrk is not installed).
//
// A generator that is still running 30 s after its duration is stopped
// and the sample fails: h2load, for one, can wait forever for a stalled
// stream after its duration.
func (s *suite) runLoad(ctx context.Context, spec loadSpec) (load, error) {
	ctx, cancel := context.WithTimeout(ctx, spec.duration+loadGrace)
	defer cancel()
	l, err := s.runLoad1(ctx, spec)
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("load generator still running %s after its %s: %w", loadGrace, spec.duration, err)
	}
	return l, err
}

// loadGrace is how long a load generator may run past its duration.
const loadGrace = 30 * time.Second

func (s *suite) runLoad1(ctx context.Context, spec loadSpec) (load, error) {
	switch {
	case spec.proto == "h2":
		return s.runH2load(ctx, spec)
	case spec.proto == "h3" || !s.haveWrk:
		return s.runGoload(ctx, spec)
	default:
		return s.runWrk(ctx, spec)
	}
}

func pinned(argv ...string) []string {
	return append([]string{"taskset", "-c", loadCPU}, argv...)
}

func (s *suite) runWrk(ctx context.Context, spec loadSpec) (load, error) {
	argv := []string{"wrk", "-t1", "-c" + strconv.Itoa(spec.conns), "-d" + secs(spec.duration) + "s", "--latency",
		"--timeout", "5s", "-H", "Host: " + spec.host}
	for _, h := range spec.headers {
		argv = append(argv, "-H", h)
	}
	if spec.proto == "h1-close" {
		argv = append(argv, "-H", "Connection: close")
	}
	argv = pinned(append(argv, spec.url)...)
	out, err := runCmd(ctx, argv[0], argv[1:]...)
	if err != nil {
		return load{}, fmt.Errorf("wrk: %v: %s", err, strings.TrimSpace(out))
	}
	return parseWrk(out)
}

// secs spells d for wrk and h2load: whole seconds, at least one.
func secs(d time.Duration) string {
	return strconv.Itoa(max(1, int(d.Round(time.Second)/time.Second)))
}

// parseWrk reads wrk's report (with --latency).
func parseWrk(out string) (load, error) {
	var l load
	var haveCount bool
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 4 && f[1] == "requests" && f[2] == "in":
			l.Requests, _ = strconv.ParseInt(f[0], 10, 64)
			l.Elapsed, _ = time.ParseDuration(strings.TrimSuffix(f[3], ","))
			haveCount = true
		case len(f) == 2 && f[0] == "50%":
			l.P50, _ = parseWrkDuration(f[1])
		case len(f) == 2 && f[0] == "99%":
			l.P99, _ = parseWrkDuration(f[1])
		case strings.HasPrefix(strings.TrimSpace(line), "Socket errors:"):
			for _, part := range strings.Split(strings.TrimPrefix(strings.TrimSpace(line), "Socket errors:"), ",") {
				kv := strings.Fields(part)
				if len(kv) == 2 {
					n, _ := strconv.ParseInt(kv[1], 10, 64)
					l.Errors += n
				}
			}
		case strings.HasPrefix(strings.TrimSpace(line), "Non-2xx or 3xx responses:"):
			l.Non2xx, _ = strconv.ParseInt(f[len(f)-1], 10, 64)
		}
	}
	if !haveCount {
		return l, fmt.Errorf("wrk: no request count in %q", out)
	}
	l.Errors += l.Non2xx
	// wrk counts every answer as a request, errors too; keep only good ones.
	l.Requests -= l.Non2xx
	return l, nil
}

// parseWrkDuration reads wrk's "1.23ms", "456.00us", "1.02s", "2.00m".
func parseWrkDuration(s string) (time.Duration, error) {
	if strings.HasSuffix(s, "m") && !strings.HasSuffix(s, "ms") {
		s += "0s" // wrk's minutes: 2.00m -> 2.00m0s
	}
	return time.ParseDuration(s)
}

func (s *suite) runH2load(ctx context.Context, spec loadSpec) (load, error) {
	logf := filepath.Join(s.work, "h2load.log")
	os.Remove(logf)
	argv := pinned("h2load", "-t1", "-c"+strconv.Itoa(spec.conns), "-m"+strconv.Itoa(spec.streams),
		"-D", secs(spec.duration), "--log-file", logf, "-N", "10s",
		"-H", ":authority: "+spec.host)
	for _, h := range spec.headers {
		argv = append(argv, "-H", h)
	}
	argv = append(argv, spec.url)
	out, err := runCmd(ctx, argv[0], argv[1:]...)
	if err != nil {
		return load{}, fmt.Errorf("h2load: %v: %s", err, strings.TrimSpace(out))
	}
	l, err := parseH2load(out)
	if err != nil {
		return l, err
	}
	lat, err := h2loadLatencies(logf)
	if err != nil {
		return l, err
	}
	l.P50, l.P99 = percentile(lat, 0.50), percentile(lat, 0.99)
	return l, nil
}

// parseH2load reads h2load's summary.
func parseH2load(out string) (load, error) {
	var l load
	var have bool
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "finished in "):
			f := strings.Fields(line)
			l.Elapsed, _ = time.ParseDuration(strings.TrimSuffix(f[2], ","))
		case strings.HasPrefix(line, "requests: "):
			for _, part := range strings.Split(strings.TrimPrefix(line, "requests: "), ",") {
				kv := strings.Fields(part)
				if len(kv) != 2 {
					continue
				}
				n, _ := strconv.ParseInt(kv[0], 10, 64)
				switch kv[1] {
				case "succeeded":
					l.Requests, have = n, true
				case "failed", "errored", "timeout":
					l.Errors += n
				}
			}
		case strings.HasPrefix(line, "status codes: "):
			for _, part := range strings.Split(strings.TrimPrefix(line, "status codes: "), ",") {
				kv := strings.Fields(part)
				if len(kv) == 2 && (kv[1] == "4xx" || kv[1] == "5xx") {
					n, _ := strconv.ParseInt(kv[0], 10, 64)
					l.Non2xx += n
				}
			}
		}
	}
	if !have {
		return l, fmt.Errorf("h2load: no request count in %q", out)
	}
	// h2load counts a 4xx or 5xx answer as succeeded.
	l.Requests -= l.Non2xx
	l.Errors += l.Non2xx
	return l, nil
}

// h2loadLatencies reads the per-request durations (µs, third column) of
// h2load's --log-file.
func h2loadLatencies(path string) ([]time.Duration, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []time.Duration
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 3 {
			continue
		}
		us, err := strconv.ParseInt(fs[2], 10, 64)
		if err == nil {
			out = append(out, time.Duration(us)*time.Microsecond)
		}
	}
	return out, sc.Err()
}

// percentile sorts ds and returns its q-quantile (nearest rank).
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(q*float64(len(ds))+0.5) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

func (s *suite) runGoload(ctx context.Context, spec loadSpec) (load, error) {
	argv := pinned(s.bins.self, "-url", spec.url, "-host", spec.host, "-proto", spec.proto,
		"-c", strconv.Itoa(spec.conns), "-m", strconv.Itoa(max(spec.streams, 1)), "-d", spec.duration.String(),
		"-ca", s.cert.Cert)
	for _, h := range spec.headers {
		argv = append(argv, "-H", h)
	}
	cmd := newRoleCmd(ctx, "goload", argv...)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return load{}, fmt.Errorf("goload: %v: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return load{}, fmt.Errorf("goload: %w", err)
	}
	var l load
	if err := json.Unmarshal(out, &l); err != nil {
		return load{}, fmt.Errorf("goload: %w in %q", err, out)
	}
	l.GenCPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return l, nil
}

// goloadMain is this program's load generator: -c connections with -m
// requests in flight on each for -d. HTTP/3 over quic-go (Debian's h2load
// has no HTTP/3), or HTTP/1.1 keep-alive where wrk is missing. It prints
// a load as JSON.
func goloadMain(args []string) error {
	fs := flag.NewFlagSet("goload", flag.ContinueOnError)
	url := fs.String("url", "", "URL, with the address to connect to")
	host := fs.String("host", benchHost, "Host, and the TLS server name")
	proto := fs.String("proto", "h3", "h3, h1 or h1-close")
	conns := fs.Int("c", 16, "connections")
	streams := fs.Int("m", 1, "requests in flight per connection")
	dur := fs.Duration("d", 5*time.Second, "duration")
	ca := fs.String("ca", "", "PEM file of the certificate to trust")
	var headers headerList
	fs.Var(&headers, "H", "request header, Name: value (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	l, err := goload(context.Background(), goloadConfig{url: *url, host: *host, proto: *proto, conns: *conns,
		streams: *streams, duration: *dur, ca: *ca, headers: headers})
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(l)
}

type headerList []string

func (h *headerList) String() string     { return strings.Join(*h, ", ") }
func (h *headerList) Set(v string) error { *h = append(*h, v); return nil }

type goloadConfig struct {
	url, host, proto string
	conns, streams   int
	duration         time.Duration
	ca               string
	headers          []string
}

// newClient returns a client holding one connection of the given
// protocol to the address in url, whatever the URL's host says.
func newClient(proto, url, host string, roots *x509.CertPool) (*http.Client, func(), error) {
	addr, err := urlAddr(url)
	if err != nil {
		return nil, nil, err
	}
	tlsConf := &tls.Config{RootCAs: roots, ServerName: host}
	switch proto {
	case "h3":
		tr := &http3.Transport{
			TLSClientConfig: tlsConf,
			QUICConfig:      &quic.Config{MaxIdleTimeout: 30 * time.Second},
			Dial: func(ctx context.Context, _ string, tc *tls.Config, qc *quic.Config) (*quic.Conn, error) {
				return quic.DialAddrEarly(ctx, addr, tc, qc)
			},
		}
		return &http.Client{Transport: tr, Timeout: 10 * time.Second}, func() { tr.Close() }, nil
	case "h1", "h1-close":
		d := &net.Dialer{Timeout: 5 * time.Second}
		tr := &http.Transport{
			DialContext:         func(ctx context.Context, _, _ string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) },
			TLSClientConfig:     tlsConf,
			MaxIdleConnsPerHost: 1,
			DisableKeepAlives:   proto == "h1-close",
			DisableCompression:  true,
		}
		return &http.Client{Transport: tr, Timeout: 10 * time.Second}, tr.CloseIdleConnections, nil
	}
	return nil, nil, fmt.Errorf("goload: unknown protocol %q", proto)
}

func urlAddr(u string) (string, error) {
	rest, ok := strings.CutPrefix(u, "https://")
	if !ok {
		rest, ok = strings.CutPrefix(u, "http://")
	}
	if !ok {
		return "", fmt.Errorf("not an http(s) URL: %q", u)
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		rest = rest[:i]
	}
	return rest, nil
}

func goload(ctx context.Context, c goloadConfig) (load, error) {
	roots := x509.NewCertPool()
	if c.ca != "" {
		pem, err := os.ReadFile(c.ca)
		if err != nil {
			return load{}, err
		}
		roots.AppendCertsFromPEM(pem)
	}
	var (
		mu  sync.Mutex
		all []time.Duration
		tot load
		wg  sync.WaitGroup
	)
	deadline := time.Now().Add(c.duration)
	start := time.Now()
	for range c.conns {
		client, closeFn, err := newClient(c.proto, c.url, c.host, roots)
		if err != nil {
			return load{}, err
		}
		defer closeFn()
		for range c.streams {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine load
				lat := make([]time.Duration, 0, 4096)
				for time.Now().Before(deadline) && ctx.Err() == nil {
					req, _ := http.NewRequestWithContext(ctx, "GET", c.url, nil)
					req.Host = c.host
					for _, h := range c.headers {
						if k, v, ok := strings.Cut(h, ":"); ok {
							req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
						}
					}
					t0 := time.Now()
					resp, err := client.Do(req)
					if err != nil {
						mine.Errors++
						continue
					}
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					switch {
					case err != nil:
						mine.Errors++
					case resp.StatusCode >= 400:
						mine.Errors++
						mine.Non2xx++
					default:
						mine.Requests++
						lat = append(lat, time.Since(t0))
					}
				}
				mu.Lock()
				tot.Requests += mine.Requests
				tot.Errors += mine.Errors
				tot.Non2xx += mine.Non2xx
				all = append(all, lat...)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	tot.Elapsed = time.Since(start)
	tot.P50, tot.P99 = percentile(all, 0.50), percentile(all, 0.99)
	return tot, nil
}
