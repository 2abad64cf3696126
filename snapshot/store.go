package snapshot

import (
	"net/http"
	"sync/atomic"

	"github.com/paduraksa/paduraksa/tlsselect"
)

// Store holds the current snapshot behind one atomic pointer. Readers load
// it once per request and never lock. The zero value holds no snapshot and
// answers 503 until the first publish.
//
// Its Selector serves the current snapshot's TLS table to handshakes, on
// TCP and QUIC: a handshake reads the table once, as a request reads the
// snapshot. A publisher swaps the table right after the snapshot.
type Store struct {
	cur atomic.Pointer[Snapshot]
	tls tlsselect.Selector
}

// TLS returns the selector of the current snapshot's TLS table: pass
// TLS().TLSConfig() and TLS().QUICConfig() to the listeners.
func (s *Store) TLS() *tlsselect.Selector { return &s.tls }

// swap makes snap current.
func (s *Store) swap(snap *Snapshot) {
	s.cur.Store(snap)
	s.tls.Swap(snap.tls)
}

// Load returns the current snapshot, or nil before the first publish.
func (s *Store) Load() *Snapshot { return s.cur.Load() }

// ServeHTTP reads the current snapshot once and lets its gate decide: every
// decision of the request, down to the forwarder, comes from that snapshot.
func (s *Store) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	snap := s.cur.Load()
	if snap == nil {
		noSnapshot(w)
		return
	}
	snap.gate.ServeHTTP(w, r)
}

// noSnapshot answers a request that has no config to be decided by.
func noSnapshot(w http.ResponseWriter) {
	w.Header()["Content-Type"] = []string{"text/plain; charset=utf-8"}
	w.WriteHeader(http.StatusServiceUnavailable)
	w.Write([]byte("no configuration yet\n"))
}
