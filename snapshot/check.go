package snapshot

import (
	"crypto/x509"
	"strconv"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/internal/problem"
)

// run is one compile of a document: the problems and warnings found so far.
// What the document owns (its values, IDs, references, which blocks go
// together) is checked by package config's checker, part by part as the
// compile reaches them; everything else is mapped onto the owning
// package's config, whose problems come back with their own codes under
// the document's path.
type run struct {
	c     *Compiler
	doc   *config.Document
	check *config.Checker // appends to probs
	files *fileSet        // the files doc names, read ahead
	probs problem.List
	warns problem.List
	// hostCAs are the client CA roots read for each document host (by
	// index), for the TLS table and the gate's per-request re-check
	// alike.
	hostCAs [][]*x509.Certificate
	// keptClusters: the snapshot has the applied one's clusters, every
	// upstream unchanged.
	keptClusters bool
}

// add records a document-level problem. Paths and messages are built by
// the callers only once a problem is found, so a valid document costs no
// string building.
func (r *run) add(code, path, msg string) { r.probs.Add(code, path, msg) }

// under records the problems of a package's config, mapped onto the
// document: each path is renamed by rename (nil: as it is) and put after
// prefix. An error without problems is recorded as compile.internal.
func (r *run) under(prefix string, err error, rename func(string) string) {
	under(&r.probs, prefix, err, rename)
}

func under(l *problem.List, prefix string, err error, rename func(string) string) {
	if err == nil {
		return
	}
	if rename == nil {
		l.Under(prefix, CodeCompileInternal, err)
		return
	}
	var inner problem.List
	inner.Under("", CodeCompileInternal, err)
	for _, p := range inner {
		*l = append(*l, &ValidationError{Code: p.Code, Path: problem.Join(prefix, rename(p.Path)), Msg: p.Msg})
	}
}

// newRun starts the compile of doc.
func newRun(c *Compiler, doc *config.Document, files *fileSet) *run {
	r := &run{c: c, doc: doc, files: files}
	r.check = config.NewCheckerSince(c.checker, doc, (*[]*ValidationError)(&r.probs))
	c.checker = r.check
	return r
}

// duration returns the value of a document duration, which the checker
// checks: 0, the owner's default, when it is not one.
func duration(d config.Duration) time.Duration { return config.DurationOf(d) }

// name maps a document name onto the owner's value with the owner's
// Parse, recording the owner's code when it has no such name; empty is
// the zero value, the default.
func name[T any](r *run, path func() string, s string, parse func(string) (T, bool), names []string, code string) T {
	var zero T
	if s == "" {
		return zero
	}
	v, ok := parse(s)
	if !ok {
		r.add(code, path(), "unknown name "+quote(s)+" (want "+strings.Join(names, ", ")+")")
		return zero
	}
	return v
}

// renameHead replaces the first segment of a path when it is from: p's
// text up to the next ".", "[" or its end.
func renameHead(p, from, to string) string {
	rest, ok := strings.CutPrefix(p, from)
	if !ok || (rest != "" && rest[0] != '.' && rest[0] != '[') {
		return p
	}
	return to + rest
}

// renameLast replaces the last segment of a path when it is from.
func renameLast(p, from, to string) string {
	head, ok := strings.CutSuffix(p, from)
	if !ok || (head != "" && !strings.HasSuffix(head, ".")) {
		return p
	}
	return head + to
}

// headerPath maps a path in the proxy's header rule lists onto the
// document's headers block.
func headerPath(p string) string {
	p = renameHead(p, "requestHeaders", "headers.request")
	p = renameHead(p, "responseHeaders", "headers.response")
	return renameLast(p, "op", "operation")
}

func index(list string, i int) string { return problem.Index(list, i) }

func quote(s string) string { return strconv.Quote(s) }

func hostPath(i int, rest string) string { return index("hosts", i) + rest }

func routePath(i, j int, rest string) string {
	return index("hosts", i) + index(".routes", j) + rest
}

func upPath(i int, rest string) string { return index("upstreams", i) + rest }
