package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"
)

// daemonWatch is the daemon's -watch in the reload scenarios: its file
// watcher publishes a change once two polls agree, so the "file watch"
// row is one to two polls plus the publish (the default -watch is 1s).
const daemonWatch = 100 * time.Millisecond

// apply measures, at each host count, the time from the reload call until
// a host the new config adds answers 200 on a new connection.
func (s *suite) apply(ctx context.Context) {
	sec := section{title: "Config apply: from the reload call until a new host answers",
		intro: fmt.Sprintf("Each peer starts with N hosts (each with its own upstream) plus one extra host; a reload renames the extra host, "+
			"and a client asks for the new name on a new connection every millisecond until it answers 200. Config files are written "+
			"atomically (write, rename). %d repetitions; the daemon's file watcher polls every %s. The last column is the daemon's "+
			"own \"config applied ... took\" log (decode, validate, compile, swap).", s.opt.applyReps, daemonWatch),
		head: []string{"hosts", "peer", "method", "median ms", "min ms", "max ms", "applied", "problems", "daemon's own publish, median ms"}}
	seq := 0
	for _, n := range s.opt.hostCounts {
		for _, p := range s.peers {
			if ctx.Err() != nil {
				return
			}
			if why := p.lacks(featReload); why != "" {
				sec.rows = append(sec.rows, []string{strconv.Itoa(n), p.kind, "n/a", why, "", "", "", "", ""})
				continue
			}
			if err := p.start(p.baseConf().withHosts(n, "new-0.test"), daemonWatch); err != nil {
				sec.rows = append(sec.rows, []string{strconv.Itoa(n), p.kind, "", "failed to start: " + oneLine(err.Error()), "", "", "", "", ""})
				continue
			}
			for _, rl := range p.reloaders() {
				if rl.na != "" {
					sec.rows = append(sec.rows, []string{strconv.Itoa(n), p.kind, rl.name, rl.na, "", "", "", "", ""})
					continue
				}
				p.markReloads()
				var took []float64
				var problems []string
				for range s.opt.applyReps {
					seq++
					c := p.conf.withHosts(n, "new-"+strconv.Itoa(seq)+".test")
					call, err := rl.prepare(c)
					t0 := time.Now()
					if err == nil {
						err = call()
					}
					if err == nil {
						err = p.awaitHost(c.Hosts[len(c.Hosts)-1].Name, 15*time.Second)
					}
					if err != nil {
						problems = append(problems, oneLine(err.Error()))
						continue
					}
					took = append(took, float64(time.Since(t0))/float64(time.Millisecond))
					// Let the old generation's workers wind down.
					time.Sleep(200 * time.Millisecond)
				}
				row := []string{strconv.Itoa(n), p.kind, rl.name, num(median(took)), num(minOf(took)), "",
					fmt.Sprintf("%d of %d", len(took), s.opt.applyReps), joinProblems(problems), ""}
				if len(took) > 0 {
					row[5] = num(slices.Max(took))
				}
				if own := p.publishTimes(); len(own) > 0 {
					row[8] = num(median(own))
				}
				sec.rows = append(sec.rows, row)
				s.progress("apply    %-10s %4d hosts, %-13s median %s ms, min %s ms, max %s ms, %s applied %s", p.kind, n, rl.name,
					row[3], row[4], row[5], row[6], row[7])
			}
			p.stop()
		}
	}
	s.rep.add(sec)
}

func joinProblems(ps []string) string {
	if len(ps) == 0 {
		return ""
	}
	msg := ps[0]
	if len(ps) > 1 {
		msg += " (and " + strconv.Itoa(len(ps)-1) + " more)"
	}
	return msg
}

// churnHosts is the host count of the churn and the size of its configs.
const churnHosts = 500

// churn puts 64 keep-alive connections on the main host and reloads every
// 100 ms, changing one other host, against the same load without reloads.
func (s *suite) churn(ctx context.Context) {
	sec := section{title: fmt.Sprintf("Churn: a reload every 100 ms at %d hosts under 64 keep-alive connections", churnHosts),
		intro: fmt.Sprintf("wrk -c64 on the main host for %s without reloads, then %s with a reload every 100 ms that renames one other "+
			"host. Every reload's document is rendered before the load starts, so the harness does no more during the load than write "+
			"the files and signal, or send the document. Applied reloads are counted from each peer's own log (Caddy: its 200 answers "+
			"to /load, which come once the config runs).",
			s.opt.churnFor, s.opt.churnFor),
		head: []string{"peer", "method", "req/s without", "req/s with", "throughput lost", "socket errors", "non-2xx",
			"CPU µs/req without", "CPU µs/req with", "reloads applied / asked", "reload calls failed"}}
	for _, p := range s.peers {
		if ctx.Err() != nil {
			return
		}
		if why := p.lacks(featReload); why != "" {
			sec.rows = append(sec.rows, []string{p.kind, "n/a", why, "", "", "", "", "", "", "", ""})
			continue
		}
		for _, rl := range p.reloaders() {
			if rl.name == "file watch" {
				continue // polls coalesce changes by design; SIGHUP is the same publish
			}
			if rl.na != "" {
				sec.rows = append(sec.rows, []string{p.kind, rl.name, rl.na, "", "", "", "", "", "", "", ""})
				continue
			}
			row, err := s.churnOne(ctx, p, rl)
			if err != nil {
				row = []string{p.kind, rl.name, "failed: " + oneLine(err.Error()), "", "", "", "", "", "", "", ""}
			}
			s.progress("churn    %-10s %-13s %v", p.kind, rl.name, row[2:])
			sec.rows = append(sec.rows, row)
			p.stop()
		}
	}
	s.rep.add(sec)
}

// churnEvery is the churn's reload period.
const churnEvery = 100 * time.Millisecond

func (s *suite) churnOne(ctx context.Context, p *peer, rl reloader) ([]string, error) {
	if err := p.start(p.baseConf().withHosts(churnHosts, "churn-0.test"), 0); err != nil {
		return nil, err
	}
	// The reloads' documents, rendered now: rendering one (a template,
	// and for the JSON variants a decode and a marshal, some milliseconds)
	// during the load would take the cores the peer serves on.
	calls := make([]func() error, int(s.opt.churnFor/churnEvery)+10)
	first := p.conf
	for i := range calls {
		call, err := rl.prepare(first.withHosts(churnHosts, "churn-"+strconv.Itoa(i+1)+".test"))
		if err != nil {
			return nil, err
		}
		calls[i] = call
	}
	spec := s.loadSpec(p, tputSpecs[0])
	spec.duration = time.Second
	if _, err := s.runLoad(ctx, spec); err != nil {
		return nil, err
	}
	spec.duration = s.opt.churnFor
	w0 := openWindow(p.pid())
	base, err := s.runLoad(ctx, spec)
	w0.close()
	if err != nil {
		return nil, err
	}

	p.markReloads()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var asked, failed int
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(churnEvery)
		defer t.Stop()
		for _, call := range calls {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			asked++
			if call() != nil {
				failed++
			}
		}
	}()
	w1 := openWindow(p.pid())
	with, err := s.runLoad(ctx, spec)
	w1.close()
	close(stop)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	time.Sleep(time.Second) // the last reloads finish and log
	applied, aerr := p.appliedReloads()
	appliedS := strconv.Itoa(applied)
	if aerr != nil {
		appliedS = "?"
	}
	lost := 100 * (1 - with.rps()/base.rps())
	return []string{p.kind, rl.name, num(base.rps()), num(with.rps()), num(lost) + " %",
		strconv.FormatInt(with.Errors-with.Non2xx, 10), strconv.FormatInt(with.Non2xx, 10),
		num(perReq(w0.CPU, base.Requests)), num(perReq(w1.CPU, with.Requests)),
		appliedS + " / " + strconv.Itoa(asked), strconv.Itoa(failed)}, nil
}

func perReq(cpu time.Duration, n int64) float64 {
	if n == 0 {
		return 0
	}
	return float64(cpu.Microseconds()) / float64(n)
}
