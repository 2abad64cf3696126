package snapshot

import (
	"sync"

	"github.com/paduraksa/paduraksa/proxy"
)

// transports keeps one proxy transport per cluster ID across publishes: a
// cluster whose ClientConfig is unchanged keeps its transport and its
// pooled connections. A compile builds the set of its snapshot with next,
// and commit installs it. The zero value is ready to use.
type transports struct {
	mu  sync.Mutex
	cur map[string]*transportEntry
}

type transportEntry struct {
	cfg proxy.ClientConfig
	t   *proxy.Transport
}

// transportPlan is the transport set of one compile, not yet installed.
type transportPlan struct {
	ts   *transports
	next map[string]*transportEntry
}

// next starts the transport set of a compile.
func (ts *transports) next() *transportPlan {
	ts.mu.Lock()
	n := len(ts.cur)
	ts.mu.Unlock()
	return &transportPlan{ts: ts, next: make(map[string]*transportEntry, n)}
}

// get returns the transport for a cluster: the current one when its
// settings are unchanged, else a new one.
func (p *transportPlan) get(clusterID string, cfg proxy.ClientConfig) *proxy.Transport {
	if e := p.next[clusterID]; e != nil && e.cfg == cfg {
		return e.t
	}
	p.ts.mu.Lock()
	e := p.ts.cur[clusterID]
	p.ts.mu.Unlock()
	if e == nil || e.cfg != cfg {
		e = &transportEntry{cfg: cfg, t: proxy.NewTransport(cfg)}
	}
	p.next[clusterID] = e
	return e.t
}

// commit installs the plan. Transports no longer used close their idle
// connections; requests still using them finish.
func (p *transportPlan) commit() {
	p.ts.mu.Lock()
	old := p.ts.cur
	p.ts.cur = p.next
	p.ts.mu.Unlock()
	for id, e := range old {
		if n := p.next[id]; n == nil || n.t != e.t {
			e.t.CloseIdleConnections()
		}
	}
}
