package cowmap

import (
	"iter"
	"maps"
	"sync"
	"sync/atomic"
)

// Map is a copy-on-write map from K to V. The zero Map is empty.
type Map[K comparable, V any] struct {
	mu sync.Mutex // serialises writers
	m  atomic.Pointer[map[K]V]
}

// Load returns the value of k and whether there is one. It takes no lock
// and allocates nothing.
func (c *Map[K, V]) Load(k K) (V, bool) {
	if m := c.m.Load(); m != nil {
		v, ok := (*m)[k]
		return v, ok
	}
	var zero V
	return zero, false
}

// Len returns the number of entries.
func (c *Map[K, V]) Len() int {
	if m := c.m.Load(); m != nil {
		return len(*m)
	}
	return 0
}

// All returns the entries of the map as it is when All is called; writes
// after that do not change what it yields.
func (c *Map[K, V]) All() iter.Seq2[K, V] {
	m := c.m.Load()
	return func(yield func(K, V) bool) {
		if m == nil {
			return
		}
		for k, v := range *m {
			if !yield(k, v) {
				return
			}
		}
	}
}

// Store sets the value of k.
func (c *Map[K, V]) Store(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := c.copy(1)
	next[k] = v
	c.m.Store(&next)
}

// Delete removes k; it copies nothing when k is absent.
func (c *Map[K, V]) Delete(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.Load(k); !ok {
		return
	}
	next := c.copy(0)
	delete(next, k)
	c.m.Store(&next)
}

// LoadOrCreate returns the value of k. When there is none, it calls create
// under the writers' lock with the number of entries, and stores the value
// create returns if create reports true; when create reports false (the
// map is full, say), nothing is stored and LoadOrCreate returns the zero V
// and false. Concurrent calls for one absent key call create once.
func (c *Map[K, V]) LoadOrCreate(k K, create func(n int) (V, bool)) (V, bool) {
	if v, ok := c.Load(k); ok {
		return v, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.Load(k); ok {
		return v, true
	}
	v, ok := create(c.Len())
	if !ok {
		var zero V
		return zero, false
	}
	next := c.copy(1)
	next[k] = v
	c.m.Store(&next)
	return v, true
}

// copy returns a copy of the current map with room for extra more
// entries. c.mu is held.
func (c *Map[K, V]) copy(extra int) map[K]V {
	old := c.m.Load()
	if old == nil {
		return make(map[K]V, extra)
	}
	next := make(map[K]V, len(*old)+extra)
	maps.Copy(next, *old)
	return next
}
