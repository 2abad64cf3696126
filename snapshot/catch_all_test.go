package snapshot

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/paduraksa/paduraksa/tlsselect"
)

// catchAllDoc is app.test to an upstream and a catch-all fixed host, with
// the default certificate and the unknownSni fallback given.
func catchAllDoc(backendAddr, unknownSNI string) *config.Document {
	return &config.Document{
		Global:       config.Global{DefaultAnswer: &config.FixedAnswer{Status: 400, Body: "no such host\n"}, TLS: config.GlobalTLS{DefaultCertificate: "main", UnknownSNI: unknownSNI}},
		Certificates: []config.Certificate{{ID: "main", CertFile: "testdata/tls/cert.pem", KeyFile: "testdata/tls/key.pem"}},
		Hosts: []config.Host{
			{Names: []string{"app.test"}, Routes: []config.Route{{Upstream: "web"}}},
			{Names: []string{"*"}, Kind: "fixed", Fixed: &config.FixedAnswer{Body: "caught\n"}, TLS: &config.HostTLS{HTTP3: true}},
		},
		Upstreams: []config.Upstream{{ID: "web", Destinations: []config.Destination{{ID: "w", Address: "http://" + backendAddr}}}},
	}
}

// TestCatchAllOverTLS: the document's "*" host answers every name no
// other host has, over HTTPS with the default certificate (its
// handshakes are the unknown-SNI fallback's) and over plain HTTP; a Host
// header that names no host at all gets the default answer; with
// unknownSni refuse, a handshake for an unknown name is refused before
// the catch-all is reached.
func TestCatchAllOverTLS(t *testing.T) {
	b := startBackend(t, "web")
	addr, pub, store := tlsEdge(t, catchAllDoc(b.addr, ""))
	roots := tlsRoots(t)

	st, err := handshake(t, addr, "shop.test", roots, &tls.Config{InsecureSkipVerify: true})
	require.NoError(t, err)
	assert.Equal(t, int64(1), serial(st), "the default certificate")
	h2 := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "app.test"}, ForceAttemptHTTP2: true}
	t.Cleanup(h2.CloseIdleConnections)
	for _, url := range []string{"https://shop.test/", "https://app.test.example/x"} {
		res := tlsGet(t, h2, url, addr)
		assert.Equal(t, 200, res.StatusCode, url)
		assert.Equal(t, []string{gateDefaultAltSvc}, res.Header["Alt-Svc"], "the catch-all's http3")
	}
	srv := serve(t, store)
	for host, want := range map[string]string{"app.test": "web /", "shop.test": "caught\n", "192.0.2.7": "caught\n"} {
		assert.Equal(t, want, getBody(t, srv, host), host)
	}
	c, err := net.DialTimeout("tcp", srv, 10*time.Second)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = io.WriteString(c, "GET / HTTP/1.1\r\nHost: a..test\r\nConnection: close\r\n\r\n")
	require.NoError(t, err)
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	assert.Equal(t, 400, res.StatusCode)
	assert.Equal(t, "no such host\n", string(body), "a malformed name gets the default answer")

	_, err = pub.Apply(testContext(t), catchAllDoc(b.addr, "refuse"))
	require.NoError(t, err)
	_, err = handshake(t, addr, "shop.test", roots, &tls.Config{InsecureSkipVerify: true})
	assert.ErrorContains(t, err, "unrecognized name", "unknownSni refuse holds for the catch-all's names")
}

// TestCatchAllRefusals: at most one catch-all; it names no certificate of
// its own and asks for no client certificate, each refused with the
// owner's code at the document's path.
func TestCatchAllRefusals(t *testing.T) {
	doc := catchAllDoc("127.0.0.1:9", "")
	doc.Hosts = append(doc.Hosts,
		config.Host{Names: []string{"other.test", " * "}, Certificate: "main", Kind: "fixed", Fixed: &config.FixedAnswer{}},
		config.Host{Names: []string{"*"}, Kind: "fixed", Fixed: &config.FixedAnswer{}, TLS: &config.HostTLS{ClientAuth: "required", ClientCAs: "testdata/tls/cert.pem"}})
	assert.Equal(t, []string{
		tlsselect.CodeHostNameDuplicate + " hosts[2].names[1]", // the TLS table is built first; the gate's is the same path
		tlsselect.CodeHostCatchAllCertificate + " hosts[2].certificate",
		tlsselect.CodeHostNameDuplicate + " hosts[3].names[0]",
		tlsselect.CodeHostCatchAllClientAuth + " hosts[3].tls.clientAuth",
	}, problem.CodePaths(joinProblems(Validate(doc))))

	plain := &config.Document{Hosts: []config.Host{
		{Names: []string{"*"}, Kind: "fixed", Fixed: &config.FixedAnswer{}},
		{Names: []string{"*"}, Kind: "fixed", Fixed: &config.FixedAnswer{}},
	}}
	assert.Equal(t, []string{gate.CodeHostNameDuplicate + " hosts[1].names[0]"}, problem.CodePaths(joinProblems(Validate(plain))),
		"without TLS the gate says it")
}

// TestHTTPSPort: Alt-Svc and the HTTPS redirect name the compiler's
// HTTPS port (the listener's), global.httpsPort over it, a host's own
// over both; an invalid port is refused where it was given.
func TestHTTPSPort(t *testing.T) {
	doc := func(port int) *config.Document {
		return &config.Document{
			Global:       config.Global{HTTPSPort: port, TLS: config.GlobalTLS{DefaultCertificate: "main"}},
			Certificates: []config.Certificate{{ID: "main", CertFile: "testdata/tls/cert.pem", KeyFile: "testdata/tls/key.pem"}},
			Hosts: []config.Host{
				{Names: []string{"app.test"}, TLS: &config.HostTLS{HTTP3: true}, HTTPSRedirect: &config.HTTPSRedirect{}, Kind: "fixed", Fixed: &config.FixedAnswer{}},
				{Names: []string{"own.test"}, TLS: &config.HostTLS{HTTP3: true, AltSvc: `h3=":443"; ma=60`}, HTTPSRedirect: &config.HTTPSRedirect{Port: 443}, Kind: "fixed", Fixed: &config.FixedAnswer{}},
			},
		}
	}
	for _, tt := range []struct {
		compiler, doc int
		want          string
	}{{0, 0, "443"}, {8443, 0, "8443"}, {8443, 9443, "9443"}, {0, 9443, "9443"}} {
		c := &Compiler{HTTPSPort: tt.compiler}
		snap, err := c.Draft(doc(tt.doc))
		require.NoError(t, err)
		altSvc, loc := portAnswer(t, snap, "app.test")
		assert.Equal(t, `h3=":`+tt.want+`"; ma=86400`, altSvc, "%+v", tt)
		if tt.want == "443" {
			assert.Equal(t, "https://app.test/", loc, "%+v", tt)
		} else {
			assert.Equal(t, "https://app.test:"+tt.want+"/", loc, "%+v", tt)
		}
		altSvc, loc = portAnswer(t, snap, "own.test")
		assert.Equal(t, `h3=":443"; ma=60`, altSvc, "a host's own, %+v", tt)
		assert.Equal(t, "https://own.test/", loc, "a host's own, %+v", tt)
	}

	assert.Equal(t, []string{gate.CodeHTTPSPortInvalid + " global.httpsPort"}, problem.CodePaths(joinProblems(Validate(doc(70000)))))
	c := &Compiler{HTTPSPort: -1}
	ps := c.Check(doc(0))
	require.Len(t, ps, 1)
	assert.Equal(t, gate.CodeHTTPSPortInvalid, ps[0].Code)
	assert.Equal(t, "", ps[0].Path, "the compiler's, not the document's")
	assert.Contains(t, ps[0].Msg, "Compiler.HTTPSPort")
	assert.Empty(t, c.Check(doc(443)), "the document's port wins")
}

// TestHTTPSPortChangeCompilesHostsAgain: a compile whose HTTPS port is
// not the last one's reuses no compiled host, whose Alt-Svc and redirect
// took the old port.
func TestHTTPSPortChangeCompilesHostsAgain(t *testing.T) {
	d := &config.Document{Hosts: []config.Host{{Names: []string{"app.test"}, HTTPSRedirect: &config.HTTPSRedirect{}, Kind: "fixed", Fixed: &config.FixedAnswer{}}}}
	form, err := canonical(config.Form{}, d)
	require.NoError(t, err)
	c := &Compiler{HTTPSPort: 8443}
	prev, err := c.compile(d, form, nil, c.readFiles(d, nil))
	require.NoError(t, err)
	c.HTTPSPort = 9443
	next, err := c.compile(d, form, prev, c.readFiles(d, nil))
	require.NoError(t, err)
	_, loc := portAnswer(t, next, "app.test")
	assert.Equal(t, "https://app.test:9443/", loc)
}

// portAnswer returns the Alt-Svc of a TLS request to host and the Location of
// a plain one, as snap's gate answers them.
func portAnswer(t *testing.T, snap *Snapshot, host string) (altSvc, location string) {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "https://"+host+"/", nil)
	w := httptest.NewRecorder()
	snap.Gate().ServeHTTP(w, r)
	altSvc = w.Header().Get("Alt-Svc")
	r = httptest.NewRequest(http.MethodGet, "http://"+host+"/", nil)
	w = httptest.NewRecorder()
	snap.Gate().ServeHTTP(w, r)
	return altSvc, w.Header().Get("Location")
}

// getBody sends GET / with Host host to addr and returns the body.
func getBody(t *testing.T, addr, host string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(testContext(t), "GET", "http://"+addr+"/", nil)
	require.NoError(t, err)
	req.Host = host
	res, err := newClient(t).Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return string(b)
}
