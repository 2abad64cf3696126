package proxy

import (
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/paduraksa/paduraksa/internal/pct"
	"github.com/paduraksa/paduraksa/internal/problem"
)

// The rewrite's filters beside the prefix and the template: a replaced
// prefix (compiled onto the strip and the added prefix), a replaced path
// and the query's set, add and remove.

// QueryRewrite changes the forwarded query. Names are compared with the
// query's after percent-decoding ("+" is a space), as the gate's query
// matches compare them, and written percent-encoded (url.QueryEscape) as
// given; the other parameters keep their order and spelling. The zero
// value changes nothing.
type QueryRewrite struct {
	// Set gives each name one value: the first occurrence of the name
	// takes it in its place and later ones are removed; a name the query
	// lacks is added at the end. Names added go in name order.
	Set map[string]string
	// Add appends name=value at the end, after the ones Set appended,
	// in name order, whatever the query has of the name.
	Add map[string]string
	// Remove drops every occurrence of each name.
	Remove []string
}

// Bounds of a [QueryRewrite].
const (
	MaxQueryRules     = 32   // names in Set, Add and Remove together
	MaxQueryNameBytes = 256  // a name's bytes, as given
	MaxQueryValueLen  = 1024 // a value's bytes, as given
)

// checkFilters records the problems of a rewrite's replaced prefix,
// replaced path and query.
func checkFilters(errs *problem.List, rw Rewrite) {
	if p := rw.ReplacePrefix; p != "" {
		if t := strings.TrimSuffix(p, "/"); p[0] != '/' || (t != "" && !validAddPrefix(t)) {
			errs.Add(CodeRewriteReplacePrefixInvalid, "replacePrefix", quote(p)+": want / or /segments of URL path characters and valid escapes, no empty, . or .. segment, at most 256 bytes")
		}
		if rw.AddPrefix != "" || rw.Template != "" {
			errs.Add(CodeRewriteReplacePrefixConflict, "replacePrefix", "replacePrefix puts its path where the prefix was: it takes no addPrefix or template")
		}
	}
	if p := rw.Path; p != "" {
		if len(p) > 256 || p[0] != '/' || !validTemplatePath(p) {
			errs.Add(CodeRewritePathInvalid, "path", quote(p)+": want a path of URL path characters and valid escapes, starting with /, without empty, . or .. segments, at most 256 bytes")
		}
		if rw.StripPrefix != "" || rw.AddPrefix != "" || rw.ReplacePrefix != "" || rw.Template != "" {
			errs.Add(CodeRewritePathConflict, "path", "path replaces the whole path: it takes no stripPrefix, addPrefix, replacePrefix or template")
		}
	}
	q := &rw.Query
	if n := len(q.Set) + len(q.Add) + len(q.Remove); n > MaxQueryRules {
		errs.Add(CodeRewriteQueryTooMany, "query", strconv.Itoa(n)+" names; at most "+strconv.Itoa(MaxQueryRules))
	}
	seen := map[string]string{} // name -> the list that has it
	name := func(at, list, n string) {
		switch {
		case n == "" || len(n) > MaxQueryNameBytes:
			errs.Add(CodeRewriteQueryNameInvalid, at, quote(n)+": a name is 1-"+strconv.Itoa(MaxQueryNameBytes)+" bytes")
		case seen[n] != "":
			errs.Add(CodeRewriteQueryConflict, at, quote(n)+" is also in query."+seen[n]+": one operation per name")
		default:
			seen[n] = list
		}
	}
	for _, list := range [...]struct {
		k string
		m map[string]string
	}{{"set", q.Set}, {"add", q.Add}} {
		for _, n := range sortedKeys(list.m) {
			at := "query." + list.k + "[" + quote(n) + "]"
			name(at, list.k, n)
			if v := list.m[n]; len(v) > MaxQueryValueLen {
				errs.Add(CodeRewriteQueryValueInvalid, at, strconv.Itoa(len(v))+" bytes; a value is at most "+strconv.Itoa(MaxQueryValueLen))
			}
		}
	}
	for k, n := range q.Remove {
		name(problem.Index("query.remove", k), "remove", n)
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// compileFilters compiles the filters of a checked rewrite into r.
func (r *rewriter) compileFilters(rw Rewrite) {
	if p := rw.ReplacePrefix; p != "" {
		r.add = strings.TrimSuffix(p, "/")
	}
	r.path = rw.Path
	if r.path != "" {
		r.location = false
	}
	r.query = newQueryRewriter(rw.Query)
}

// queryRewriter is a compiled QueryRewrite.
type queryRewriter struct {
	active bool
	drop   []string    // Remove's names, decoded
	set    []queryPair // Set's, in name order
	add    string      // Add's pairs, encoded and joined with "&"
	extra  int         // bytes Set and Add may write
}

type queryPair struct {
	name string // decoded, as given
	pair string // "name=value", encoded
}

func newQueryRewriter(q QueryRewrite) queryRewriter {
	var qr queryRewriter
	for _, n := range sortedKeys(q.Set) {
		qr.set = append(qr.set, queryPair{name: n, pair: url.QueryEscape(n) + "=" + url.QueryEscape(q.Set[n])})
		qr.extra += 1 + len(qr.set[len(qr.set)-1].pair)
	}
	qr.drop = slices.Clone(q.Remove)
	var add []string
	for _, n := range sortedKeys(q.Add) {
		add = append(add, url.QueryEscape(n)+"="+url.QueryEscape(q.Add[n]))
	}
	qr.add = strings.Join(add, "&")
	qr.extra += 1 + len(qr.add)
	qr.active = len(qr.set) > 0 || len(qr.drop) > 0 || qr.add != ""
	return qr
}

// apply returns the query to forward for the client's raw query. It
// allocates only the query it returns, and nothing when nothing changes
// (no parameter to remove, none to set or add).
func (qr *queryRewriter) apply(raw string) string {
	if !qr.active {
		return raw
	}
	if len(qr.set) == 0 && qr.add == "" && !qr.touches(raw) {
		return raw
	}
	var b strings.Builder
	b.Grow(len(raw) + qr.extra)
	var done uint64 // Set's pairs written, by index (at most MaxQueryRules)
	sep := func() {
		if b.Len() > 0 {
			b.WriteByte('&')
		}
	}
	for rest := raw; rest != ""; {
		var pair string
		pair, rest, _ = strings.Cut(rest, "&")
		k, _, _ := strings.Cut(pair, "=")
		if slices.ContainsFunc(qr.drop, func(n string) bool { return pct.Equal(k, n) }) {
			continue
		}
		if i := slices.IndexFunc(qr.set, func(p queryPair) bool { return pct.Equal(k, p.name) }); i >= 0 {
			if done&(1<<i) == 0 {
				done |= 1 << i
				sep()
				b.WriteString(qr.set[i].pair)
			}
			continue
		}
		sep()
		b.WriteString(pair)
	}
	for i, p := range qr.set {
		if done&(1<<i) == 0 {
			sep()
			b.WriteString(p.pair)
		}
	}
	if qr.add != "" {
		sep()
		b.WriteString(qr.add)
	}
	return b.String()
}

// touches reports whether raw has a parameter the rewriter removes.
func (qr *queryRewriter) touches(raw string) bool {
	for rest := raw; rest != ""; {
		var pair string
		pair, rest, _ = strings.Cut(rest, "&")
		k, _, _ := strings.Cut(pair, "=")
		for _, n := range qr.drop {
			if pct.Equal(k, n) {
				return true
			}
		}
	}
	return false
}

// rewriteQuery puts the route's query rewrite on the outgoing request.
func (r *rewriter) rewriteQuery(f *forward) {
	if r.query.active {
		f.o.url.RawQuery = r.query.apply(f.r.URL.RawQuery)
	}
}
