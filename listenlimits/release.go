package listenlimits

import (
	"runtime"
	"sync/atomic"
	"time"
)

// Collecting after a wave of parks.
//
// A connection that parks lets go of net/http's goroutine and buffers,
// about 16 KiB. When many park at once (a burst of clients went idle),
// the Go runtime keeps that memory: the heap goal it set while they were
// active stays until the next collection, which an idle process reaches
// only by the runtime's two-minute forced one, and the scavenger returns
// free pages only above that goal. A Listener therefore collects when a
// wave of parks is over (at least waveParks parks, then settle windows
// one of which had at least waveBusy, and the first window with fewer
// than waveQuiet ends the wave): the goal falls to what the parked
// connections hold, and the scavenger returns the pages above it at its
// own pace. It does not call debug.FreeOSMemory, which returns them at
// once but holds a core for about 30 ms per 190 MiB: a stall the clients
// still active would see in their requests. Steady parking at any rate
// never ends a wave, so it costs nothing; and the process collects at
// most once per releaseGap, whatever its listeners do.
const (
	waveParks  = 1024
	waveSettle = 250 * time.Millisecond
	waveBusy   = 256 // 1 024 parks a second
	waveQuiet  = 64
	releaseGap = 30 * time.Second
)

var (
	// collect collects twice: net/http puts a closed connection's
	// buffers in a sync.Pool, which keeps what it holds through one
	// collection. Tests count the calls instead.
	collect = func() {
		runtime.GC()
		runtime.GC()
	}
	// waveTicks ticks every waveSettle; tests tick themselves.
	waveTicks = func() (<-chan time.Time, func()) {
		t := time.NewTicker(waveSettle)
		return t.C, t.Stop
	}
	// lastRelease is when the process last collected after a wave (UnixNano;
	// 0: never).
	lastRelease atomic.Int64
)

// countPark counts a park toward a wave, and starts watching the wave at
// its waveParks-th park.
func (ln *Listener) countPark() {
	if ln.wave.Add(1) == waveParks {
		go ln.watchWave()
	}
}

// watchWave waits for the wave of parks to end and then collects, unless
// the process did less than releaseGap ago. Parking that slows down
// without a busy window first ends the wave without a collection; Close
// ends it too.
func (ln *Listener) watchWave() {
	tick, stop := waveTicks()
	defer stop()
	prev, busy := ln.wave.Load(), false
	for {
		select {
		case <-tick:
		case <-ln.done:
			return
		}
		n := ln.wave.Load()
		if n-prev < waveQuiet {
			break
		}
		busy, prev = busy || n-prev >= waveBusy, n
	}
	ln.wave.Store(0) // parks from now on start the next wave
	if busy {
		releaseMemory(time.Now())
	}
}

// releaseMemory collects, unless the process did less than releaseGap
// before now.
func releaseMemory(now time.Time) bool {
	last := lastRelease.Load()
	if now.UnixNano()-last < int64(releaseGap) || !lastRelease.CompareAndSwap(last, now.UnixNano()) {
		return false
	}
	collect()
	return true
}
