package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// tputSpec is one throughput scenario.
type tputSpec struct {
	id, title string
	proto     string // as loadSpec.proto
	path      string
	gzip      bool
	need      feature
	conns     int
	streams   int
}

// tputSpecOf is the spec of scenario id in tputSpecs; the zero spec
// when there is none.
func tputSpecOf(id string) tputSpec {
	for _, t := range tputSpecs {
		if t.id == id {
			return t
		}
	}
	return tputSpec{}
}

var tputSpecs = []tputSpec{
	{id: scH1, title: "HTTP/1.1 keep-alive, 13 B body", proto: "h1", path: "/", conns: 64, streams: 1},
	{id: scGzip, title: "HTTP/1.1 keep-alive, 16 KiB HTML, gzip at the fastest level", proto: "h1", path: "/html16k",
		gzip: true, need: featGzip, conns: 64, streams: 1},
	{id: scGzipRep, title: "HTTP/1.1 keep-alive, 16 KiB repetitive HTML, gzip at the fastest level", proto: "h1", path: "/html16k-rep",
		gzip: true, need: featGzip, conns: 64, streams: 1},
	{id: scH2, title: "HTTP/2 over TLS, 10 streams per connection", proto: "h2", path: "/", need: featTLS, conns: 64, streams: 10},
	{id: scTLSNew, title: "a new TLS connection per request (HTTP/1.1, Connection: close)", proto: "h1-close", path: "/",
		need: featTLS, conns: 64, streams: 1},
	{id: scH3, title: "HTTP/3, 13 B body", proto: "h3", path: "/", need: featH3, conns: 16, streams: 4},
}

var throughputIDs = []string{scH1, scGzip, scGzipRep, scH2, scTLSNew, scH3}

// sample is one measurement of one peer in one scenario and round.
type sample struct {
	status   string // "ok", "failed: ...", "n/a: ..."
	rps      float64
	cpuPer   float64 // µs of proxy CPU per request
	p50, p99 time.Duration
	errors   int64
	bytes    int
	other    float64 // % of the proxy core busy outside the proxy
	requests int64
}

func (s *suite) throughput(ctx context.Context) {
	var specs []tputSpec
	for _, sp := range tputSpecs {
		if s.opt.has(sp.id) {
			specs = append(specs, sp)
		}
	}
	for _, p := range s.peers {
		if err := p.start(p.baseConf(), 0); err != nil {
			s.progress("%s: start failed: %v", p.kind, err)
		}
	}
	defer func() {
		for _, p := range s.peers {
			p.stop()
		}
	}()
	results := map[string]map[string][]sample{}
	var h3self string
	if s.opt.has(scH3) {
		h3self = s.h3Self(ctx)
	}
	for r := range s.opt.rounds {
		for _, sp := range specs {
			for _, p := range s.peersFor(r) {
				if ctx.Err() != nil {
					return
				}
				sm := s.measure(ctx, p, sp)
				if results[sp.id] == nil {
					results[sp.id] = map[string][]sample{}
				}
				results[sp.id][p.kind] = append(results[sp.id][p.kind], sm)
				if sm.status == "ok" {
					s.progress("%-8s %-10s round %d/%d: %s req/s, %s µs/req, p50 %s ms, p99 %s ms, %d errors, %d B/resp, other busy %s%%",
						sp.id, p.kind, r+1, s.opt.rounds, num(sm.rps), num(sm.cpuPer), ms(sm.p50), ms(sm.p99), sm.errors, sm.bytes, num(sm.other))
				} else {
					s.progress("%-8s %-10s round %d/%d: %s", sp.id, p.kind, r+1, s.opt.rounds, sm.status)
				}
			}
		}
	}
	for _, sp := range specs {
		sec := s.tputTable(sp, results[sp.id])
		if sp.id == scH3 && h3self != "" {
			sec.after = append(sec.after, h3self)
		}
		s.rep.add(sec)
	}
}

// oneLine shortens a message for a table cell and a progress line.
func oneLine(msg string) string {
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > 240 {
		msg = msg[:240] + "…"
	}
	return msg
}

func (s *suite) measure(ctx context.Context, p *peer, sp tputSpec) sample {
	sm := s.measure1(ctx, p, sp)
	sm.status = oneLine(sm.status)
	return sm
}

func (s *suite) measure1(ctx context.Context, p *peer, sp tputSpec) sample {
	if why := p.lacks(sp.need); why != "" {
		return sample{status: "n/a: " + why}
	}
	if p.p == nil || p.p.exited() {
		return sample{status: "failed: not running: " + p.tail()}
	}
	size, err := s.preflight(ctx, p, sp)
	if err != nil {
		return sample{status: "failed: preflight: " + err.Error()}
	}
	spec := s.loadSpec(p, sp)
	spec.duration = s.opt.warm
	if _, err := s.runLoad(ctx, spec); err != nil {
		return sample{status: "failed: warm-up: " + err.Error()}
	}
	spec.duration = s.opt.measure
	w := openWindow(p.pid())
	l, err := s.runLoad(ctx, spec)
	w.close()
	if err != nil {
		return sample{status: "failed: " + err.Error()}
	}
	if l.Requests == 0 {
		return sample{status: fmt.Sprintf("failed: no request completed (%d errors)", l.Errors)}
	}
	return sample{status: "ok", rps: l.rps(), cpuPer: float64(w.CPU.Microseconds()) / float64(l.Requests),
		p50: l.P50, p99: l.P99, errors: l.Errors, bytes: size, requests: l.Requests,
		other: 100 * float64(w.Other) / float64(w.Wall)}
}

func (s *suite) loadSpec(p *peer, sp tputSpec) loadSpec {
	ls := loadSpec{proto: sp.proto, host: benchHost, conns: sp.conns, streams: sp.streams}
	if sp.gzip {
		ls.headers = append(ls.headers, "Accept-Encoding: gzip")
	}
	if sp.proto == "h1" {
		ls.url = "http://" + p.addr(httpPort) + sp.path
	} else {
		ls.url = "https://" + p.addr(httpsPort) + sp.path
	}
	return ls
}

// preflight asks once with curl (HTTP/3: this program's quic-go client)
// and checks the status, the protocol negotiated, the encoding and the
// body, so a misconfigured peer fails instead of winning. It returns the
// body's size on the wire.
func (s *suite) preflight(ctx context.Context, p *peer, sp tputSpec) (int, error) {
	want, ok := pages[sp.path]
	if !ok {
		want = []byte(tinyBody)
	}
	if sp.proto == "h3" {
		return s.preflightH3(ctx, p, sp, want)
	}
	if _, err := exec.LookPath("curl"); err != nil {
		return 0, errors.New("curl is not installed")
	}
	port, scheme, wantProto := httpPort, "http", "1.1"
	if sp.proto != "h1" {
		port, scheme = httpsPort, "https"
	}
	args := []string{"-sS", "--max-time", "10", "-o", filepath.Join(s.work, "preflight.body"),
		"-D", filepath.Join(s.work, "preflight.head"), "-w", "%{http_code} %{http_version}",
		"--resolve", benchHost + ":" + strconv.Itoa(port) + ":" + p.ip, "--cacert", s.cert.Cert}
	switch sp.proto {
	case "h1":
		args = append(args, "--http1.1")
	case "h1-close":
		args = append(args, "--http1.1", "-H", "Connection: close")
	case "h2":
		args, wantProto = append(args, "--http2"), "2"
	}
	if sp.gzip {
		args = append(args, "-H", "Accept-Encoding: gzip")
	}
	args = append(args, scheme+"://"+benchHost+":"+strconv.Itoa(port)+sp.path)
	out, err := runCmd(ctx, "curl", args...)
	if err != nil {
		return 0, fmt.Errorf("curl: %v: %s", err, strings.TrimSpace(out))
	}
	f := strings.Fields(out)
	if len(f) != 2 {
		return 0, fmt.Errorf("curl printed %q", out)
	}
	head, _ := os.ReadFile(filepath.Join(s.work, "preflight.head"))
	body, _ := os.ReadFile(filepath.Join(s.work, "preflight.body"))
	return len(body), checkAnswer(f[0], f[1], wantProto, headerValue(string(head), "Content-Encoding"), body, want, sp.gzip)
}

// checkAnswer is the preflight's verdict on one answer.
func checkAnswer(status, proto, wantProto, encoding string, body, want []byte, wantGzip bool) error {
	if status != "200" {
		return fmt.Errorf("status %s, want 200", status)
	}
	if proto != wantProto {
		return fmt.Errorf("protocol HTTP/%s, want HTTP/%s", proto, wantProto)
	}
	switch {
	case wantGzip && !strings.EqualFold(encoding, "gzip"):
		return fmt.Errorf("Content-Encoding %q, want gzip", encoding)
	case !wantGzip && encoding != "":
		return fmt.Errorf("Content-Encoding %q, want none", encoding)
	}
	if wantGzip {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("gzip body: %w", err)
		}
		if body, err = io.ReadAll(zr); err != nil {
			return fmt.Errorf("gzip body: %w", err)
		}
	}
	if !bytes.Equal(body, want) {
		return fmt.Errorf("body of %d bytes differs from the upstream's %d", len(body), len(want))
	}
	return nil
}

// headerValue finds a header in curl's -D dump (the last response's).
func headerValue(dump, name string) string {
	var v string
	for _, line := range strings.Split(dump, "\n") {
		if k, val, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(k), name) {
			v = strings.TrimSpace(val)
		}
		if strings.HasPrefix(line, "HTTP/") {
			v = ""
		}
	}
	return v
}

func (s *suite) preflightH3(ctx context.Context, p *peer, sp tputSpec, want []byte) (int, error) {
	pem, err := os.ReadFile(s.cert.Cert)
	if err != nil {
		return 0, err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	c, closeFn, err := newClient("h3", "https://"+p.addr(httpsPort), benchHost, roots)
	if err != nil {
		return 0, err
	}
	defer closeFn()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "https://"+benchHost+":"+strconv.Itoa(httpsPort)+sp.path, nil)
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	return len(body), checkAnswer(strconv.Itoa(resp.StatusCode), strings.TrimSuffix(strings.TrimPrefix(resp.Proto, "HTTP/"), ".0"), "3",
		resp.Header.Get("Content-Encoding"), body, want, sp.gzip)
}

// tputTable turns one scenario's samples into its table.
func (s *suite) tputTable(sp tputSpec, res map[string][]sample) section {
	// HTTP/3 has neither nginx nor the baseline: its first ratio is to
	// Caddy, the other peer that serves it.
	ref := kindNginx
	if sp.id == scH3 {
		ref = kindCaddy
	}
	sec := section{title: "Throughput: " + sp.title,
		head: []string{"peer", "req/s", "CPU µs/req med (min)", "× " + ref + " med (min)", "× httputil med (min)",
			"p50 ms", "p99 ms", "errors", "bytes/resp", "other busy %"}}
	type agg struct{ med, min float64 }
	aggs := map[string]agg{}
	for kind, ss := range res {
		var cpu []float64
		for _, sm := range ss {
			if sm.status == "ok" {
				cpu = append(cpu, sm.cpuPer)
			}
		}
		aggs[kind] = agg{median(cpu), minOf(cpu)}
	}
	for _, p := range s.peers {
		ss := res[p.kind]
		var rps, cpu, p50, p99, other []float64
		var errs int64
		var size int
		var bad []string
		for _, sm := range ss {
			if sm.status != "ok" {
				bad = append(bad, sm.status)
				continue
			}
			rps, cpu = append(rps, sm.rps), append(cpu, sm.cpuPer)
			p50, p99 = append(p50, float64(sm.p50)), append(p99, float64(sm.p99))
			other = append(other, sm.other)
			errs += sm.errors
			size = sm.bytes
		}
		if len(cpu) == 0 {
			status := "no sample"
			if len(bad) > 0 {
				status = bad[0]
			}
			sec.rows = append(sec.rows, []string{p.kind, status, "", "", "", "", "", "", "", ""})
			continue
		}
		a, n, b := aggs[p.kind], aggs[ref], aggs[kindBaseline]
		row := []string{p.kind, num(median(rps)), num(a.med) + " (" + num(a.min) + ")",
			ratio(a.med, n.med) + " (" + ratio(a.min, n.min) + ")", ratio(a.med, b.med) + " (" + ratio(a.min, b.min) + ")",
			ms(time.Duration(median(p50))), ms(time.Duration(median(p99))), strconv.FormatInt(errs, 10),
			strconv.Itoa(size), num(median(other))}
		sec.rows = append(sec.rows, row)
		for _, b := range bad {
			sec.after = append(sec.after, p.kind+": a round "+b)
		}
	}
	return sec
}

// h3Self measures the HTTP/3 load generator against a quic-go server
// alone (the upstream's own HTTP/3 listener, no proxy), so the HTTP/3
// rows can be read against the generator's own ceiling.
func (s *suite) h3Self(ctx context.Context) string {
	sp := tputSpecOf(scH3)
	spec := loadSpec{proto: "h3", url: "https://" + s.upstreamH3 + "/", host: benchHost, conns: sp.conns,
		streams: sp.streams, duration: s.opt.warm}
	if _, err := s.runLoad(ctx, spec); err != nil {
		return "HTTP/3 load generator against a quic-go server alone: failed: " + err.Error()
	}
	spec.duration = s.opt.measure
	w := openWindow(s.upstream.pid())
	l, err := s.runLoad(ctx, spec)
	w.close()
	if err != nil || l.Requests == 0 {
		return fmt.Sprintf("HTTP/3 load generator against a quic-go server alone: failed: %v", err)
	}
	msg := fmt.Sprintf("HTTP/3 load generator alone against a quic-go server (no proxy; %d connections x %d streams): %s req/s, "+
		"the generator's own CPU %s µs/req and the server's %s µs/req, both on CPU %s; p50 %s ms, p99 %s ms, %d errors. "+
		"A proxy's HTTP/3 req/s cannot exceed this; its CPU per request is unaffected.",
		sp.conns, sp.streams, num(l.rps()), num(float64(l.GenCPU.Microseconds())/float64(l.Requests)),
		num(float64(w.CPU.Microseconds())/float64(l.Requests)), loadCPU, ms(l.P50), ms(l.P99), l.Errors)
	s.progress("h3 self: %s", msg)
	return msg
}
