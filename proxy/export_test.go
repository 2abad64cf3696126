package proxy

// SetDefaultHTTP1 makes HTTP1Default stand for c in the transports made
// from now on: the suite runs once on each HTTP/1.1 client.
func SetDefaultHTTP1(c HTTP1Client) { defaultHTTP1 = c }

// DefaultHTTP1 returns what HTTP1Default stands for now.
func DefaultHTTP1() HTTP1Client { return defaultHTTP1 }

// DirectDials returns how many connections t's direct HTTP/1.1 client
// dialed; 0 when it has none.
func DirectDials(t *Transport) uint64 {
	if t.h1 == nil {
		return 0
	}
	return t.h1.Dials()
}

// SplitAdvance moves s's weighted counter on by one request, as a
// forward without a key does.
func SplitAdvance(s *Split) { s.next.Add(1) }
