package proxy

import (
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultIdleTimeout is the idle timeout of a cluster that sets none.
const DefaultIdleTimeout = time.Hour

// idleTimer cuts an exchange after no data moved in either direction for a
// while: one timer per pooled exchange, re-armed by itself, and an atomic
// stamp of the last activity that every read stores. No per-read deadline
// (which would also time out the quiet direction of a one-way stream) and
// no timer per read.
//
// The timer and its callback are made once per pooled exchange; start and
// stop cost a Reset and a Stop.
type idleTimer struct {
	last atomic.Int64 // ns since epoch of the last activity

	mu     sync.Mutex // guards everything below and the cut itself
	t      *time.Timer
	idle   time.Duration
	active bool
	fired  bool
	// What a cut closes, by phase: the client's writer (deadlines), the
	// upstream response body, the two ends of an upgraded connection.
	w     http.ResponseWriter
	body  io.Closer
	conns [2]io.Closer
}

func (it *idleTimer) init() { it.t = time.AfterFunc(time.Hour, it.fire); it.t.Stop() }

// start arms the timer for an exchange; idle <= 0 means never.
func (it *idleTimer) start(idle time.Duration, w http.ResponseWriter) {
	if idle <= 0 {
		return
	}
	it.mu.Lock()
	it.last.Store(int64(time.Since(epoch)))
	it.idle, it.active, it.fired, it.w = idle, true, false, w
	it.t.Reset(idle)
	it.mu.Unlock()
}

// epoch is the origin of the activity stamps (monotonic).
var epoch = time.Now()

// touch records activity. It is one clock read and one atomic store, and
// safe from any goroutine at any time (a late read of a finished exchange
// only stamps a timer that is not armed for it).
func (it *idleTimer) touch() { it.last.Store(int64(time.Since(epoch))) }

// setBody makes a cut close the upstream response body.
func (it *idleTimer) setBody(b io.Closer) {
	if it.idle <= 0 {
		return
	}
	it.mu.Lock()
	it.body = b
	it.mu.Unlock()
}

// setConns makes a cut close both ends of an upgraded connection. It
// reports false if the timer fired already.
func (it *idleTimer) setConns(a, b io.Closer) bool {
	if it.idle <= 0 {
		return true
	}
	it.mu.Lock()
	defer it.mu.Unlock()
	it.conns = [2]io.Closer{a, b}
	return !it.fired
}

// stop disarms the timer and reports whether it cut the exchange. After
// stop returns, no cut runs for this exchange.
func (it *idleTimer) stop() bool {
	if it.idle <= 0 {
		return false // never armed, or stopped already
	}
	return it.disarm()
}

func (it *idleTimer) disarm() bool {
	it.mu.Lock()
	it.t.Stop()
	fired := it.fired
	it.active, it.idle = false, 0
	it.w, it.body, it.conns = nil, nil, [2]io.Closer{}
	it.mu.Unlock()
	return fired
}

// hasFired reports whether the timer cut the exchange.
func (it *idleTimer) hasFired() bool {
	if it.idle <= 0 {
		return false
	}
	it.mu.Lock()
	defer it.mu.Unlock()
	return it.fired
}

func (it *idleTimer) fire() {
	it.mu.Lock()
	defer it.mu.Unlock()
	if !it.active {
		return
	}
	quiet := time.Since(epoch) - time.Duration(it.last.Load())
	if quiet < it.idle {
		it.t.Reset(it.idle - quiet)
		return
	}
	it.fired, it.active = true, false
	// Unblock whatever waits: the upstream body read, the client's body
	// read and write, both ends of a tunnel.
	if it.body != nil {
		it.body.Close()
	}
	for _, c := range it.conns {
		if c != nil {
			c.Close()
		}
	}
	if it.w != nil && it.conns[0] == nil {
		// Before the response, only the client's upload can be stuck: a
		// past read deadline ends it and the exchange answers 504. After
		// it, the client may also have stopped reading.
		rc := http.NewResponseController(it.w)
		now := time.Now()
		rc.SetReadDeadline(now)
		if it.body != nil {
			rc.SetWriteDeadline(now)
		}
	}
}
