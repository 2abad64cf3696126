package health

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/paduraksa/paduraksa/upstream"
)

type probeJob struct {
	r *round
	d *upstream.Destination
}

type round struct {
	cs   *clusterState
	s    *settings
	left atomic.Int64
}

// schedule starts a probing round for each cluster whose time has come,
// one round per cluster at a time. It sleeps until the next round is due
// or a poke (a finished round, an Update) says the times changed; its
// timer pokes it too.
func (m *Monitor) schedule(ctx context.Context) {
	defer m.wg.Done()
	t := m.clock.AfterFunc(time.Hour, m.poke)
	defer t.Stop()
	for {
		now := m.clock.Now()
		wait := time.Hour
		var due []*round
		m.mu.Lock()
		for _, cs := range m.clusters {
			s := cs.s.Load()
			if !s.active.enabled || cs.running {
				continue
			}
			if d := cs.next.Sub(now); d > 0 {
				wait = min(wait, d)
				continue
			}
			cs.running = true
			cs.next = now.Add(s.active.interval)
			wait = min(wait, s.active.interval)
			due = append(due, &round{cs: cs, s: s})
		}
		m.mu.Unlock()
		for _, r := range due {
			if !m.dispatch(ctx, r) {
				return
			}
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-m.wake:
		}
	}
}

func (m *Monitor) dispatch(ctx context.Context, r *round) bool {
	all := r.cs.c.Members().All
	if len(all) == 0 {
		m.finish(r)
		return true
	}
	r.left.Store(int64(len(all)))
	for _, d := range all {
		select {
		case m.jobs <- probeJob{r: r, d: d}:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

func (m *Monitor) finish(r *round) {
	m.mu.Lock()
	r.cs.running = false
	m.mu.Unlock()
	m.poke()
}

func (m *Monitor) work(ctx context.Context) {
	defer m.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-m.jobs:
			if !j.d.Draining() {
				// A draining destination is not probed: it takes no new
				// requests whatever a probe would say.
				m.probe(ctx, j)
			}
			if j.r.left.Add(-1) == 0 {
				m.finish(j.r)
			}
		}
	}
}

func (m *Monitor) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}
