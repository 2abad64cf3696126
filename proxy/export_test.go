package proxy

// SetDefaultHTTP1 makes HTTP1Default stand for c in the transports made
// from now on: the suite runs once on each HTTP/1.1 client.
func SetDefaultHTTP1(c HTTP1Client) { defaultHTTP1 = c }

// DefaultHTTP1 returns what HTTP1Default stands for now.
func DefaultHTTP1() HTTP1Client { return defaultHTTP1 }
