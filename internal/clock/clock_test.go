package clock

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The zero Clock is package time: inside a bubble it reads the bubble's
// time and its timers fire when the bubble's time reaches them.
func TestZeroClockIsReal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c Clock
		start := time.Now()
		assert.Equal(t, start, c.Now())
		fired := make(chan time.Time, 1)
		tm := c.AfterFunc(3*time.Second, func() { fired <- time.Now() })
		time.Sleep(2 * time.Second)
		assert.Equal(t, 2*time.Second, c.Since(start))
		synctest.Wait()
		assert.Empty(t, fired, "not yet due")
		time.Sleep(time.Second)
		synctest.Wait()
		require.Len(t, fired, 1)
		assert.Equal(t, start.Add(3*time.Second), <-fired)
		assert.False(t, tm.Stop(), "it fired already")
		assert.Equal(t, Clock{}, New(nil))
		assert.Equal(t, Clock{}, WithNow(nil))
	})
}

func TestWithNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fixed := time.Unix(1000, 0)
		c := WithNow(func() time.Time { return fixed })
		assert.Equal(t, fixed, c.Now())
		assert.Equal(t, time.Minute, c.Since(fixed.Add(-time.Minute)))
		fired := make(chan struct{})
		c.AfterFunc(time.Second, func() { close(fired) })
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case <-fired:
		default:
			t.Fatal("the timer runs on the real clock")
		}
	})
}

func TestManual(t *testing.T) {
	start := time.Unix(1000, 0)
	m := NewManual(start)
	c := New(m)
	var got []string
	at := func(name string) func() {
		return func() { got = append(got, name+"@"+c.Since(start).String()) }
	}
	c.AfterFunc(3*time.Second, at("c"))
	c.AfterFunc(time.Second, at("a"))
	c.AfterFunc(time.Second, at("a2")) // same instant: in the order set
	stopped := c.AfterFunc(2*time.Second, at("never"))
	reset := c.AfterFunc(time.Hour, at("reset"))
	c.AfterFunc(2*time.Second, func() {
		got = append(got, "chain@"+c.Since(start).String())
		c.AfterFunc(500*time.Millisecond, at("chained")) // due before the end: runs in this Advance
	})

	assert.True(t, stopped.Stop())
	assert.False(t, stopped.Stop())
	assert.True(t, reset.Reset(4*time.Second), "it was active")
	assert.Empty(t, got, "AfterFunc never runs a callback itself")

	m.Advance(5 * time.Second)
	assert.Equal(t, []string{"a@1s", "a2@1s", "chain@2s", "chained@2.5s", "c@3s", "reset@4s"}, got)
	assert.Equal(t, start.Add(5*time.Second), c.Now())
	assert.False(t, reset.Stop(), "it fired")

	got = nil
	assert.False(t, reset.Reset(time.Second), "a fired timer can be reset")
	assert.False(t, stopped.Reset(2*time.Second), "so can a stopped one")
	m.Advance(999 * time.Millisecond)
	assert.Empty(t, got)
	m.Advance(time.Millisecond)
	assert.Equal(t, []string{"reset@6s"}, got)
	m.Advance(time.Second)
	assert.Equal(t, []string{"reset@6s", "never@7s"}, got)

	// Stop and Reset in a loop keep one entry per timer.
	for range 100 {
		stopped.Stop()
		stopped.Reset(time.Hour)
	}
	assert.Len(t, m.timers, 1)
}

func TestZeroClockAllocatesNothing(t *testing.T) {
	var c Clock
	start := c.Now()
	assert.Zero(t, testing.AllocsPerRun(1000, func() { _ = c.Since(start); _ = c.Now() }))
}

// BenchmarkSince compares the zero Clock with time.Since, which it calls:
// the difference is the nil check.
func BenchmarkSince(b *testing.B) {
	start := time.Now()
	b.Run("clock", func(b *testing.B) {
		var c Clock
		b.ReportAllocs()
		for b.Loop() {
			_ = c.Since(start)
		}
	})
	b.Run("time", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = time.Since(start)
		}
	})
}
