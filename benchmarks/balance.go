package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// balanceResult is one peer's row in the two balancing tables.
type balanceResult struct {
	slow     []string // per policy: requests the slow backend got, of 600
	killErrs string
	back     string
	allDown  string
	allBack  string
}

// balance runs the seeds' balancing and health experiments on every peer
// at once (the figures are counts and seconds of timers, which a shared
// core does not move much), each peer with backends of its own.
func (s *suite) balance(ctx context.Context) {
	var eligible []*peer
	na := map[string]string{}
	for _, p := range s.peers {
		if why := p.lacks(featBalance); why != "" {
			na[p.kind] = why
			continue
		}
		eligible = append(eligible, p)
	}
	res := make([]balanceResult, len(eligible))
	var wg sync.WaitGroup
	for i, p := range eligible {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = s.balanceOne(ctx, p)
			s.progress("balance  %-10s slow backend got %s of 600; killed backend: %s client errors, back %s; all down: %s, back %s",
				p.kind, strings.Join(res[i].slow, "/"), res[i].killErrs, res[i].back, res[i].allDown, res[i].allBack)
		}()
	}
	wg.Wait()
	pol := section{title: "Balancing: requests the 50 ms backend got, of 600 over 20 connections",
		intro: "Three backends, the second answering after 50 ms; 600 requests over 20 keep-alive connections per policy. " +
			"A policy that sees load should send the slow one about 5 % or less; round robin sends it a third.",
		head: append([]string{"peer"}, policies...)}
	health := section{title: "Health: a backend killed under load, and all backends down",
		intro: fmt.Sprintf("Round robin over three backends, 16 clients each sending a request every 5 ms. One backend is killed, "+
			"restarted 3 s later, and watched for up to %s until it serves again; then all three are killed (10 requests over 2 s) "+
			"and restarted. No retries (the daemon keeps its default, which sends a request that never left, its connection refused, "+
			"to another destination); a destination leaves after one failed request where the peer allows it; active checks "+
			"every 1 s where the peer has them (nginx open source has none); passive exclusion 10 s.", s.opt.healthCap),
		head: []string{"peer", "client errors after the kill", "back after restart", "answers with all down", "back after all restart"}}
	for i, p := range eligible {
		pol.rows = append(pol.rows, append([]string{p.kind}, res[i].slow...))
		health.rows = append(health.rows, []string{p.kind, res[i].killErrs, res[i].back, res[i].allDown, res[i].allBack})
	}
	for _, p := range s.peers {
		if why, ok := na[p.kind]; ok {
			pol.rows = append(pol.rows, []string{p.kind, "n/a: " + why, "", "", ""})
			health.rows = append(health.rows, []string{p.kind, "n/a: " + why, "", "", ""})
		}
	}
	s.rep.add(pol)
	s.rep.add(health)
}

func (s *suite) balanceOne(ctx context.Context, p *peer) balanceResult {
	var r balanceResult
	fail := func(msg string) balanceResult {
		r.killErrs = "failed: " + oneLine(msg)
		for len(r.slow) < len(policies) {
			r.slow = append(r.slow, "not run")
		}
		return r
	}
	sAddrs, kAddrs := s.backendAddrs(p, "s"), s.backendAddrs(p, "k")
	slow, err := s.startBackend(p.kind+"-s", sAddrs, []string{"s1", "s2", "s3"}, "s2")
	if err != nil {
		return fail(err.Error())
	}
	defer slow.stop(time.Second)
	ks := make([]*proc, 3)
	startK := func(i int) error {
		var err error
		ks[i], err = s.startBackend(p.kind+"-k"+strconv.Itoa(i+1), kAddrs[i:i+1], []string{"k" + strconv.Itoa(i+1)}, "")
		return err
	}
	for i := range ks {
		if err := startK(i); err != nil {
			return fail(err.Error())
		}
	}
	defer func() {
		for _, k := range ks {
			k.stop(time.Second)
		}
	}()
	if err := p.start(p.baseConf().withPools(p), 0); err != nil {
		return fail(err.Error())
	}
	defer p.stop()
	// Active checks see every backend healthy before the first request.
	time.Sleep(1500 * time.Millisecond)

	for _, pol := range policies {
		counts, errs := s.spread(ctx, p, poolID(pol)+".pool.test", 600, 20)
		cell := strconv.Itoa(counts["s2"])
		if errs > 0 {
			cell += fmt.Sprintf(" (%d errors)", errs)
		}
		r.slow = append(r.slow, cell)
	}

	// A backend killed under load.
	h := newHammer(p, "health.pool.test", 16)
	time.Sleep(2 * time.Second)
	ks[2].stop(0)
	killed := time.Now()
	time.Sleep(3 * time.Second)
	if err := startK(2); err != nil {
		h.stop()
		r.killErrs = "restart failed: " + oneLine(err.Error())
		return r
	}
	restarted := time.Now()
	back := h.awaitBackend("k3", restarted, s.opt.healthCap)
	h.stop()
	r.killErrs = strconv.Itoa(h.errorsSince(killed))
	if back < 0 {
		r.back = "not within " + s.opt.healthCap.String()
	} else {
		r.back = back.Round(10 * time.Millisecond).String()
	}

	// Every backend down.
	for _, k := range ks {
		k.stop(0)
	}
	answers := map[string]int{}
	client := &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}
	for range 10 {
		answers[ask(client, p, "health.pool.test")]++
		time.Sleep(200 * time.Millisecond)
	}
	client.CloseIdleConnections()
	var parts []string
	for a, n := range answers {
		parts = append(parts, fmt.Sprintf("%d× %s", n, a))
	}
	sort.Strings(parts)
	r.allDown = strings.Join(parts, ", ")
	for i := range ks {
		if err := startK(i); err != nil {
			r.allBack = "restart failed: " + oneLine(err.Error())
			return r
		}
	}
	t0 := time.Now()
	r.allBack = "not within " + s.opt.healthCap.String()
	for time.Since(t0) < s.opt.healthCap {
		if a := ask(client, p, "health.pool.test"); strings.HasPrefix(a, "200") {
			r.allBack = time.Since(t0).Round(10 * time.Millisecond).String()
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	client.CloseIdleConnections()
	return r
}

// ask sends one GET to host and describes the answer: "200 k2", "503
// (0 B)", or the error.
func ask(c *http.Client, p *peer, host string) string {
	req, _ := http.NewRequest("GET", "http://"+p.addr(httpPort)+"/", nil)
	req.Host = host
	resp, err := c.Do(req)
	if err != nil {
		return "connection error"
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == 200 {
		return "200 " + resp.Header.Get("X-Backend")
	}
	return fmt.Sprintf("%d (%d B)", resp.StatusCode, len(body))
}

// spread sends n requests to host over conns keep-alive connections and
// counts them by the backend that answered.
func (s *suite) spread(ctx context.Context, p *peer, host string, n, conns int) (map[string]int, int) {
	var mu sync.Mutex
	counts := map[string]int{}
	var errs int
	var next atomic.Int64
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr := &http.Transport{MaxIdleConnsPerHost: 1}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
			for next.Add(1) <= int64(n) && ctx.Err() == nil {
				a := ask(c, p, host)
				mu.Lock()
				if b, ok := strings.CutPrefix(a, "200 "); ok {
					counts[b]++
				} else {
					errs++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return counts, errs
}

// hammer keeps clients sending requests to a host and records every
// answer with its time.
type hammer struct {
	mu      sync.Mutex
	answers []answer
	quit    chan struct{}
	wg      sync.WaitGroup
}

type answer struct {
	at      time.Time
	backend string // "" for an error
}

func newHammer(p *peer, host string, clients int) *hammer {
	h := &hammer{quit: make(chan struct{})}
	for range clients {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			tr := &http.Transport{MaxIdleConnsPerHost: 1}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
			for {
				select {
				case <-h.quit:
					return
				default:
				}
				a := ask(c, p, host)
				b, _ := strings.CutPrefix(a, "200 ")
				if !strings.HasPrefix(a, "200 ") {
					b = ""
				}
				h.mu.Lock()
				h.answers = append(h.answers, answer{at: time.Now(), backend: b})
				h.mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	return h
}

func (h *hammer) stop() {
	close(h.quit)
	h.wg.Wait()
}

// awaitBackend waits until backend answers a request sent after since and
// returns how long after since that was, or -1 after limit.
func (h *hammer) awaitBackend(backend string, since time.Time, limit time.Duration) time.Duration {
	for time.Since(since) < limit {
		h.mu.Lock()
		i := slices.IndexFunc(h.answers, func(a answer) bool { return a.backend == backend && a.at.After(since) })
		var at time.Time
		if i >= 0 {
			at = h.answers[i].at
		}
		h.mu.Unlock()
		if i >= 0 {
			return at.Sub(since)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return -1
}

func (h *hammer) errorsSince(t time.Time) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, a := range h.answers {
		if a.backend == "" && a.at.After(t) {
			n++
		}
	}
	return n
}
