package listenlimits

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// waveTest replaces collect and the settle ticks for the test, and
// clears the process's last release.
type waveTest struct {
	releases atomic.Int32
	ticks    chan time.Time
	ln       *Listener
}

func newWaveTest(t *testing.T) *waveTest {
	w := &waveTest{ticks: make(chan time.Time), ln: Limits{}.Listener(nil)}
	savedFree, savedTicks, last := collect, waveTicks, lastRelease.Load()
	collect = func() { w.releases.Add(1) }
	waveTicks = func() (<-chan time.Time, func()) { return w.ticks, func() {} }
	lastRelease.Store(0)
	t.Cleanup(func() {
		close(w.ln.done)
		collect, waveTicks = savedFree, savedTicks
		lastRelease.Store(last)
	})
	return w
}

func (w *waveTest) park(n int) {
	for range n {
		w.ln.countPark()
	}
}

// tick ends a settle window, and gives the watcher a moment to count it.
func (w *waveTest) tick() {
	w.ticks <- time.Now()
	time.Sleep(20 * time.Millisecond)
}

// watchEnded reports whether the watcher has ended: it takes no tick.
func (w *waveTest) watchEnded() bool {
	select {
	case w.ticks <- time.Now():
		return false
	case <-time.After(100 * time.Millisecond):
		return true
	}
}

// A wave of parks that ends returns memory once, after it ended.
func TestReleaseAfterWave(t *testing.T) {
	w := newWaveTest(t)
	w.park(waveParks)
	time.Sleep(20 * time.Millisecond) // the watcher starts
	for range 3 {
		w.park(waveBusy)
		w.tick()
	}
	w.park(waveQuiet)
	w.tick()
	require.Zero(t, w.releases.Load(), "not while parks keep coming")
	w.park(waveQuiet - 1)
	w.tick() // a quiet window after a busy one
	require.Eventually(t, func() bool { return w.releases.Load() == 1 }, 2*time.Second, time.Millisecond)
	require.Zero(t, w.ln.wave.Load(), "the next wave counts from zero")
	require.True(t, w.watchEnded())

	// The next wave, within releaseGap: no release.
	w.park(waveParks)
	time.Sleep(20 * time.Millisecond)
	w.park(waveBusy)
	w.tick()
	w.tick()
	require.True(t, w.watchEnded())
	require.Equal(t, int32(1), w.releases.Load())
}

// Parking that was never busy ends its count without a release.
func TestNoReleaseWithoutWave(t *testing.T) {
	w := newWaveTest(t)
	w.park(waveParks)
	time.Sleep(20 * time.Millisecond)
	for range 8 {
		w.park(waveBusy - 1)
		w.tick()
	}
	w.tick()
	require.True(t, w.watchEnded())
	require.Zero(t, w.releases.Load())
	require.Zero(t, w.ln.wave.Load())
}

// The process returns memory at most once per releaseGap.
func TestReleaseGap(t *testing.T) {
	w := newWaveTest(t)
	now := time.Now()
	require.True(t, releaseMemory(now))
	require.False(t, releaseMemory(now.Add(releaseGap-time.Second)))
	require.True(t, releaseMemory(now.Add(releaseGap)))
	require.Equal(t, int32(2), w.releases.Load())
}
