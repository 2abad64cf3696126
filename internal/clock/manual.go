package clock

import (
	"sync"
	"time"
)

// Manual is a [Source] whose time moves only when [Manual.Advance] moves
// it: a fake clock for tests that step time by hand. Make one with
// [NewManual]; it is safe for concurrent use.
type Manual struct {
	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers []*manualTimer
}

var _ Source = (*Manual)(nil)

// NewManual returns a Manual clock that reads start until it is advanced.
func NewManual(start time.Time) *Manual { return &Manual{now: start} }

// Now returns the clock's time.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// AfterFunc registers f to run once the clock has been advanced by d. It
// never runs f itself: [Manual.Advance] does.
func (m *Manual) AfterFunc(d time.Duration, f func()) Timer {
	t := &manualTimer{m: m, f: f}
	t.Reset(d)
	return t
}

// Advance moves the clock forward by d. Each timer that falls due on the
// way runs on the calling goroutine before Advance returns, one at a time
// in the order of their times (timers due at the same instant in the
// order they were set), with the clock reading the time the timer was due;
// a timer set or reset by a callback runs too if it falls due before the
// end. The caller must hold no lock a callback takes.
func (m *Manual) Advance(d time.Duration) {
	m.mu.Lock()
	end := m.now.Add(d)
	for {
		t := m.due(end)
		if t == nil {
			break
		}
		t.active = false
		if t.at.After(m.now) {
			m.now = t.at
		}
		f := t.f
		m.mu.Unlock()
		f()
		m.mu.Lock()
	}
	if end.After(m.now) {
		m.now = end
	}
	m.mu.Unlock()
}

// due returns the earliest active timer due at or before end, and drops
// the stopped ones from the list. m.mu is held.
func (m *Manual) due(end time.Time) *manualTimer {
	var first *manualTimer
	live := m.timers[:0]
	for _, t := range m.timers {
		if !t.active {
			t.listed = false
			continue
		}
		live = append(live, t)
		if !t.at.After(end) && (first == nil || t.at.Before(first.at) || t.at.Equal(first.at) && t.seq < first.seq) {
			first = t
		}
	}
	clear(m.timers[len(live):])
	m.timers = live
	return first
}

// manualTimer is a timer of a Manual clock; its fields are guarded by
// m.mu.
type manualTimer struct {
	m      *Manual
	f      func()
	at     time.Time
	seq    uint64
	active bool // set to fire
	listed bool // in m.timers
}

func (t *manualTimer) Stop() bool {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	was := t.active
	t.active = false
	return was
}

func (t *manualTimer) Reset(d time.Duration) bool {
	m := t.m
	m.mu.Lock()
	defer m.mu.Unlock()
	was := t.active
	m.seq++
	t.at, t.seq = m.now.Add(d), m.seq
	t.active = true
	if !t.listed {
		t.listed = true
		m.timers = append(m.timers, t)
	}
	return was
}
