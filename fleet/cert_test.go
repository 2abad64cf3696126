package fleet_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/fleet"
	"github.com/paduraksa/paduraksa/fleet/etcdtest"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/internal/pebbletest"
	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/paduraksa/paduraksa/tlsselect"
)

// orderTimeout bounds the wait for an order against pebble: ten times
// what a loaded machine needs.
const orderTimeout = 60 * time.Second

// acmeInstance is one instance of a fleet: its etcd client and Certs, a
// real gate answering HTTP-01 from its own challenge store on a loopback
// listener, and an ACME manager sharing the fleet's storage.
type acmeInstance struct {
	certs  *fleet.Certs
	store  *gate.ChallengeStore
	addr   string // the gate's plain HTTP
	acme   *tlsselect.ACME
	ready  chan tlsselect.ACMEReady
	mu     sync.Mutex
	served []string // tokens the gate answered
}

func (in *acmeInstance) servedTokens() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return slices.Clone(in.served)
}

// newAcmeInstance starts an instance on endpoint's etcd; its manager is
// made by manage once pebble runs.
func newAcmeInstance(t *testing.T, endpoint string) *acmeInstance {
	t.Helper()
	in := &acmeInstance{store: &gate.ChallengeStore{}, ready: make(chan tlsselect.ACMEReady, 4)}
	g, err := gate.New(gate.Config{Challenges: in.store, Tracer: &gate.Tracer{OnStep: func(s gate.Step) {
		if s.Kind == gate.StepACME && s.Status == http.StatusOK {
			in.mu.Lock()
			in.served = append(in.served, s.Name)
			in.mu.Unlock()
		}
	}}})
	require.NoError(t, err)
	in.addr = serve(t, &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second})
	in.certs, err = fleet.NewCerts(fleet.CertsConfig{Client: etcdtest.ClientOf(t, endpoint), Challenges: in.store, RetryPeriod: 100 * time.Millisecond})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		in.certs.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return in
}

// manage makes and starts the instance's manager for pebble.
func (in *acmeInstance) manage(t *testing.T, p *pebbletest.Server) {
	t.Helper()
	m, err := tlsselect.NewACME(tlsselect.ACMEConfig{
		DirectoryURL: p.Directory, RootCAs: p.TLSRoots,
		Storage: in.certs, Challenges: in.certs.Challenges(),
		OnReady:      func(e tlsselect.ACMEReady) { in.ready <- e },
		OrderTimeout: orderTimeout,
	})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	in.acme = m
}

// serve serves srv on a loopback listener until the test ends and
// returns its address.
func serve(t *testing.T, srv *http.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return ln.Addr().String()
}

// forwarder is the port pebble validates HTTP-01 on: it sends each
// connection to the address pick returns, as a balancer would, and
// records where.
type forwarder struct {
	pick func() string
	mu   sync.Mutex
	sent []string
}

func (f *forwarder) start(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			to := f.pick()
			f.mu.Lock()
			f.sent = append(f.sent, to)
			f.mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				up, err := net.Dial("tcp", to)
				if err != nil {
					return
				}
				defer up.Close()
				go func() {
					io.Copy(up, c)
					up.(*net.TCPConn).CloseWrite()
				}()
				io.Copy(c, up)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

func (f *forwarder) targets() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sent)
}

// TestCertsACMEFleet: three instances sharing etcd, each asked for the
// same certificate at once while a killed process held its lock, obtain
// it from pebble with one order once the lock's lease ended; the
// CA's HTTP-01 requests are sent to an instance that did not order, which
// answers from the token the ordering instance shared; all three serve
// the certificate in a TLS handshake, and the tokens are withdrawn
// everywhere afterwards.
func TestCertsACMEFleet(t *testing.T) {
	etcd := etcdtest.Start(t)
	var ins []*acmeInstance
	for range 3 {
		ins = append(ins, newAcmeInstance(t, etcd.Endpoint))
	}
	// The balancer sends the CA to an instance that has ordered nothing.
	fw := &forwarder{pick: func() string {
		for _, in := range ins {
			if in.acme.Stats().Orders == 0 {
				return in.addr
			}
		}
		return ins[0].addr
	}}
	p := pebbletest.Start(t, pebbletest.Options{HTTPPort: fw.start(t)})
	for _, in := range ins {
		in.manage(t, p)
	}
	req := tlsselect.SourceRequest{ID: "shop", Names: []string{"shop.fleet.test", "www.shop.fleet.test"}}
	for _, in := range ins {
		_, err := in.acme.Certificate(req)
		require.ErrorIs(t, err, tlsselect.ErrPending)
	}
	// A holder of the certificate's lock is killed while the three wait
	// for it: its lease frees it.
	ca := strings.NewReplacer(":", "%3A", "/", "%2F").Replace(strings.TrimPrefix(p.Directory, "https://"))
	kill := holdLock(t, etcd.Endpoint, fleet.DefaultPrefix+"acme/locks/"+ca+"/certificates/shop.pem", 2*time.Second)
	for _, in := range ins {
		require.NoError(t, in.acme.Start(context.Background()))
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, in := range ins {
		for !in.acme.Stats().Certificates[0].Ordering {
			require.True(t, time.Now().Before(deadline), "the managers' jobs did not start")
			time.Sleep(10 * time.Millisecond)
		}
	}
	assert.Zero(t, p.NewOrders(), "no order while another holds the lock")
	kill()
	var holder *acmeInstance
	var orders, adopted uint64
	for i, in := range ins {
		select {
		case e := <-in.ready:
			assert.Equal(t, "shop", e.ID)
		case <-time.After(orderTimeout):
			t.Fatalf("instance %d: no certificate after %v: %+v", i, orderTimeout, in.acme.Stats())
		}
		s := in.acme.Stats()
		orders, adopted = orders+s.Orders, adopted+s.Adopted
		if s.Orders == 1 {
			holder = in
		}
	}
	assert.Equal(t, uint64(1), orders, "one order for the fleet")
	assert.Equal(t, uint64(2), adopted, "the others took it from etcd")
	assert.Equal(t, 1, p.NewOrders(), "pebble was asked for one order")
	require.NotNil(t, holder)

	// The CA's requests went to an instance that did not order, which
	// answered them.
	sent := fw.targets()
	require.NotEmpty(t, sent)
	assert.NotContains(t, sent, holder.addr)
	assert.Empty(t, holder.servedTokens(), "the ordering instance answered no validation")
	tokens := map[string]bool{}
	for _, in := range ins {
		if in != holder {
			for _, tok := range in.servedTokens() {
				tokens[tok] = true
			}
		}
	}
	assert.Len(t, tokens, 2, "each name's token answered by the others (pebble may ask more than once)")

	// Every instance serves the certificate.
	var leaf *x509.Certificate
	for i, in := range ins {
		got := handshake(t, in.acme, req, p.Issuer)
		if leaf == nil {
			leaf = got
		}
		assert.True(t, leaf.Equal(got), "instance %d serves the one certificate", i)
	}

	// The tokens are withdrawn from every instance's store.
	deadline = time.Now().Add(10 * time.Second)
	for _, in := range ins {
		for in.store.Len() > 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		assert.Zero(t, in.store.Len(), "tokens left published")
	}
}

// handshake serves a Table of m's certificate over TLS on loopback and
// returns the leaf a client verifying against roots gets.
func handshake(t *testing.T, m *tlsselect.ACME, req tlsselect.SourceRequest, roots *x509.CertPool) *x509.Certificate {
	t.Helper()
	tbl, err := tlsselect.New(tlsselect.Config{
		Certificates: []tlsselect.Certificate{{ID: req.ID, Source: m}},
		Hosts:        []tlsselect.Host{{Names: req.Names, Certificate: req.ID}},
	})
	require.NoError(t, err)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", tlsselect.NewSelector(tbl).TLSConfig())
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: roots, ServerName: req.Names[0]})
	require.NoError(t, err)
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0]
}

// TestCertsLockLease: a certificate's lock is one holder's at a time,
// handed on when released; a holder killed while it holds the lock (an
// etcdctl lock process on the same key, killed with SIGKILL: its lease
// no longer kept alive, never revoked) frees it when its lease ends.
func TestCertsLockLease(t *testing.T) {
	etcd := etcdtest.Start(t)
	newCerts := func() *fleet.Certs {
		c, err := fleet.NewCerts(fleet.CertsConfig{Client: etcdtest.ClientOf(t, etcd.Endpoint), Challenges: &gate.ChallengeStore{}})
		require.NoError(t, err)
		return c
	}
	a, b := newCerts(), newCerts()
	ctx := context.Background()
	const name = "ca/certificates/shop.pem"

	unlock, err := a.Lock(ctx, name)
	require.NoError(t, err)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = b.Lock(short, name)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "held by a")
	unlock()
	start := time.Now()
	unlockB, err := b.Lock(ctx, name)
	require.NoError(t, err)
	assert.Less(t, time.Since(start), time.Second, "a released it")
	unlockB()

	const ttl = 2 * time.Second
	kill := holdLock(t, etcd.Endpoint, fleet.DefaultPrefix+"acme/locks/"+name, ttl)
	short, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = b.Lock(short, name)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "held by the other process")
	kill()
	start = time.Now()
	lctx, cancel := context.WithTimeout(ctx, 10*ttl)
	defer cancel()
	unlockB, err = b.Lock(lctx, name)
	require.NoError(t, err, "the lease of the killed holder ended")
	took := time.Since(start)
	unlockB()
	assert.Greater(t, took, ttl/4, "held until the lease ended")
	t.Logf("the lock of a killed holder was free %v after the kill (its lease's TTL %v)", took, ttl)
}

// holdLock runs etcdctl lock on the key name, a process holding the lock
// on a lease of ttl as Certs.Lock does, and returns once it holds it;
// kill kills it with SIGKILL, so it releases nothing.
func holdLock(t *testing.T, endpoint, name string, ttl time.Duration) (kill func()) {
	t.Helper()
	bin, err := exec.LookPath("etcdctl")
	require.NoError(t, err, "etcdctl ships with Debian's etcd-client")
	cmd := exec.Command(bin, "--endpoints", endpoint, "lock", "--ttl", strconv.Itoa(int(ttl/time.Second)), name)
	cmd.Env = append(os.Environ(), "ETCDCTL_API=3")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	kill = sync.OnceFunc(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	t.Cleanup(kill)
	line, err := bufio.NewReader(out).ReadString('\n') // the lock's key, once held
	require.NoError(t, err, "etcdctl lock exited")
	require.True(t, strings.HasPrefix(line, name+"/"), "etcdctl holds %q", line)
	return kill
}

// TestCertsStorage: values under PREFIX+"acme/data/", a missing one
// fs.ErrNotExist, List one level deep, Watch telling of every put.
func TestCertsStorage(t *testing.T) {
	etcd := etcdtest.Start(t)
	c, err := fleet.NewCerts(fleet.CertsConfig{Client: etcd.Client(), Challenges: &gate.ChallengeStore{}})
	require.NoError(t, err)
	ctx := context.Background()
	_, err = c.Load(ctx, "ca/account.key")
	require.ErrorIs(t, err, fs.ErrNotExist)

	seen := make(chan string, 4)
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Watch(wctx, "ca/certificates/", func(k string) { seen <- k })
	}()
	defer func() {
		cancel()
		<-done
	}()
	// The watch is established when a put under its prefix is told.
	deadline := time.Now().Add(10 * time.Second)
	var first string
	for first == "" {
		require.NoError(t, c.Store(ctx, "ca/certificates/a.pem", []byte("a")))
		select {
		case first = <-seen:
		case <-time.After(50 * time.Millisecond):
			require.True(t, time.Now().Before(deadline), "the watch told of no put")
		}
	}
	assert.Equal(t, "ca/certificates/a.pem", first)
	for len(seen) > 0 {
		<-seen
	}
	require.NoError(t, c.Store(ctx, "ca/account.key", []byte("k")))
	require.NoError(t, c.Store(ctx, "ca/certificates/b.pem", []byte("b")))
	select {
	case k := <-seen:
		assert.Equal(t, "ca/certificates/b.pem", k, "only puts under the prefix")
	case <-time.After(10 * time.Second):
		t.Fatal("the watch told of no put")
	}
	b, err := c.Load(ctx, "ca/certificates/b.pem")
	require.NoError(t, err)
	assert.Equal(t, "b", string(b))
	keys, err := c.List(ctx, "ca/")
	require.NoError(t, err)
	assert.Equal(t, []string{"ca/account.key"}, keys, "one level")
	keys, err = c.List(ctx, "ca/certificates/")
	require.NoError(t, err)
	assert.Equal(t, []string{"ca/certificates/a.pem", "ca/certificates/b.pem"}, keys)
	res, err := etcd.Client().Get(ctx, fleet.DefaultPrefix+"acme/data/ca/account.key")
	require.NoError(t, err)
	require.Len(t, res.Kvs, 1, "the key in etcd")
}

// TestCertsTokens: a token one instance's manager sets is published in
// every instance's challenge store and withdrawn from all when it
// deletes it; one whose instance went away (no Delete) is withdrawn when
// its lease ends.
func TestCertsTokens(t *testing.T) {
	etcd := etcdtest.Start(t)
	type inst struct {
		certs *fleet.Certs
		store *gate.ChallengeStore
	}
	var ins []inst
	for range 2 {
		st := &gate.ChallengeStore{}
		c, err := fleet.NewCerts(fleet.CertsConfig{Client: etcdtest.ClientOf(t, etcd.Endpoint), Challenges: st, TokenTTL: 2 * time.Second, RetryPeriod: 100 * time.Millisecond})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.Run(ctx)
		}()
		t.Cleanup(func() {
			cancel()
			<-done
		})
		ins = append(ins, inst{c, st})
	}
	waitLen := func(st *gate.ChallengeStore, n int, why string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for st.Len() != n {
			require.True(t, time.Now().Before(deadline), "%s: %d tokens, not %d", why, st.Len(), n)
			time.Sleep(10 * time.Millisecond)
		}
	}
	a := ins[0].certs.Challenges()
	a.Set("tok1", "tok1.thumb")
	waitLen(ins[1].store, 1, "shared")
	waitLen(ins[0].store, 1, "the setter's own")
	a.Delete("tok1")
	waitLen(ins[1].store, 0, "withdrawn")
	waitLen(ins[0].store, 0, "withdrawn from the setter's own")

	// A token never deleted goes with its lease.
	a.Set("tok2", "tok2.thumb")
	waitLen(ins[1].store, 1, "shared")
	start := time.Now()
	waitLen(ins[1].store, 0, "the lease ended")
	t.Logf("an abandoned token was withdrawn %v after it was seen (TokenTTL 2s)", time.Since(start))
}

// TestNewCertsProblems: every problem at once, with its code and path.
func TestNewCertsProblems(t *testing.T) {
	_, err := fleet.NewCerts(fleet.CertsConfig{Prefix: "x", LockTTL: time.Millisecond, Timeout: -1})
	var got []string
	for _, p := range problem.All(err) {
		got = append(got, p.Code+" "+p.Path)
	}
	assert.ElementsMatch(t, []string{
		fleet.CodeClientMissing + " client",
		fleet.CodeCertsChallengesMissing + " challenges",
		fleet.CodePrefixInvalid + " prefix",
		fleet.CodeCertsDurationInvalid + " lockTtl",
		fleet.CodeCertsDurationInvalid + " timeout",
	}, got)
	assert.False(t, errors.Is(err, fs.ErrNotExist))
}
