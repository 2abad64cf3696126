package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/fleet/etcdtest"
)

// fixedDoc is a document whose one host, app.test, answers body.
func fixedDoc(body string) string {
	return "hosts:\n  - names: [app.test]\n    kind: fixed\n    fixed: {status: 200, body: " + body + "}\n"
}

// TestDaemonFleetOneDocument: three daemons started with -etcd serve the
// one document in etcd, each change of it, and a push to any one's
// admin API, which is saved in etcd; a refused document leaves all three
// on the old one.
func TestDaemonFleetOneDocument(t *testing.T) {
	e := etcdtest.Start(t)
	c := e.Client()
	put := func(doc string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := c.Put(ctx, "/fleet-a/config", doc)
		require.NoError(t, err)
	}
	put(fixedDoc("one"))
	var ds []*daemon
	for _, name := range []string{"a", "b", "c"} {
		ds = append(ds, startDaemon(t, "-etcd", e.Endpoint, "-etcd-prefix", "/fleet-a/", "-instance", name, "-https", "off"))
	}
	serveAll := func(want string) {
		t.Helper()
		for _, d := range ds {
			waitFor(t, "every instance to serve "+want, func() bool { _, body := d.get(t, "app.test", "/"); return body == want })
		}
	}
	serveAll("one")
	assert.Contains(t, ds[1].logs.String(), "instance=b")
	assert.Contains(t, ds[1].logs.String(), "config=\"etcd "+e.Endpoint+" /fleet-a/config\"")

	put(fixedDoc("two"))
	serveAll("two")

	put("hosts:\n  - names: [app.test]\n    bogus: 1\n")
	for _, d := range ds {
		waitFor(t, "the refusal logged", func() bool { return strings.Contains(d.logs.String(), "config from etcd refused") })
		_, body := d.get(t, "app.test", "/")
		assert.Equal(t, "two", body)
	}

	status, res := ds[2].push(t, fixedDoc("pushed"))
	require.Equal(t, http.StatusOK, status, "%+v", res)
	assert.True(t, res.Persisted)
	serveAll("pushed")
	gctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := c.Get(gctx, "/fleet-a/config")
	require.NoError(t, err)
	require.Len(t, got.Kvs, 1)
	assert.Equal(t, fixedDoc("pushed"), string(got.Kvs[0].Value), "the push is the document in etcd")
}

// TestDaemonEtcdFlags: -etcd takes the place of -config, and a daemon
// whose etcd holds no document does not start.
func TestDaemonEtcdFlags(t *testing.T) {
	_, err := parseFlags([]string{"-etcd", "http://127.0.0.1:1", "-config", "x.yaml"}, &syncBuffer{})
	require.ErrorContains(t, err, "-etcd takes the place of -config")
	f, err := parseFlags([]string{"-etcd", "http://127.0.0.1:1"}, &syncBuffer{})
	require.NoError(t, err)
	assert.Equal(t, "/paduraksa/", f.etcdPrefix)
	assert.Equal(t, hostname(), f.instance)
	assert.False(t, f.demo())

	e := etcdtest.Start(t)
	logs := &syncBuffer{}
	err = run(context.Background(), []string{"-listen", "127.0.0.1:0", "-https", "off", "-etcd", e.Endpoint}, options{stdout: &syncBuffer{}, stderr: logs})
	require.ErrorContains(t, err, "/paduraksa/config")
	assert.ErrorContains(t, err, "holds no document")
}
