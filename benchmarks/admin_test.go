package main

import (
	"encoding/json"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFlagDetection: the daemon's capabilities come from its -h, so a
// build with -https and -admin gets the TLS, HTTP/3 and PUT /config rows
// and one without them says why they are missing.
func TestFlagDetection(t *testing.T) {
	help := "Usage of paduraksad:\n  -admin string\n    \taddress of the admin API\n  -https string\n" +
		"    \taddress to serve HTTPS on\n  -max-conns-per-ip int\n    \tconcurrent connections (default 256)\n"
	flags := map[string]bool{}
	for _, m := range flagLine.FindAllStringSubmatch(help, -1) {
		flags[m[1]] = true
	}
	require.Equal(t, map[string]bool{"admin": true, "https": true, "max-conns-per-ip": true}, flags)

	with := &peer{kind: kindDaemon, flags: flags}
	require.Empty(t, with.lacks(featTLS))
	require.Empty(t, with.lacks(featH3))
	rs := with.reloaders()
	require.Equal(t, "PUT /config", rs[len(rs)-1].name)
	require.Empty(t, rs[len(rs)-1].na)

	without := &peer{kind: kindDaemon, flags: map[string]bool{}}
	require.Equal(t, "not available in this build (no -https)", without.lacks(featH3))
	rs = without.reloaders()
	require.Equal(t, "not available in this build (no -admin)", rs[len(rs)-1].na)
}

// TestPutConfig sends the daemon's document to a stand-in admin API the
// way the apply, churn and streams rows do: the document as JSON with
// PUT /config; a 200 is accepted, a refusal (4xx) is an error that quotes
// the answer.
func TestPutConfig(t *testing.T) {
	ip := "127." + strconv.Itoa(100+rand.IntN(100)) + "." + strconv.Itoa(rand.IntN(250)) + ".7"
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(adminPort)))
	require.NoError(t, err)
	type call struct {
		method, path, ctype string
		doc                 map[string]any
	}
	calls := make(chan call, 4)
	refuse := make(chan bool, 4)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var doc map[string]any
		body, _ := io.ReadAll(r.Body)
		err := json.Unmarshal(body, &doc)
		calls <- call{r.Method, r.URL.Path, r.Header.Get("Content-Type"), doc}
		if err != nil || <-refuse {
			w.WriteHeader(http.StatusUnprocessableEntity)
			io.WriteString(w, `{"status":"refused","errors":[{"code":"unknown_upstream"}]}`)
			return
		}
		io.WriteString(w, `{"status":"applied","revision":2}`)
	}), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()

	p, c := templatePeer(t, kindDaemon)
	p.ip, p.flags = ip, map[string]bool{"admin": true}
	p.s.adminClient = &http.Client{Transport: tr, Timeout: 10 * time.Second}
	rl := p.reloaders()[3]
	require.Equal(t, "PUT /config", rl.name)

	wait := func() call {
		t.Helper()
		select {
		case got := <-calls:
			return got
		case <-time.After(10 * time.Second):
			t.Fatal("the admin API was not called")
			return call{}
		}
	}
	refuse <- false
	require.NoError(t, rl.apply(c.withHosts(2, "new.test")))
	got := wait()
	require.Equal(t, "PUT", got.method)
	require.Equal(t, "/config", got.path)
	require.Equal(t, "application/json", got.ctype)
	require.Len(t, got.doc["hosts"], 1+3+len(policies)+1, "the document rendered for the new config, as JSON")
	require.Equal(t, "new.test", p.conf.Hosts[len(p.conf.Hosts)-1].Name)

	refuse <- true
	err = rl.apply(c)
	require.ErrorContains(t, err, "422")
	require.ErrorContains(t, err, "unknown_upstream")
	wait()
}
