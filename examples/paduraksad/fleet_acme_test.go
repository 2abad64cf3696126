package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/fleet/etcdtest"
	"github.com/paduraksa/paduraksa/internal/pebbletest"
	"github.com/paduraksa/paduraksa/tlsselect"
)

// TestDaemonFleetACME: three daemons sharing etcd (-etcd with
// -acme-directory) and one document with an acme certificate order it
// from pebble once: the CA's HTTP-01 requests, held by the balancer
// until all three run, are sent to a daemon that did not order, which
// answers from the token the ordering one shared in etcd; then all three
// serve the certificate over HTTPS without a restart.
func TestDaemonFleetACME(t *testing.T) {
	const prefix = "/fleet-acme/"
	names := []string{"shop.fleet.test", "www.shop.fleet.test"}
	e := etcdtest.Start(t)

	// The balancer in front of the three plain HTTP listeners holds the
	// CA's connections until the three run, then sends them to a daemon
	// whose log says it ordered nothing.
	var ds []*daemon
	ordered := func(d *daemon) bool { return strings.Contains(d.logs.String(), `msg="tlsselect: acme: ordering"`) }
	front := startRelay(t)
	pebble := pebbletest.Start(t, pebbletest.Options{HTTPPort: front.port})

	dir := t.TempDir()
	doc, _ := acmeShopDocument(t, dir, names)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := e.Client().Put(ctx, prefix+"config", doc)
	require.NoError(t, err)

	for _, name := range []string{"a", "b", "c"} {
		d := startDaemon(t, "-etcd", e.Endpoint, "-etcd-prefix", prefix, "-instance", name, "-https", "127.0.0.1:0",
			"-acme-directory", pebble.Directory, "-acme-ca", pebble.TLSRootsFile, "-acme-email", "hostmaster@fleet.test",
			"-acme-cache", filepath.Join(dir, "unused-"+name))
		ds = append(ds, d)
		assert.Contains(t, d.logs.String(), "-acme-cache not used")
	}
	waitFor(t, "the order", func() bool { return pebble.NewOrders() == 1 })
	var holder, target *daemon
	for _, d := range ds {
		if ordered(d) {
			holder = d
		} else if target == nil {
			target = d
		}
	}
	require.NotNil(t, holder, "one daemon ordered")
	require.NotNil(t, target)
	front.forward(target.addr)

	served := regexp.MustCompile(`(?s)msg="acme certificate ready" certificate=shop.*msg="config applied"`)
	var leaf *x509.Certificate
	for i, d := range ds {
		waitFor(t, "the acme certificate served", func() bool { return served.MatchString(d.logs.String()) })
		got, err := handshake(d.tlsAddr, &tls.Config{ServerName: names[0], RootCAs: pebble.Issuer})
		require.NoError(t, err, "daemon %d: a client that trusts pebble's root", i)
		assert.Equal(t, names, got.DNSNames)
		if leaf == nil {
			leaf = got
		}
		assert.True(t, leaf.Equal(got), "daemon %d serves the one certificate", i)
	}
	assert.Equal(t, 1, pebble.NewOrders(), "one order for the fleet")
	var orders int
	for _, d := range ds {
		orders += strings.Count(d.logs.String(), `msg="tlsselect: acme: ordering"`)
	}
	assert.Equal(t, 1, orders)
	// The validations were answered by the daemon the balancer chose,
	// which did not order; the holder answered none.
	assert.Contains(t, target.logs.String(), "/.well-known/acme-challenge/")
	assert.NotContains(t, holder.logs.String(), "/.well-known/acme-challenge/")
	for _, d := range ds {
		if d != holder {
			assert.Contains(t, d.logs.String(), "tlsselect: acme: certificate taken from the storage")
		}
	}

	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pebble.Issuer}, DialContext: dialAlways(target.tlsAddr)}
	t.Cleanup(tr.CloseIdleConnections)
	res, body := fetch(t, tr, "https://"+names[1]+"/")
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "shop upstream", body)
}

// acmeShopDocument is a document whose host names, served by an upstream
// answering "shop upstream", have the acme certificate shop, and a
// default certificate, fallback, written in dir, until it is there.
func acmeShopDocument(t *testing.T, dir string, names []string) (string, tls.Certificate) {
	t.Helper()
	fallback, err := tlsselect.SelfSigned(30*24*time.Hour, "fallback.test")
	require.NoError(t, err)
	certFile, keyFile := writeKeyPair(t, dir, "fallback", fallback)
	up := upstreamServer(t, "shop upstream")
	return `
global: {tls: {defaultCertificate: fallback}}
certificates:
  - {id: fallback, certFile: ` + certFile + `, keyFile: ` + keyFile + `}
  - {id: shop, acme: true}
hosts:
  - {names: [` + strings.Join(names, ", ") + `], certificate: shop, routes: [{upstream: u}]}
upstreams:
  - {id: u, destinations: [{id: d, address: "http://` + up + `"}]}
`, fallback
}
