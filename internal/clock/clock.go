package clock

import "time"

// Clock tells the time and starts timers. The zero Clock is the real
// clock (package time); a Clock from [New] reads its [Source].
type Clock struct{ src Source }

// Source is a clock other than the real one.
type Source interface {
	// Now returns the current time.
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has elapsed, never
	// on the caller's goroutine, as time.AfterFunc does.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a timer started by [Clock.AfterFunc]; *time.Timer is one.
type Timer interface {
	// Stop prevents the timer from firing; it reports whether the call
	// stopped it (false: it had fired or been stopped already).
	Stop() bool
	// Reset makes the timer fire after d from now, whether or not it
	// fired already; it reports whether the timer was active.
	Reset(d time.Duration) bool
}

// New returns a Clock that reads src; a nil src gives the real clock.
func New(src Source) Clock { return Clock{src: src} }

// WithNow returns a Clock that tells the time with now and runs its timers
// on the real clock; a nil now gives the real clock.
func WithNow(now func() time.Time) Clock {
	if now == nil {
		return Clock{}
	}
	return Clock{src: nowFunc(now)}
}

// Real reports whether c is the real clock.
func (c Clock) Real() bool { return c.src == nil }

// Now returns the current time.
func (c Clock) Now() time.Time {
	if c.src == nil {
		return time.Now()
	}
	return c.src.Now()
}

// Since returns the time elapsed since t. On the real clock it is
// time.Since, which reads only the monotonic clock when t has a
// monotonic reading.
func (c Clock) Since(t time.Time) time.Duration {
	if c.src == nil {
		return time.Since(t)
	}
	return c.src.Now().Sub(t)
}

// AfterFunc calls f in its own goroutine once d has elapsed, and returns
// the timer, which can stop or reset it.
func (c Clock) AfterFunc(d time.Duration, f func()) Timer {
	if c.src == nil {
		return time.AfterFunc(d, f)
	}
	return c.src.AfterFunc(d, f)
}

// nowFunc is the Source of WithNow.
type nowFunc func() time.Time

func (f nowFunc) Now() time.Time { return f() }

func (nowFunc) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
