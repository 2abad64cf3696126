package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
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
		row, kib, err := s.memoryOne(p, n)
		if err != nil {
			row = []string{p.kind, "failed: " + oneLine(err.Error()), "", "", "", "", ""}
		}
		per[p.kind] = kib
		rows = append(rows, row)
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

func (s *suite) memoryOne(p *peer, n int) ([]string, float64, error) {
	if err := p.start(p.baseConf(), 0); err != nil {
		return nil, 0, err
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
	held := int64(n) - failed.Load()
	kib := 0.0
	if held > 0 {
		kib = float64(after-before) / 1024 / float64(held)
	}
	mib := func(b int64) string { return num(float64(b) / (1 << 20)) }
	return []string{p.kind, strconv.FormatInt(held, 10), strconv.FormatInt(failed.Load(), 10), mib(before), mib(after),
		num(kib), ""}, kib, nil
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
