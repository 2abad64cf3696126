package balance

import "net/textproto"

// KeyHash hashes a request's key: a header's first value, a cookie's
// value or the resolved client address, as a [HashConfig] names it. It is
// the hash [ConsistentHash] places keys by, and the proxy's sticky splits
// place keys on a side by: deterministic (FNV-1a and a finaliser, not
// seeded per process), so every gateway replica and every publish maps a
// key alike. Make it with [NewKeyHash]; the zero KeyHash hashes the client
// address. It is immutable and safe for concurrent use.
type KeyHash struct {
	cfg   HashConfig
	canon string // canonical header name
}

// NewKeyHash returns the key hash of c, or the validation errors of c
// joined.
func NewKeyHash(c HashConfig) (KeyHash, error) {
	if err := c.Validate(); err != nil {
		return KeyHash{}, err
	}
	k := KeyHash{cfg: c}
	if c.Source == HashHeader {
		k.canon = textproto.CanonicalMIMEHeaderKey(c.Name)
	}
	return k, nil
}

// Hash returns the hash of in's key, and false when in has none (no such
// header or cookie, an empty value, no valid client address). It allocates
// nothing.
func (k KeyHash) Hash(in Input) (uint64, bool) {
	switch k.cfg.Source {
	case HashHeader:
		if in.Request == nil {
			return 0, false
		}
		v := in.Request.Header[k.canon]
		if len(v) == 0 || v[0] == "" {
			return 0, false
		}
		return hashString(v[0]), true
	case HashCookie:
		if in.Request == nil {
			return 0, false
		}
		v, ok := cookieValue(in.Request.Header["Cookie"], k.cfg.Name)
		if !ok || v == "" {
			return 0, false
		}
		return hashString(v), true
	}
	if !in.Client.IsValid() {
		return 0, false
	}
	b := in.Client.Unmap().As16()
	h := uint64(fnvOffset)
	for _, c := range b {
		h = (h ^ uint64(c)) * fnvPrime
	}
	return mix(h), true
}

// CookieValue returns the value of the first valid cookie called name in
// the Cookie header lines, by the rules of [net/http.Request.Cookie], and
// whether there is one, without allocating. name must be a valid token.
func CookieValue(lines []string, name string) (string, bool) { return cookieValue(lines, name) }
