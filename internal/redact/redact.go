package redact

import (
	"net/http"
	"strings"
)

// Shown is the value shown in place of a credential.
const Shown = "(redacted)"

// names are the credentials' full names, lower case.
var names = [...]string{"authorization", "proxy-authorization", "cookie", "set-cookie"}

// suffixes end the names of credentials, lower case.
var suffixes = [...]string{"-key", "-token", "-secret"}

// Name reports whether a header of this name carries a credential. It
// allocates nothing.
func Name(name string) bool {
	for _, n := range names {
		if strings.EqualFold(name, n) {
			return true
		}
	}
	for _, s := range suffixes {
		if len(name) > len(s) && strings.EqualFold(name[len(name)-len(s):], s) {
			return true
		}
	}
	return false
}

// Value returns [Shown] for a credential's header and value as it is for
// any other.
func Value(name, value string) string {
	if Name(name) {
		return Shown
	}
	return value
}

// Header returns h with every value of a credential's header replaced by
// [Shown]: a copy when h holds one, h itself when it holds none (nil for
// nil).
func Header(h http.Header) http.Header {
	out, copied := h, false
	for name, vs := range h {
		if !Name(name) {
			continue
		}
		if !copied {
			out, copied = h.Clone(), true
		}
		red := make([]string, len(vs))
		for i := range red {
			red[i] = Shown
		}
		out[name] = red
	}
	return out
}

// Pair is one header line: a name and its value.
type Pair struct {
	Name, Value string
}

// Pairs returns pairs with the value of every credential replaced by
// [Shown]: a copy when it holds one, pairs itself when it holds none.
func Pairs(pairs []Pair) []Pair {
	out, copied := pairs, false
	for i, p := range pairs {
		if !Name(p.Name) {
			continue
		}
		if !copied {
			out, copied = append([]Pair(nil), pairs...), true
		}
		out[i].Value = Shown
	}
	return out
}
