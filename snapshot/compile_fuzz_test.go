package snapshot

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/health"
)

// FuzzCompile compiles any document that decodes with a health monitor,
// so the health blocks are checked by the health package too. A refused
// document lists only problems with a documented code and a path that
// names a value of the document, never CodeCompileInternal (a problem
// validation let through); a compiled one is accepted by the monitor it
// was checked against, and its gate answers every configured host name
// with that host and any other name with the default answer.
func FuzzCompile(f *testing.F) {
	seeds, _ := filepath.Glob("../config/testdata/*.json")
	yamls, _ := filepath.Glob("../config/testdata/*.yaml")
	for _, p := range append(seeds, yamls...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	b, _ := json.Marshal(fleet(3, &backend{addr: "127.0.0.1:9"}))
	f.Add(b)
	for _, s := range []string{
		`{"hosts":[{"names":["*.a.test","A.TEST."],"routes":[{"path":"/x/","upstream":"u"}]}],"upstreams":[{"id":"u","destinations":[{"id":"d","address":"https://[::1]"}],"http":{"version":"2","tls":{"trust":"pinned","pins":["AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="]}}}]}`,
		`{"global":{"defaultAnswer":{"status":410}},"hosts":[{"names":["[::FFFF:192.0.2.1]","2001:db8::1"],"kind":"fixed","fixed":{}}]}`,
		`{"upstreams":[{"id":"u","health":{"passive":{"enabled":true,"failureRate":1}}}]}`,
		`{"upstreams":[{"id":"u","health":{"passive":{"enabled":true,"window":"1ms","reactivationPeriod":"1s"}}}]}`,
		`{"upstreams":[{"id":"u","health":{"active":{"enabled":true,"interval":"1s"}}}]}`,
		`{"upstreams":[{"id":"u","metadata":{"ConsecutiveFailuresHealthPolicy.Threshold":"x","TransportFailureRateHealthPolicy.RateLimit":"2"}}]}`,
		`{"upstreams":[{"id":"u","metadata":{"ConsecutiveFailuresHealthPolicy.Threshold":"x"},"health":{"active":{"threshold":3}}}]}`,
	} {
		f.Add([]byte(s))
	}
	known := knownCodes(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := config.Decode(data)
		if err != nil {
			return
		}
		mon := health.New(health.Options{})
		defer mon.Close()
		c := Compiler{Health: mon}
		snap, err := c.compileDocument(doc)
		if err != nil {
			probs := strictProblems(t, err)
			if len(probs) == 0 {
				t.Fatalf("refused without a problem: %v", err)
			}
			for _, p := range probs {
				if p.Code == CodeCompileInternal {
					t.Fatalf("validation let through a document the compiler cannot build: %v", p)
				}
				if !known[p.Code] {
					t.Errorf("undocumented code in %v", p)
				}
				if !namesValue(doc, p.Path) {
					t.Errorf("the path of %v names no value of the document", p)
				}
			}
			return
		}
		for _, w := range snap.Warnings() {
			if w.Code == "" || !namesValue(doc, w.Path) {
				t.Errorf("warning without a code or a path into the document: %v", w)
			}
		}
		snap.commit()
		if err := c.startHealth(snap, nil); err != nil {
			t.Fatalf("the monitor refuses what it validated: %v", err)
		}
		checkHosts(t, doc, snap)
	})
}

// checkHosts sends a request for every name of every host through the
// snapshot's gate (simulated: nothing is forwarded) and checks that the
// gate finds a host, and that a name no host has gets the default answer.
func checkHosts(t *testing.T, doc *config.Document, snap *Snapshot) {
	t.Helper()
	lookup := func(host string) (gate.HostMatch, int) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Host = host
		var match gate.HostMatch
		w := httptest.NewRecorder()
		snap.Gate().Simulate(w, r, &gate.Tracer{OnStep: func(s gate.Step) {
			if s.Kind == gate.StepHost {
				match = s.Match
			}
		}})
		return match, w.Code
	}
	const probe = "fuzz-probe"
	var names []string
	for _, h := range doc.Hosts {
		for _, n := range h.Names {
			canon, wildcard, err := gate.CanonicalHostName(n)
			if err != nil {
				t.Fatalf("validation accepted the host name %q: %v", n, err)
			}
			names = append(names, canon)
			host := canon
			if wildcard {
				host = probe + canon[1:]
			} else if strings.Contains(canon, ":") {
				host = "[" + canon + "]"
			}
			if match, _ := lookup(host); match == gate.HostUnknown {
				t.Errorf("Host %q (name %q) finds no host", host, n)
			}
		}
	}
	unknown := probe + ".unknown.test"
	for _, n := range names {
		if n == unknown || strings.HasPrefix(n, "*.") && strings.HasSuffix(unknown, n[1:]) {
			return // a name covers it
		}
	}
	want := 404
	if a := doc.Global.DefaultAnswer; a != nil && a.Status != 0 {
		want = a.Status
	}
	if match, status := lookup(unknown); match != gate.HostUnknown || status != want {
		t.Errorf("Host %q: %v, status %d; want unknown, %d", unknown, match, status, want)
	}
}

// namesValue reports whether path ("upstreams[2].metadata.zone",
// `hosts[0].headers["x y"]`) names a value present in doc, reading field
// names as JSON spells them.
func namesValue(doc *config.Document, path string) bool {
	v := reflect.ValueOf(doc).Elem()
	for path != "" {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return false
			}
			v = v.Elem()
		}
		var seg string
		switch {
		case strings.HasPrefix(path, `["`):
			end := strings.Index(path, `"]`)
			if end < 0 {
				return false
			}
			key, err := strconv.Unquote(path[1 : end+1])
			if err != nil || v.Kind() != reflect.Map || !v.MapIndex(reflect.ValueOf(key)).IsValid() {
				return false
			}
			v, path = v.MapIndex(reflect.ValueOf(key)), path[end+2:]
			continue
		case path[0] == '[':
			end := strings.IndexByte(path, ']')
			i, err := strconv.Atoi(path[1:max(end, 1)])
			if end < 0 || err != nil || v.Kind() != reflect.Slice || i < 0 || i >= v.Len() {
				return false
			}
			v, path = v.Index(i), path[end+1:]
			continue
		case path[0] == '.':
			path = path[1:]
		}
		end := strings.IndexAny(path, ".[")
		if end < 0 {
			end = len(path)
		}
		seg, path = path[:end], path[end:]
		switch v.Kind() {
		case reflect.Map:
			if v = v.MapIndex(reflect.ValueOf(seg)); !v.IsValid() {
				return false
			}
		case reflect.Struct:
			f, ok := jsonFieldOf(v.Type(), seg)
			if !ok {
				return false
			}
			v = v.FieldByIndex(f.Index)
		default:
			return false
		}
	}
	return true
}

// jsonFieldOf finds the field of struct t that JSON calls name.
func jsonFieldOf(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}
