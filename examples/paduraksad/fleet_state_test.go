package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/paduraksa/paduraksa/admin"
	"github.com/paduraksa/paduraksa/fleet"
	"github.com/paduraksa/paduraksa/fleet/etcdtest"
)

// startFleet starts one daemon per name on the etcd at endpoints, under
// prefix, and waits until each serves body at app.test.
func startFleet(t *testing.T, endpoints, prefix, body string, names []string, extra ...string) []*daemon {
	t.Helper()
	var ds []*daemon
	for _, name := range names {
		args := append([]string{"-etcd", endpoints, "-etcd-prefix", prefix, "-instance", name, "-https", "off"}, extra...)
		ds = append(ds, startDaemon(t, args...))
	}
	serveAll(t, ds, body)
	return ds
}

// serveAll waits until every daemon serves body at app.test.
func serveAll(t *testing.T, ds []*daemon, body string) {
	t.Helper()
	for _, d := range ds {
		waitFor(t, "every instance to serve "+body, func() bool { _, got := d.get(t, "app.test", "/"); return got == body })
	}
}

// etcdPut puts value at key with c and returns the key's mod revision.
func etcdPut(t *testing.T, c *clientv3.Client, key, value string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.Put(ctx, key, value)
	require.NoError(t, err)
	return res.Header.Revision
}

// cluster is GET /cluster's answer with the instances decoded.
type cluster struct {
	Instances []fleet.InstanceState `json:"instances"`
	Error     admin.Problem         `json:"error"`
}

func (d *daemon) cluster(t *testing.T) (int, cluster) {
	t.Helper()
	status, _, body := d.adminDo(t, "GET", "/cluster", "")
	var c cluster
	require.NoError(t, json.Unmarshal([]byte(body), &c), body)
	return status, c
}

func (d *daemon) healthz(t *testing.T) (int, admin.Healthz) {
	t.Helper()
	status, _, body := d.adminDo(t, "GET", "/healthz", "")
	var h admin.Healthz
	require.NoError(t, json.Unmarshal([]byte(body), &h), body)
	return status, h
}

// names lists the instances of a GET /cluster answer.
func (c cluster) names() []string {
	var out []string
	for _, in := range c.Instances {
		out = append(out, in.Instance)
	}
	return out
}

// TestDaemonFleetIfMatchRace: an ETag read from one instance is the
// etcd mod revision on every instance; two instances pushing on it at
// once get one 200 and one 412, and all three end on the winner's
// document; a document a publish would refuse is answered 422 and not
// saved.
func TestDaemonFleetIfMatchRace(t *testing.T) {
	e := etcdtest.Start(t)
	c := e.Client()
	rev := etcdPut(t, c, "/race/config", fixedDoc("one"))
	ds := startFleet(t, e.Endpoint, "/race/", "one", []string{"a", "b", "c"})
	tag := strconv.Quote(strconv.FormatInt(rev, 10))
	for _, d := range ds {
		status, hdr, _ := d.adminDo(t, "GET", "/config", "")
		require.Equal(t, http.StatusOK, status)
		assert.Equal(t, tag, hdr.Get("ETag"), "the etcd mod revision, on every instance")
		assert.Equal(t, strconv.FormatInt(rev, 10), hdr.Get("Paduraksa-Version"))
	}

	status, res := ds[0].push(t, "hosts:\n  - names: [app.test]\n    bogus: 1\n", "If-Match", tag)
	assert.Equal(t, http.StatusUnprocessableEntity, status, "%+v", res)
	require.NotEmpty(t, res.Errors)
	assert.NotEmpty(t, res.Errors[0].Code)
	assert.Contains(t, res.Message, "nothing was saved")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := c.Get(ctx, "/race/config")
	require.NoError(t, err)
	assert.Equal(t, rev, got.Kvs[0].ModRevision, "a refused push saves nothing")

	type answer struct {
		status int
		res    admin.PushResult
	}
	answers := make([]answer, 2)
	var wg sync.WaitGroup
	for i, body := range []string{"from-a", "from-b"} {
		wg.Go(func() {
			s, r := ds[i].push(t, fixedDoc(body), "If-Match", tag)
			answers[i] = answer{s, r}
		})
	}
	wg.Wait()
	var winner string
	var wins, stale int
	for i, a := range answers {
		switch a.status {
		case http.StatusOK:
			wins++
			winner = []string{"from-a", "from-b"}[i]
			assert.True(t, a.res.Persisted)
			assert.NotEqual(t, strconv.FormatInt(rev, 10), a.res.Version)
		case http.StatusPreconditionFailed:
			stale++
			require.NotEmpty(t, a.res.Errors)
			assert.Equal(t, admin.CodeRevisionStale, a.res.Errors[0].Code)
		default:
			t.Errorf("push %d: %d %+v", i, a.status, a.res)
		}
	}
	require.Equal(t, 1, wins, "%+v", answers)
	require.Equal(t, 1, stale, "%+v", answers)
	serveAll(t, ds, winner)
	got, err = c.Get(ctx, "/race/config")
	require.NoError(t, err)
	assert.Equal(t, fixedDoc(winner), string(got.Kvs[0].Value))
	newTag := strconv.Quote(strconv.FormatInt(got.Kvs[0].ModRevision, 10))
	for _, d := range ds {
		waitFor(t, "every ETag to name the winner", func() bool {
			_, hdr, _ := d.adminDo(t, "GET", "/config", "")
			return hdr.Get("ETag") == newTag
		})
	}
	// An ETag read from c is a valid If-Match on a.
	status, res = ds[0].push(t, fixedDoc("after"), "If-Match", newTag)
	require.Equal(t, http.StatusOK, status, "%+v", res)
	serveAll(t, ds, "after")
}

// TestDaemonClusterRefusal: a refused document put in etcd leaves all
// three instances on the old version, and GET /cluster on any of them
// shows the refusal for each; a stopped instance leaves the list.
func TestDaemonClusterRefusal(t *testing.T) {
	e := etcdtest.Start(t)
	c := e.Client()
	good := etcdPut(t, c, "/cl/config", fixedDoc("one"))
	ds := startFleet(t, e.Endpoint, "/cl/", "one", []string{"c", "a", "b"})
	bad := etcdPut(t, c, "/cl/config", "hosts:\n  - names: [app.test]\n    bogus: 1\n")
	for _, d := range ds {
		waitFor(t, "every instance's refusal in GET /cluster", func() bool {
			status, cl := d.cluster(t)
			if status != http.StatusOK || len(cl.Instances) != 3 {
				return false
			}
			for _, in := range cl.Instances {
				if in.LastRefusal == nil || in.LastRefusal.Version != strconv.FormatInt(bad, 10) {
					return false
				}
			}
			return true
		})
		_, body := d.get(t, "app.test", "/")
		assert.Equal(t, "one", body)
	}
	_, cl := ds[1].cluster(t)
	assert.Equal(t, []string{"a", "b", "c"}, cl.names(), "sorted by name")
	for _, in := range cl.Instances {
		assert.Equal(t, strconv.FormatInt(good, 10), in.Version, "%s serves the old version", in.Instance)
		assert.NotZero(t, in.Revision)
		assert.False(t, in.At.IsZero())
		assert.False(t, in.Started.IsZero())
		require.NotEmpty(t, in.LastRefusal.Problems)
		p := in.LastRefusal.Problems[0]
		assert.NotEmpty(t, p.Code)
		assert.Contains(t, p.Path, "hosts[0]")
		require.NotEmpty(t, in.Engines)
		assert.Equal(t, "etcd", in.Engines[0].Name)
		assert.True(t, in.Engines[0].Reachable)
	}

	ds[0].stop(t)
	waitFor(t, "the stopped instance to leave the list", func() bool {
		_, cl := ds[1].cluster(t)
		return strings.Join(cl.names(), ",") == "a,b"
	})
}

// TestDaemonFleetEtcdOutage: with etcd stopped every instance keeps
// serving, /healthz stays 200 and says etcd is down since when, GET
// /cluster answers 503; once etcd is back, they catch up with a
// document put meanwhile. Redis's reachability is reported as well.
func TestDaemonFleetEtcdOutage(t *testing.T) {
	e := etcdtest.Start(t)
	etcdPut(t, e.Client(), "/out/config", fixedDoc("one"))
	redisAddr := startRedis(t)
	ds := startFleet(t, e.Endpoint, "/out/", "one", []string{"a", "b"}, "-redis", redisAddr)
	// The probes answer on their own schedule (a loaded machine may
	// miss one): their state is awaited.
	waitFor(t, "healthz to find both engines up", func() bool { _, h := ds[0].healthz(t); return len(h.Down) == 0 })
	status, h := ds[0].healthz(t)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, h.Engines, 2)
	assert.Equal(t, []string{"etcd", "redis"}, []string{h.Engines[0].Name, h.Engines[1].Name})
	assert.NotEmpty(t, h.Version)
	// A Redis that does not answer is reported down; the instance serves.
	noRedis := startFleet(t, e.Endpoint, "/out/", "one", []string{"c"}, "-redis", "redis://127.0.0.1:1")[0]
	waitFor(t, "healthz to say redis is down", func() bool {
		s, h := noRedis.healthz(t)
		return s == http.StatusOK && slices.Contains(h.Down, "redis")
	})
	waitFor(t, "GET /cluster to show c's redis down", func() bool {
		_, cl := ds[0].cluster(t)
		for _, in := range cl.Instances {
			if in.Instance == "c" && len(in.Engines) == 2 && in.Engines[1].Name == "redis" && !in.Engines[1].Reachable {
				return true
			}
		}
		return false
	})
	noRedis.stop(t)

	e.Stop()
	for _, d := range ds {
		waitFor(t, "healthz to say etcd is down", func() bool {
			_, h := d.healthz(t)
			return slices.Contains(h.Down, "etcd")
		})
		status, h := d.healthz(t)
		assert.Equal(t, http.StatusOK, status, "an instance serving with etcd down stays in the balancer")
		assert.Equal(t, "serving", h.Status)
		assert.False(t, h.Engines[0].Since.IsZero())
		assert.NotEmpty(t, h.Engines[0].Error)
		status, cl := d.cluster(t)
		assert.Equal(t, http.StatusServiceUnavailable, status)
		assert.Equal(t, admin.CodeClusterUnreachable, cl.Error.Code)
		_, body := d.get(t, "app.test", "/")
		assert.Equal(t, "one", body)
		m := d.scrape(t)["paduraksa_engine_reachable"]
		require.NotNil(t, m)
		for _, s := range m.Metric {
			if s.Label[0].GetValue() == "etcd" {
				assert.Zero(t, s.Gauge.GetValue())
			}
		}
	}

	aside := e.StartAside()
	etcdPut(t, etcdtest.ClientOf(t, aside), "/out/config", fixedDoc("meanwhile"))
	e.Stop()
	e.Start()
	serveAll(t, ds, "meanwhile")
	for _, d := range ds {
		waitFor(t, "healthz to say etcd is back", func() bool { _, h := d.healthz(t); return !slices.Contains(h.Down, "etcd") })
		waitFor(t, "GET /cluster to list both instances again", func() bool {
			s, cl := d.cluster(t)
			return s == http.StatusOK && strings.Join(cl.names(), ",") == "a,b"
		})
	}
}

// TestDaemonEtcdTLS: the daemon reaches an etcd served over TLS that
// asks for a client certificate with -etcd-ca, -etcd-cert and
// -etcd-key; partial TLS flags and TLS flags with an http URL are
// refused.
func TestDaemonEtcdTLS(t *testing.T) {
	e := etcdtest.StartTLS(t)
	etcdPut(t, e.Client(), "/tls/config", fixedDoc("secure"))
	tlsFlags := []string{"-etcd-ca", e.TLS.CAFile, "-etcd-cert", e.TLS.CertFile, "-etcd-key", e.TLS.KeyFile}
	ds := startFleet(t, e.Endpoint, "/tls/", "secure", []string{"a"}, tlsFlags...)
	status, res := ds[0].push(t, fixedDoc("pushed"))
	require.Equal(t, http.StatusOK, status, "%+v", res)
	serveAll(t, ds, "pushed")

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-etcd", e.Endpoint, "-etcd-cert", e.TLS.CertFile}, "-etcd-cert and -etcd-key go together"},
		{[]string{"-etcd", e.Endpoint, "-etcd-ca", e.TLS.CAFile, "-etcd-key", e.TLS.KeyFile}, "-etcd-cert and -etcd-key go together"},
		{[]string{"-etcd", "http://127.0.0.1:1", "-etcd-ca", e.TLS.CAFile}, "is not https"},
		{[]string{"-etcd", e.Endpoint, "-etcd-ca", e.TLS.KeyFile}, "holds no PEM certificate"},
	} {
		err := run(context.Background(), append([]string{"-listen", "127.0.0.1:0", "-https", "off", "-admin", "off"}, c.args...),
			options{stdout: &syncBuffer{}, stderr: &syncBuffer{}})
		assert.ErrorContains(t, err, c.want, "%v", c.args)
	}
}

// answers reports why a GET of host's / was not answered 200, without
// failing the test: it is called from other goroutines.
func (d *daemon) answers(host string) error {
	req, err := http.NewRequest("GET", "http://"+d.addr+"/", nil)
	if err != nil {
		return err
	}
	req.Host = host
	res, err := (&http.Client{Transport: d.tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return errors.New(res.Status)
	}
	return nil
}

// TestDaemonFleetThreeMembers: three instances on a three-member etcd
// keep answering without an error while one member, the leader, is
// killed, and a document put after the kill reaches all three.
func TestDaemonFleetThreeMembers(t *testing.T) {
	ec := etcdtest.StartCluster(t, 3)
	c := ec.Client()
	etcdPut(t, c, "/three/config", fixedDoc("one"))
	ds := startFleet(t, strings.Join(ec.Endpoints(), ","), "/three/", "one", []string{"a", "b", "c"})

	stop := make(chan struct{})
	var failures []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, d := range ds {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := d.answers("app.test"); err != nil {
					mu.Lock()
					failures = append(failures, err.Error())
					mu.Unlock()
				}
			}
		})
	}
	ec.Leader().Stop()
	// A put right after the kill may meet an election: it is the
	// test's own write, tried again until the cluster takes it.
	after := ec.Client()
	waitFor(t, "the cluster to take a put after the kill", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := after.Put(ctx, "/three/config", fixedDoc("two"))
		if err != nil {
			t.Logf("put after the kill: %v", err)
		}
		return err == nil
	})
	serveAll(t, ds, "two")
	close(stop)
	wg.Wait()
	for _, d := range ds {
		d.tr.CloseIdleConnections() // the load's connections end here, not in the daemons' shutdown
	}
	assert.Empty(t, failures, "requests answered with an error while a member was down")
	waitFor(t, "GET /cluster to show all three on the new version", func() bool {
		status, cl := ds[2].cluster(t)
		if status != http.StatusOK || len(cl.Instances) != 3 {
			return false
		}
		for _, in := range cl.Instances {
			_, _, body := ds[0].adminDo(t, "GET", "/config", "")
			if in.Version == "" || !strings.Contains(body, "two") {
				return false
			}
		}
		return cl.Instances[0].Version == cl.Instances[1].Version && cl.Instances[1].Version == cl.Instances[2].Version
	})
}
