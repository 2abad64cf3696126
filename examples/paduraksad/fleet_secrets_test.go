package main

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/paduraksa/paduraksa/fleet"
	"github.com/paduraksa/paduraksa/fleet/etcdtest"
	"github.com/paduraksa/paduraksa/secrets"
)

// etcdSecrets is what etcd holds at key.
func etcdSecrets(t *testing.T, c *clientv3.Client, key string) secrets.Keys {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, key)
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1, "no secrets at %s", key)
	k, err := secrets.Parse(resp.Kvs[0].Value)
	require.NoError(t, err)
	return k
}

// requireNotLogged checks that no key of ks is in logs, raw, in base64 or
// in hex.
func requireNotLogged(t *testing.T, logs string, ks ...secrets.Keys) {
	t.Helper()
	for _, k := range ks {
		for _, b := range [][]byte{k.Affinity, k.Ticket, k.PreviousTicket} {
			if b == nil {
				continue
			}
			for _, form := range []string{string(b), base64.StdEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b), hex.EncodeToString(b)} {
				require.NotContains(t, logs, form, "a secret is in the logs")
			}
		}
	}
}

// TestDaemonFleetSecrets: three daemons on one etcd share the secrets
// etcd holds. A sticky cookie set by A leads to the same destination on
// B and C, and a TLS session from A resumes on B and C. After a rotation
// of the ticket secret, installed by every instance without a restart, a
// session from before it still resumes on another instance; after a
// second one, a session two rotations old does not (so the rotations were
// installed), while one from between them does. One instance is elected
// to rotate, and no secret is ever logged.
func TestDaemonFleetSecrets(t *testing.T) {
	e := etcdtest.Start(t)
	c := e.Client()
	cfg, pool := stickyDoc(t)
	doc, err := os.ReadFile(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = c.Put(ctx, "/fleet-s/config", string(doc))
	require.NoError(t, err)
	var ds []*daemon
	for _, name := range []string{"a", "b", "c"} {
		ds = append(ds, startDaemon(t, "-etcd", e.Endpoint, "-etcd-prefix", "/fleet-s/", "-instance", name, "-https", "127.0.0.1:0"))
	}
	a, b, cc := ds[0], ds[1], ds[2]
	first := etcdSecrets(t, c, "/fleet-s/secrets")
	assert.Contains(t, a.logs.String(), "secrets created in etcd")
	for _, d := range ds[1:] {
		assert.Contains(t, d.logs.String(), "secrets read from etcd")
	}
	for _, d := range ds {
		assert.Contains(t, d.logs.String(), `msg="secrets read" etcd=`+e.Endpoint+" key=/fleet-s/secrets", "the log says where the secrets come from")
	}

	clients := make([]*stickyClient, 6)
	for i := range clients {
		clients[i] = &stickyClient{cache: tls.NewLRUClientSessionCache(4)}
		var resumed bool
		clients[i].dest, resumed = clients[i].visit(t, a.tlsAddr, pool)
		require.False(t, resumed)
		require.NotEmpty(t, clients[i].cookie, "A sets the affinity cookie")
	}
	for i, cl := range clients {
		for _, d := range []*daemon{b, cc} {
			dest, resumed := cl.visit(t, d.tlsAddr, pool)
			assert.Equal(t, cl.dest, dest, "client %d: the cookie A set leads to the same destination on %s", i, d.tlsAddr)
			assert.True(t, resumed, "client %d: the TLS session from A resumes on %s", i, d.tlsAddr)
		}
	}

	// One rotation, as the elected instance makes it, here at once.
	rot, err := fleet.NewSecrets(fleet.SecretsConfig{Client: c, Prefix: "/fleet-s/"})
	require.NoError(t, err)
	installed := func(n int) {
		t.Helper()
		for _, d := range ds {
			waitFor(t, "every instance to install the rotation", func() bool {
				return strings.Count(d.logs.String(), "ticket secret installed") >= n
			})
		}
	}
	second, err := rot.Rotate(ctx)
	require.NoError(t, err)
	installed(1)
	for i, cl := range clients[:3] {
		dest, resumed := cl.visit(t, b.tlsAddr, pool)
		assert.Equal(t, cl.dest, dest, "client %d", i)
		assert.True(t, resumed, "client %d: a session from before the rotation resumes on B after it", i)
	}
	third, err := rot.Rotate(ctx)
	require.NoError(t, err)
	installed(2)
	for i, cl := range clients[:3] {
		_, resumed := cl.visit(t, cc.tlsAddr, pool)
		assert.True(t, resumed, "client %d: a session sealed on B between the rotations resumes on C", i)
	}
	for i, cl := range clients[3:] {
		dest, resumed := cl.visit(t, a.tlsAddr, pool)
		assert.Equal(t, cl.dest, dest, "client %d: the affinity key is never rotated", i+3)
		assert.False(t, resumed, "client %d: a session two rotations old does not resume: the rotations were installed", i+3)
	}
	assert.Equal(t, first.Affinity, third.Affinity)
	assert.Equal(t, second.Ticket, third.PreviousTicket)

	waitFor(t, "an instance to be elected", func() bool {
		for _, d := range ds {
			if strings.Contains(d.logs.String(), "elected to rotate the ticket secret") {
				return true
			}
		}
		return false
	})
	var logs string
	for _, d := range ds {
		logs += d.logs.String() + d.out.String()
	}
	assert.Equal(t, 1, strings.Count(logs, "elected to rotate the ticket secret"), "one instance is elected")
	requireNotLogged(t, logs, first, second, third)
}

// TestDaemonFleetSecretsSeed: with -etcd and -secrets, an etcd without
// secrets is seeded from the file, so the gateway's sticky clients and
// tickets carry into the fleet; an instance with another file then takes
// etcd's secrets, not its file's, and says so.
func TestDaemonFleetSecretsSeed(t *testing.T) {
	e := etcdtest.Start(t)
	c := e.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.Put(ctx, "/paduraksa/config", "hosts:\n  - names: [app.test]\n    kind: fixed\n    fixed: {status: 200, body: ok}\n")
	require.NoError(t, err)
	dir := t.TempDir()
	fileA, fileB := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	keysA, err := secrets.Open(fileA)
	require.NoError(t, err)
	a := startDaemon(t, "-etcd", e.Endpoint, "-secrets", fileA, "-instance", "a", "-https", "off")
	inEtcd := etcdSecrets(t, c, "/paduraksa/secrets")
	assert.Equal(t, keysA.Affinity, inEtcd.Affinity)
	assert.Equal(t, keysA.Ticket, inEtcd.Ticket)
	assert.Contains(t, a.logs.String(), `from="the seed"`)

	b := startDaemon(t, "-etcd", e.Endpoint, "-secrets", fileB, "-instance", "b", "-https", "off")
	assert.Contains(t, b.logs.String(), "secrets read from etcd, not the seed")
	assert.Equal(t, inEtcd, etcdSecrets(t, c, "/paduraksa/secrets"), "the second file overwrote nothing")
	keysB, err := secrets.Open(fileB)
	require.NoError(t, err)
	requireNotLogged(t, a.logs.String()+b.logs.String(), keysA, keysB)
}

// TestDaemonTicketSecretRotationFlag: the rotation is daily by default,
// and a period too short is refused before the daemon serves, naming the
// flag and the field.
func TestDaemonTicketSecretRotationFlag(t *testing.T) {
	f, err := parseFlags([]string{"-etcd", "http://127.0.0.1:1"}, &syncBuffer{})
	require.NoError(t, err)
	assert.Equal(t, 24*time.Hour, f.ticketRotation)
	err = run(context.Background(), []string{"-listen", "127.0.0.1:0", "-https", "off", "-admin", "off", "-etcd", "http://127.0.0.1:1",
		"-ticket-secret-rotation", "10ms"}, options{stdout: &syncBuffer{}, stderr: &syncBuffer{}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-ticket-secret-rotation")
	assert.Contains(t, err.Error(), fleet.CodeRotationInvalid)
}
