package proxy

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type closeCounter struct{ n int }

func (c *closeCounter) Close() error { c.n++; return nil }

// TestIdleTimerResetsAndFires runs the idle timer on synctest's clock:
// activity every tenth of the timeout keeps it from firing for many
// timeouts, and then it fires exactly one timeout after the last activity,
// closes what it guards once, and stop reports the cut.
func TestIdleTimerResetsAndFires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const idle = time.Second
		var it idleTimer
		it.init()
		body := new(closeCounter)
		it.start(idle, nil)
		it.setBody(body)
		for range 50 {
			time.Sleep(idle / 10)
			it.touch()
		}
		synctest.Wait()
		require.False(t, it.hasFired(), "activity re-arms the timer")
		time.Sleep(idle - time.Nanosecond)
		synctest.Wait()
		require.False(t, it.hasFired(), "not before a whole timeout of quiet")
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		require.True(t, it.hasFired())
		assert.Equal(t, 1, body.n, "the cut closes the upstream body")
		assert.True(t, it.stop())
		time.Sleep(10 * idle)
		synctest.Wait()
		assert.Equal(t, 1, body.n, "nothing runs after stop")
	})
}
