package gate

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// ChallengeStore holds the ACME HTTP-01 key authorizations a certificate
// manager publishes. Reads are one atomic load and a map lookup on a
// substring of the request path (no allocation); writes copy the map, which
// is fine for the handful of pending challenges. The zero value is ready to
// use; a ChallengeStore is safe for concurrent use and outlives gates.
type ChallengeStore struct {
	mu sync.Mutex
	m  atomic.Pointer[map[string]*Page]
}

// Set publishes the key authorization for token.
func (s *ChallengeStore) Set(token, keyAuth string) {
	s.update(func(m map[string]*Page) {
		m[token] = NewPage(http.StatusOK, "text/plain", []byte(keyAuth), nil)
	})
}

// Delete withdraws token.
func (s *ChallengeStore) Delete(token string) {
	s.update(func(m map[string]*Page) { delete(m, token) })
}

func (s *ChallengeStore) update(f func(map[string]*Page)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := map[string]*Page{}
	if old := s.m.Load(); old != nil {
		for k, v := range *old {
			next[k] = v
		}
	}
	f(next)
	s.m.Store(&next)
}

// lookup returns the page for token, or nil.
func (s *ChallengeStore) lookup(token string) *Page {
	if s == nil {
		return nil
	}
	m := s.m.Load()
	if m == nil {
		return nil
	}
	return (*m)[token]
}

// Len returns the number of published tokens.
func (s *ChallengeStore) Len() int {
	if m := s.m.Load(); m != nil {
		return len(*m)
	}
	return 0
}

const acmePrefix = "/.well-known/acme-challenge/"

// acmeToken returns the token of an ACME HTTP-01 request, or "".
func acmeToken(r *http.Request) string {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return ""
	}
	p := r.URL.Path
	if !strings.HasPrefix(p, acmePrefix) {
		return ""
	}
	t := p[len(acmePrefix):]
	if t == "" || strings.IndexByte(t, '/') >= 0 {
		return ""
	}
	return t
}
