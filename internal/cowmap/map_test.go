package cowmap

import (
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMap(t *testing.T) {
	var c Map[string, int]
	_, ok := c.Load("a")
	assert.False(t, ok)
	assert.Zero(t, c.Len())
	assert.Empty(t, maps.Collect(c.All()))
	c.Delete("a") // on the zero Map

	c.Store("a", 1)
	c.Store("b", 2)
	before := c.All()
	c.Store("a", 10)
	c.Delete("b")
	v, ok := c.Load("a")
	assert.True(t, ok)
	assert.Equal(t, 10, v)
	assert.Equal(t, 1, c.Len())
	assert.Equal(t, map[string]int{"a": 1, "b": 2}, maps.Collect(before), "All yields the map as it was")
	assert.Equal(t, map[string]int{"a": 10}, maps.Collect(c.All()))

	p := c.m.Load()
	c.Delete("absent")
	assert.Same(t, p, c.m.Load(), "deleting an absent key copies nothing")

	for k := range c.All() {
		assert.Equal(t, "a", k) // stopping early is fine
		break
	}
}

func TestLoadOrCreate(t *testing.T) {
	var c Map[string, *int]
	const limit = 2
	calls := 0
	create := func(n int) (*int, bool) {
		calls++
		if n >= limit {
			return nil, false
		}
		return new(int), true
	}
	a, ok := c.LoadOrCreate("a", create)
	require.True(t, ok)
	again, ok := c.LoadOrCreate("a", create)
	require.True(t, ok)
	assert.Same(t, a, again)
	_, ok = c.LoadOrCreate("b", create)
	require.True(t, ok)
	v, ok := c.LoadOrCreate("c", create)
	assert.False(t, ok, "create refused: the map is full")
	assert.Nil(t, v)
	assert.Equal(t, 2, c.Len())
	assert.Equal(t, 3, calls, "create runs only for absent keys")
}

// TestConcurrent writes while readers read, under -race: a reader sees
// either the whole map before a write or the whole map after it, and
// concurrent LoadOrCreate calls for one key agree on one value.
func TestConcurrent(t *testing.T) {
	var c Map[int, int]
	var created atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				// Entries are written as i -> i, in order: a reader that
				// sees n entries sees exactly 0..n-1.
				n := 0
				for k, v := range c.All() {
					if k != v {
						t.Errorf("entry %d = %d", k, v)
					}
					n++
				}
				if n > 0 {
					if _, ok := c.Load(n - 1); !ok {
						t.Errorf("a later map lost entry %d", n-1)
					}
				}
			}
		})
	}
	var d Map[string, int]
	vals := make([]int, 8)
	for i := range vals {
		wg.Go(func() {
			vals[i], _ = d.LoadOrCreate("k", func(int) (int, bool) { return int(created.Add(1)) * 100, true })
		})
	}
	for i := range 200 {
		c.Store(i, i)
	}
	close(stop)
	wg.Wait()
	assert.EqualValues(t, 1, created.Load(), "one create for one key")
	for _, v := range vals {
		assert.Equal(t, 100, v)
	}
	assert.Equal(t, 200, c.Len())
}

func TestLoadAllocatesNothing(t *testing.T) {
	var c Map[string, int]
	for i := range 10 {
		c.Store(strconv.Itoa(i), i)
	}
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		c.Load("7")
		c.Load("absent")
		_, _ = c.LoadOrCreate("3", func(int) (int, bool) { return 0, false })
	}))
}
