package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// haproxyMaxConns is what HAProxy can hold under this machine's hard
// limit of 20 000 descriptors: it reserves two per connection.
const haproxyMaxConns = 9800

// memory opens many idle keep-alive connections to each peer, one request
// on each, and reports the proxy's proportional resident memory per
// connection.
func (s *suite) memory(ctx context.Context) {
	sec := section{title: fmt.Sprintf("Memory: %d idle keep-alive connections", s.opt.idleConns),
		intro: "Each connection sends one request to the main host, reads the answer and stays open. Memory is the PSS of the " +
			"proxy's process tree (pages shared by a master and its workers counted once), 2 s after the last connection; " +
			"per connection is the growth over the idle peer.",
		head: []string{"peer", "connections held", "failed", "before MiB", "with connections MiB", "KiB per connection", "× caddy"}}
	per := map[string]float64{}
	var rows [][]string
	for _, p := range s.peers {
		if ctx.Err() != nil {
			return
		}
		n := s.opt.idleConns
		if p.kind == kindHAProxy {
			n = min(n, haproxyMaxConns)
		}
		row, kib, note, err := s.memoryOne(p, n)
		if err != nil {
			row = []string{p.kind, "failed: " + oneLine(err.Error()), "", "", "", "", ""}
		}
		per[p.kind] = kib
		rows = append(rows, row)
		if note != "" {
			sec.after = append(sec.after, note)
		}
		s.progress("memory   %-10s %v", p.kind, row[1:6])
		p.stop()
	}
	for _, row := range rows {
		row[6] = ratio(per[row[0]], per[kindCaddy])
		sec.rows = append(sec.rows, row)
	}
	if s.opt.idleConns > haproxyMaxConns {
		sec.after = append(sec.after, fmt.Sprintf("HAProxy holds at most %d here: it reserves two descriptors per connection "+
			"and the machine's hard limit is 20 000.", haproxyMaxConns))
	}
	s.rep.add(sec)
}

// memoryOne measures p with n connections; note is the daemon's own
// account of its memory (goMemory), "" for the other peers.
func (s *suite) memoryOne(p *peer, n int) (row []string, kib float64, note string, err error) {
	if err := p.start(p.baseConf(), 0); err != nil {
		return nil, 0, "", err
	}
	time.Sleep(500 * time.Millisecond)
	before := treePSS(p.pid())
	conns := make([]net.Conn, n)
	var failed, next atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				c, err := idleConn(p.addr(httpPort))
				if err != nil {
					failed.Add(1)
					continue
				}
				conns[i] = c
			}
		}()
	}
	wg.Wait()
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	time.Sleep(2 * time.Second)
	after := treePSS(p.pid())
	if p.kind == kindDaemon {
		note = p.goMemory()
	}
	held := int64(n) - failed.Load()
	if held > 0 {
		kib = float64(after-before) / 1024 / float64(held)
	}
	mib := func(b int64) string { return num(float64(b) / (1 << 20)) }
	return []string{p.kind, strconv.FormatInt(held, 10), strconv.FormatInt(failed.Load(), 10), mib(before), mib(after),
		num(kib), ""}, kib, note, nil
}

// idleConn opens a connection, completes one request on it and leaves it
// open.
func idleConn(addr string) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: "+benchHost+"\r\n\r\n"); err != nil {
		c.Close()
		return nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		c.Close()
		return nil, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		c.Close()
		return nil, fmt.Errorf("status %d, %v", resp.StatusCode, err)
	}
	c.SetDeadline(time.Time{})
	return c, nil
}

// goMemLine is one of the Go runtime's memory figures in the daemon's
// metrics.
var goMemLine = regexp.MustCompile(`(?m)^(go_goroutines|go_memstats_(?:heap_alloc|heap_idle|heap_released|stack_inuse|next_gc)_bytes) (\S+)`)

// goMemory reads, from the running daemon's metrics right after its PSS
// was read, with the connections still open, where its memory is by the
// Go runtime's account: the live heap (with garbage not yet collected),
// the free heap it keeps and what it has returned, the stacks and the
// goroutines. "" when they cannot be
// read. It reads, and changes nothing the row measured.
func (p *peer) goMemory() string {
	if !p.flags["admin"] {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.addr(adminPort)+"/metrics", nil)
	if err != nil {
		return ""
	}
	resp, err := p.s.adminClient.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	v := map[string]float64{}
	for _, m := range goMemLine.FindAllSubmatch(body, -1) {
		v[string(m[1])], _ = strconv.ParseFloat(string(m[2]), 64)
	}
	if len(v) < 6 {
		return ""
	}
	mib := func(name string) string { return num(v["go_memstats_"+name+"_bytes"] / (1 << 20)) }
	return fmt.Sprintf("paduraksad by the Go runtime's account, after the PSS was read: heap objects %s MiB (live and not yet collected), "+
		"free heap kept %s MiB, returned %s MiB, stacks %s MiB, next collection at %s MiB, %.0f goroutines.",
		mib("heap_alloc"), num((v["go_memstats_heap_idle_bytes"]-v["go_memstats_heap_released_bytes"])/(1<<20)),
		mib("heap_released"), mib("stack_inuse"), mib("next_gc"), v["go_goroutines"])
}
