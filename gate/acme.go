package gate

import (
	"net/http"
	"strings"

	"github.com/paduraksa/paduraksa/internal/cowmap"
)

// ChallengeStore holds the ACME HTTP-01 key authorizations a certificate
// manager publishes. Reads are one atomic load and a map lookup on a
// substring of the request path (no allocation); writes copy the map, which
// is fine for the handful of pending challenges. The zero value is ready to
// use; a ChallengeStore is safe for concurrent use and outlives gates.
type ChallengeStore struct {
	m cowmap.Map[string, *Page]
}

// Set publishes the key authorization for token.
func (s *ChallengeStore) Set(token, keyAuth string) {
	s.m.Store(token, NewPage(http.StatusOK, "text/plain", []byte(keyAuth), nil))
}

// Delete withdraws token.
func (s *ChallengeStore) Delete(token string) { s.m.Delete(token) }

// lookup returns the page for token, or nil.
func (s *ChallengeStore) lookup(token string) *Page {
	if s == nil {
		return nil
	}
	p, _ := s.m.Load(token)
	return p
}

// Len returns the number of published tokens.
func (s *ChallengeStore) Len() int { return s.m.Len() }

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
