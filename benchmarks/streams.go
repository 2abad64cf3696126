package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/websocket"
)

// streams opens an SSE stream and a WebSocket through each peer, reloads
// it (once changing an unrelated host, once the streams' own route) and
// reports whether each stream kept going.
func (s *suite) streams(ctx context.Context) {
	watch := 1500 * time.Millisecond
	if s.opt.quick {
		watch = time.Second
	}
	sec := section{title: "Streams across a reload: kept or cut",
		intro: fmt.Sprintf("An SSE stream (an event every 100 ms) and a WebSocket (an echo every 100 ms) stay open on the main host; "+
			"the peer is reloaded, the new config is awaited, and both are watched for %s more. \"Own route\" changes a request "+
			"header the main host's route sets; \"unrelated\" renames another host.", watch),
		head: []string{"peer", "method", "SSE, unrelated host", "SSE, own route", "WebSocket, unrelated host", "WebSocket, own route"}}
	seq := 0
	for _, p := range s.peers {
		if ctx.Err() != nil {
			return
		}
		if why := p.lacks(featReload); why != "" {
			sec.rows = append(sec.rows, []string{p.kind, "n/a", why, "", "", ""})
			continue
		}
		for _, rl := range p.reloaders() {
			if rl.name == "file watch" || rl.name == "SIGHUP, JSON file" {
				continue // the same publish as SIGHUP
			}
			row := []string{p.kind, rl.name, "", "", "", ""}
			if rl.na != "" {
				row[2] = rl.na
				sec.rows = append(sec.rows, row)
				continue
			}
			if err := p.start(p.baseConf().withHosts(3, "s-0.test"), 0); err != nil {
				row[2] = "failed to start: " + oneLine(err.Error())
				sec.rows = append(sec.rows, row)
				continue
			}
			for i, own := range []bool{false, true} {
				seq++
				c := p.conf.withHosts(3, "s-"+strconv.Itoa(seq)+".test")
				if own {
					c.Gen++
				}
				sse, ws := s.acrossReload(p, rl, c, watch)
				row[2+i], row[4+i] = sse, ws
			}
			s.progress("streams  %-10s %-13s SSE %s / %s, WebSocket %s / %s", p.kind, rl.name, row[2], row[3], row[4], row[5])
			sec.rows = append(sec.rows, row)
			p.stop()
		}
	}
	s.rep.add(sec)
}

// acrossReload opens both streams, applies c and reports each one's fate.
func (s *suite) acrossReload(p *peer, rl reloader, c confData, watch time.Duration) (sse, ws string) {
	ev, closeSSE, err := openSSE(p.addr(httpPort))
	if err != nil {
		return "failed: " + oneLine(err.Error()), "not tried"
	}
	defer closeSSE()
	echo, closeWS, err := openWS(p.addr(httpPort))
	if err != nil {
		return "not tried", "failed: " + oneLine(err.Error())
	}
	defer closeWS()
	if err := awaitEvent(ev, 5*time.Second); err != nil {
		return "failed before the reload: " + err.Error(), "not tried"
	}
	if err := echo(); err != nil {
		return "not tried", "failed before the reload: " + err.Error()
	}
	call, err := rl.prepare(c)
	t0 := time.Now()
	if err == nil {
		err = call()
	}
	if err != nil {
		msg := "reload failed: " + oneLine(err.Error())
		return msg, msg
	}
	if err := p.awaitHost(c.Hosts[len(c.Hosts)-1].Name, 15*time.Second); err != nil {
		msg := "reload not applied: " + oneLine(err.Error())
		return msg, msg
	}
	sse, ws = "kept", "kept"
	end := time.Now().Add(watch)
	sseDone, wsDone := false, false
	for time.Now().Before(end) && !(sseDone && wsDone) {
		if !sseDone {
			if err := awaitEvent(ev, time.Second); err != nil {
				sse, sseDone = fmt.Sprintf("cut %s after the reload call (%v)", time.Since(t0).Round(10*time.Millisecond), err), true
			}
		}
		if !wsDone {
			if err := echo(); err != nil {
				ws, wsDone = fmt.Sprintf("cut %s after the reload call (%v)", time.Since(t0).Round(10*time.Millisecond), err), true
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return sse, ws
}

// openSSE opens GET /sse on the main host and delivers each event's
// arrival (or the stream's end, as an error) on the channel.
func openSSE(addr string) (<-chan error, func(), error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, nil, err
	}
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, "GET /sse HTTP/1.1\r\nHost: "+benchHost+"\r\nAccept: text/event-stream\r\n\r\n"); err != nil {
		conn.Close()
		return nil, nil, err
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	if resp.StatusCode != 200 {
		conn.Close()
		return nil, nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	conn.SetDeadline(time.Time{})
	ev := make(chan error, 1024)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data:") {
				ev <- nil
			}
		}
		err := sc.Err()
		if err == nil {
			err = io.EOF
		}
		ev <- err
		close(ev)
	}()
	return ev, func() { conn.Close() }, nil
}

// awaitEvent waits for the next event, draining those already queued.
func awaitEvent(ev <-chan error, limit time.Duration) error {
	t := time.NewTimer(limit)
	defer t.Stop()
	for {
		select {
		case err, ok := <-ev:
			if !ok {
				return io.EOF
			}
			if err != nil {
				return err
			}
			if len(ev) == 0 {
				return nil
			}
		case <-t.C:
			return errors.New("no event for " + limit.String())
		}
	}
}

// openWS opens a WebSocket to /ws on the main host; echo sends a message
// and checks that the same one comes back within a second.
func openWS(addr string) (echo func() error, closeFn func(), err error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, nil, err
	}
	conf, err := websocket.NewConfig("ws://"+benchHost+"/ws", "http://"+benchHost)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	ws, err := websocket.NewClient(conf, conn)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	n := 0
	echo = func() error {
		n++
		msg := "ping " + strconv.Itoa(n)
		ws.SetDeadline(time.Now().Add(time.Second))
		if err := websocket.Message.Send(ws, msg); err != nil {
			return err
		}
		var got string
		if err := websocket.Message.Receive(ws, &got); err != nil {
			return err
		}
		if got != msg {
			return fmt.Errorf("echo %q, want %q", got, msg)
		}
		return nil
	}
	return echo, func() { ws.Close() }, nil
}
