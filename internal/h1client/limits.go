package h1client

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
)

// Waiting for a connection. A request waits for one when no idle
// connection to its destination is there: while the client dials and,
// at [Config.MaxConnsPerDestination], until a connection of the address
// goes idle or closes. [Config.MaxPending] bounds how many wait at once
// across the client; the next is refused at once with [ErrPending],
// never queued. A request taking an idle connection never waits.

// ErrPending refuses a request that would wait for a connection while
// [Config.MaxPending] others already do. Nothing of it was sent.
var ErrPending = errors.New("h1client: too many requests waiting for a connection")

// WaitError is the failure of a request whose wait for a connection at
// [Config.MaxConnsPerDestination] ended with its context, before any
// connection was dialed for it: nothing of it was sent. Err is the
// context's error.
type WaitError struct{ Err error }

func (e *WaitError) Error() string { return "h1client: waiting for a connection: " + e.Err.Error() }

// Unwrap returns the context's error.
func (e *WaitError) Unwrap() error { return e.Err }

// Pending returns how many requests wait for a connection now.
func (cl *Client) Pending() int64 { return cl.pending.Load() }

// ConnWaits returns how many requests waited at
// [Config.MaxConnsPerDestination] for a connection to free up.
func (cl *Client) ConnWaits() uint64 { return cl.connWaits.Load() }

// OpenConns returns how many connections to addr are open (idle or
// carrying an exchange); it is counted only with
// [Config.MaxConnsPerDestination], and 0 without.
func (cl *Client) OpenConns(addr string) int {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if s := cl.slots[addr]; s != nil {
		return s.open
	}
	return 0
}

// connSlots counts the connections open to one address, under the
// client's lock, and wakes the requests waiting for one.
type connSlots struct {
	open    int
	changed chan struct{} // closed when a connection goes idle or closes; nil while nobody waits
}

// wake tells every waiter to look again.
func (s *connSlots) wake() {
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// beginWait counts a request that waits for a connection, or refuses it
// past MaxPending.
func (cl *Client) beginWait() error {
	n := cl.pending.Add(1)
	if max := cl.cfg.MaxPending; max > 0 && n > int64(max) {
		cl.pending.Add(-1)
		return ErrPending
	}
	return nil
}

// reserve takes a connection slot for d's address, waiting while the
// address has MaxConnsPerDestination open. It returns an idle connection
// that turned up while it waited, or nil with the slot taken (the caller
// dials), or the wait's error.
func (cl *Client) reserve(ctx context.Context, d Destination, bodyless bool) (*conn, error) {
	max := cl.cfg.MaxConnsPerDestination
	waited := false
	for {
		cl.mu.Lock()
		s := cl.slots[d.Addr]
		if s == nil {
			s = &connSlots{}
			cl.slots[d.Addr] = s
		}
		if s.open < max {
			s.open++
			cl.mu.Unlock()
			return nil, nil
		}
		// At the cap: an idle connection of the address kept for another
		// server name or PROXY header gives its slot up.
		if victim := cl.idleOfAddr(d); victim != nil {
			cl.mu.Unlock()
			victim.nc.Close() // releases its slot
			continue
		}
		if s.changed == nil {
			s.changed = make(chan struct{})
		}
		ch := s.changed
		cl.mu.Unlock()
		if !waited {
			waited = true
			cl.connWaits.Add(1)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, &WaitError{Err: ctx.Err()}
		}
		if c := cl.idleConn(d, bodyless); c != nil {
			return c, nil
		}
	}
}

// idleOfAddr takes, with the lock held, the oldest idle connection to
// d's address kept under another Destination, or returns nil.
func (cl *Client) idleOfAddr(d Destination) *conn {
	for k, l := range cl.idle {
		if k.Addr != d.Addr || k == d || len(l.conns) == 0 {
			continue
		}
		c := l.conns[0]
		l.conns[0] = nil
		l.conns = l.conns[1:]
		cl.dropEmpty(k, l)
		return c
	}
	return nil
}

// release gives back the slot of a connection to addr that closed.
func (cl *Client) release(addr string) {
	cl.mu.Lock()
	if s := cl.slots[addr]; s != nil {
		s.open--
		s.wake()
		if s.open <= 0 {
			delete(cl.slots, addr)
		}
	}
	cl.mu.Unlock()
}

// idled wakes, with the lock held, the requests waiting for a connection
// to addr: one went idle.
func (cl *Client) idled(addr string) {
	if s := cl.slots[addr]; s != nil {
		s.wake()
	}
}

// slotConn is a connection that holds a slot of its address: its first
// Close gives the slot back, whichever path closes it.
type slotConn struct {
	net.Conn
	cl     *Client
	addr   string
	closed atomic.Bool
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	if c.closed.CompareAndSwap(false, true) {
		c.cl.release(c.addr)
	}
	return err
}

// NetConn returns the connection below, for the idle check's peek.
func (c *slotConn) NetConn() net.Conn { return c.Conn }
