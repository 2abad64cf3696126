package balance

import (
	"sync/atomic"

	"github.com/paduraksa/paduraksa/upstream"
)

// view caches a value derived from one available set (a zone split, a
// ConsistentHash table), keyed by the identity of the slice it was built from.
//
// The upstream package replaces the slice whenever membership, metadata or a
// verdict changes, and never modifies a published one, so the address of its
// first element and its length identify it. The cached entry keeps that array
// alive, so the address cannot be reused by another slice while it is cached.
// Derived values hold indices into the slice, never destinations, so a stale
// entry can only give a valid member of the slice passed in.
type view[T any] struct {
	cur      atomic.Pointer[viewEntry[T]]
	building atomic.Bool
}

type viewEntry[T any] struct {
	first **upstream.Destination
	n     int
	v     *T
}

// load returns the value built for available, or nil.
func (c *view[T]) load(available []*upstream.Destination) *T {
	e := c.cur.Load()
	if e == nil || e.n != len(available) || len(available) == 0 || e.first != &available[0] {
		return nil
	}
	return e.v
}

// build builds and installs the value for available, unless another
// goroutine is building one; then it returns nil at once and the caller
// falls back to a table-free pick. available must not be empty.
func (c *view[T]) build(available []*upstream.Destination, f func([]*upstream.Destination) *T) *T {
	if !c.building.CompareAndSwap(false, true) {
		return nil
	}
	defer c.building.Store(false)
	v := f(available)
	c.cur.Store(&viewEntry[T]{first: &available[0], n: len(available), v: v})
	return v
}
