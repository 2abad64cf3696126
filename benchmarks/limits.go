package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// limitVariants are the daemon's configurations in the h1-limit
// scenario: no rate limit, one with local buckets, and the same limit
// with its buckets in Redis (one round trip per decision).
var limitVariants = []string{"none", "local", "cluster"}

// redisPort is where the suite's Redis listens, on the upstream's
// address.
const redisPort = 6379

// limits measures the h1 scenario on the daemon three ways: without a
// rate limit, with a local one and with a cluster one, the limit's rate
// far above the load so that it refuses nothing and each row shows what
// deciding costs. Redis runs on the load generator's core, so the
// daemon's CPU per request is its own (the client's side of the round
// trip); Redis's own is a column of its own.
func (s *suite) limits(ctx context.Context) {
	sec := section{title: "Rate limits: HTTP/1.1 keep-alive through a limit no load reaches",
		intro: "The h1 scenario (64 connections, 13 B body) against the daemon alone: without a rate limit, with a " +
			"local one (buckets: local) and with the same limit's buckets in Redis (buckets: cluster, -redis; one " +
			"script call per request, Redis on the load generator's core). The cluster row's added CPU and latency " +
			"are what a fleet-wide limit costs per request.",
		head: []string{"limit", "req/s", "daemon CPU µs/req med (min)", "× local med", "Redis CPU µs/req", "p50 ms", "p99 ms", "errors", "fallbacks (last round)"}}
	p := s.daemon()
	if p == nil {
		return
	}
	if !p.flags["redis"] {
		sec.after = append(sec.after, "not available in this build (no -redis)")
		s.rep.add(sec)
		return
	}
	redis, err := s.startRedis()
	if err != nil {
		sec.after = append(sec.after, "Redis failed to start: "+err.Error())
		s.rep.add(sec)
		return
	}
	defer redis.stop(time.Second)
	sp := tputSpecOf(scH1)
	type row struct {
		ss    []sample
		redis []float64
	}
	rows := map[string]*row{}
	var lastAll float64 // requests of the last cluster round, warm-up included
	defer func() { p.args = nil; p.stop() }()
	for r := range s.opt.rounds {
		for _, v := range limitVariants {
			if ctx.Err() != nil {
				return
			}
			c := p.baseConf()
			p.args = nil
			if v != "none" {
				c.Limit = v
			}
			if v == "cluster" {
				p.args = []string{"-redis", "redis://" + net.JoinHostPort(s.ip(10), strconv.Itoa(redisPort)), "-redis-prefix", "bench:" + strconv.Itoa(r) + ":"}
			}
			if rows[v] == nil {
				rows[v] = &row{}
			}
			if err := p.start(c, 0); err != nil {
				rows[v].ss = append(rows[v].ss, sample{status: "failed: start: " + oneLine(err.Error())})
				continue
			}
			w := openWindow(redis.pid())
			sm := s.measure(ctx, p, sp)
			w.close()
			rows[v].ss = append(rows[v].ss, sm)
			if sm.status == "ok" {
				// The window covers the warm-up as well: Redis's CPU is
				// spread over every request it saw.
				all := float64(sm.requests) * float64(s.opt.warm+s.opt.measure) / float64(s.opt.measure)
				rows[v].redis = append(rows[v].redis, float64(w.CPU.Microseconds())/all)
				if v == "cluster" {
					lastAll = all
				}
				s.progress("h1-limit %-8s round %d/%d: %s req/s, %s µs/req, p50 %s ms, p99 %s ms, %d errors",
					v, r+1, s.opt.rounds, num(sm.rps), num(sm.cpuPer), ms(sm.p50), ms(sm.p99), sm.errors)
			} else {
				s.progress("h1-limit %-8s round %d/%d: %s", v, r+1, s.opt.rounds, sm.status)
			}
		}
	}
	med := func(v string) (rps, cpu, lo, p50, p99 float64, errs int64, bad []string) {
		var rs, cs, p5, p9 []float64
		for _, sm := range rows[v].ss {
			if sm.status != "ok" {
				bad = append(bad, sm.status)
				continue
			}
			rs, cs = append(rs, sm.rps), append(cs, sm.cpuPer)
			p5, p9 = append(p5, float64(sm.p50)), append(p9, float64(sm.p99))
			errs += sm.errors
		}
		return median(rs), median(cs), minOf(cs), median(p5), median(p9), errs, bad
	}
	_, localCPU, _, localP50, _, _, _ := med("local")
	for _, v := range limitVariants {
		if rows[v] == nil {
			continue
		}
		rps, cpu, lo, p50, p99, errs, bad := med(v)
		for _, b := range bad {
			sec.after = append(sec.after, v+": a round "+b)
		}
		if cpu == 0 {
			sec.rows = append(sec.rows, []string{v, "no sample", "", "", "", "", "", "", ""})
			continue
		}
		redisCPU, fallbacks := "", ""
		if v == "cluster" {
			redisCPU = num(median(rows[v].redis))
			fallbacks = p.fallbacks()
			if n, err := strconv.Atoi(fallbacks); err == nil && lastAll > 0 {
				fallbacks = fmt.Sprintf("%d (%.1f %%)", n, 100*float64(n)/lastAll)
			}
		}
		sec.rows = append(sec.rows, []string{v, num(rps), num(cpu) + " (" + num(lo) + ")", ratio(cpu, localCPU), redisCPU,
			ms(time.Duration(p50)), ms(time.Duration(p99)), strconv.FormatInt(errs, 10), fallbacks})
		if v == "cluster" && localCPU > 0 {
			sec.after = append(sec.after, fmt.Sprintf("cluster against local: %+.1f µs of the daemon's CPU per request, p50 %+.3f ms.",
				cpu-localCPU, time.Duration(p50-localP50).Seconds()*1000))
		}
	}
	s.rep.add(sec)
}

// startRedis runs Debian's redis-server on the load generator's core, on
// the upstream's address, without persistence.
func (s *suite) startRedis() (*proc, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server is not installed (apt-get install redis-server)")
	}
	dir := filepath.Join(s.work, "redis")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(s.ip(10), strconv.Itoa(redisPort))
	p, err := startProc("redis", loadCPU, filepath.Join(dir, "log.txt"), nil, bin, "--port", strconv.Itoa(redisPort),
		"--bind", s.ip(10), "--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no")
	if err != nil {
		return nil, err
	}
	if err := awaitTCP(addr, p, 10*time.Second); err != nil {
		p.stop(time.Second)
		return nil, err
	}
	return p, nil
}

// fallbacksLine is the daemon's count of cluster rate-limit decisions
// its local bucket took (Redis slow or away), in its metrics.
var fallbacksLine = regexp.MustCompile(`(?m)^paduraksa_gate_events_total\{event="rateLimitStoreFallback"\} (\d+)`)

// fallbacks reads the running daemon's count of decisions that fell back
// to its local bucket, or "?" when its metrics cannot be read. The
// scenario reads it after its last round, whose daemon is the cluster
// one.
func (p *peer) fallbacks() string {
	if !p.flags["admin"] {
		return "?"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.addr(adminPort)+"/metrics", nil)
	if err != nil {
		return "?"
	}
	resp, err := p.s.adminClient.Do(req)
	if err != nil {
		return "?"
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if m := fallbacksLine.FindSubmatch(body); m != nil {
		return string(m[1])
	}
	return "?"
}
