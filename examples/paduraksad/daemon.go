package main

import (
	"bytes"
	"context"
	"crypto/x509"
	_ "embed"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/paduraksa/paduraksa/admin"
	"github.com/paduraksa/paduraksa/connlimit"
	"github.com/paduraksa/paduraksa/edge"
	"github.com/paduraksa/paduraksa/fleet"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/health"
	"github.com/paduraksa/paduraksa/internal/ipaddr"
	"github.com/paduraksa/paduraksa/listenlimits"
	"github.com/paduraksa/paduraksa/proxyproto"
	"github.com/paduraksa/paduraksa/simulate"
	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/paduraksa/paduraksa/source"
	"github.com/paduraksa/paduraksa/telemetry"
	"github.com/paduraksa/paduraksa/tlsselect"
)

//go:embed default.yaml
var defaultConfig []byte

// run is the daemon: its flags, then its parts, each started by a step
// of its own in the order they need each other, then the signal loop
// until ctx is done. The parts close in the reverse order.
func run(ctx context.Context, args []string, opt options) error {
	f, err := parseFlags(args, opt.stderr)
	if err != nil {
		return err
	}
	a := &app{f: f, opt: opt, log: opt.logger}
	if a.log == nil {
		a.log = slog.New(slog.NewTextHandler(opt.stderr, nil))
	}
	defer a.close()
	for _, step := range []func(context.Context) error{a.startSockets, a.startCompiler, a.startACMEManager, a.startEdge, a.startPublisher} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	// The edge serves from here on: a step that fails shuts it down.
	for _, step := range []func(context.Context) error{a.loadSource, a.serveAdmin} {
		if err := step(ctx); err != nil {
			return a.fail(err)
		}
	}
	a.announce()
	if err := a.ready(); err != nil {
		return a.fail(err)
	}
	return a.serve(ctx)
}

// flags are the daemon's command line.
type flags struct {
	configPath, listen, https             string
	gatewayPath, gatewaySecrets           string
	acmeDir, acmeEmail, acmeCache, acmeCA string
	watch                                 time.Duration
	proxyFrom, deny                       string
	perIP                                 int
	whatIf                                bool
	accessLog, accessFormat               string
	accessSample                          int
	admin                                 adminSettings
	secretsPath                           string
	pidFile                               string
	upgradeGrace, upgradeTimeout          time.Duration
	etcd, etcdPrefix, instance            string
	ticketRotation                        time.Duration
	etcdCA, etcdCert, etcdKey             string
	redis, redisPrefix                    string
	redisTimeout                          time.Duration
	redisPool                             int
}

// demo reports whether the daemon serves the embedded demo config.
func (f *flags) demo() bool { return f.configPath == "" && f.gatewayPath == "" && f.etcd == "" }

func parseFlags(args []string, stderr io.Writer) (flags, error) {
	var f flags
	fs := flag.NewFlagSet("paduraksad", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.configPath, "config", "", "config document (JSON or YAML); empty: the embedded demo config")
	fs.StringVar(&f.gatewayPath, "gateway-api", "", "Kubernetes Gateway API objects (YAML: Gateway, HTTPRoute, ReferenceGrant, EndpointSlice, Service, Secret) translated into the document, beside -config's or instead of it; watched like -config")
	fs.StringVar(&f.gatewaySecrets, "gateway-api-secrets", "", "directory the certificates of -gateway-api's kubernetes.io/tls Secrets are written to (mode 0600); empty: such a Secret is refused")
	fs.StringVar(&f.listen, "http", "127.0.0.1:8080", "address to serve plain HTTP on; empty: none")
	fs.StringVar(&f.listen, "listen", f.listen, "the same as -http")
	fs.StringVar(&f.https, "https", "", "address to serve HTTPS on, TCP (HTTP/1.1, HTTP/2) and UDP (HTTP/3); the embedded demo config serves 127.0.0.1:8443 unless set; \"off\": none")
	fs.StringVar(&f.acmeDir, "acme-directory", "", "ACME directory URL for the document's acme certificates; empty: ACME off")
	fs.StringVar(&f.acmeEmail, "acme-email", "", "ACME account contact")
	fs.StringVar(&f.acmeCache, "acme-cache", "paduraksa-acme", "directory keeping the ACME account and certificates; not used with -etcd, where the fleet keeps them")
	fs.StringVar(&f.acmeCA, "acme-ca", "", "PEM file of roots for the ACME directory's HTTPS (a test CA); empty: the system's")
	fs.DurationVar(&f.watch, "watch", time.Second, "how often to check the config file for changes; 0: only on SIGHUP")
	fs.StringVar(&f.proxyFrom, "proxy-protocol-from", "", "comma-separated prefixes of load balancers that must send a PROXY protocol header; empty: off")
	fs.IntVar(&f.perIP, "max-conns-per-ip", connlimit.DefaultPerAddress, "concurrent connections per client address (IPv6: per /64); -1: off")
	fs.StringVar(&f.deny, "deny", "", "comma-separated prefixes refused before TLS")
	adminFlags := addAdminFlags(fs)
	fs.BoolVar(&f.whatIf, "what-if", false, "before applying a changed config file, replay the recent requests against it and log how many would change (the admin API's POST /simulate/diff has the details)")
	fs.StringVar(&f.accessLog, "access-log", "stderr", "where the access log goes: stderr, a file (appended to), or off; hosts[].accessLog: false leaves a host out")
	fs.StringVar(&f.accessFormat, "access-log-format", "json", "access log format: json or text (logfmt)")
	fs.IntVar(&f.accessSample, "access-log-sample-2xx", 1, "log one in N answers with a 2xx status (the others always)")
	fs.StringVar(&f.pidFile, "pid-file", "", "file the serving process writes its PID to, after an upgrade too (for kill -USR2); empty: none")
	fs.DurationVar(&f.upgradeGrace, "upgrade-grace", 30*time.Second, "after SIGUSR2 handed the sockets to a new process: how long requests, streams and upgrades in flight have to finish (SIGTERM ends it)")
	fs.DurationVar(&f.upgradeTimeout, "upgrade-timeout", time.Minute, "after SIGUSR2: how long the new process has to serve before it is killed and this one keeps serving")
	fs.StringVar(&f.secretsPath, "secrets", "", "file keeping the affinity key and the TLS session ticket secret across restarts, created (mode 0600) when absent; empty: both random at every start. With -etcd the secrets are in etcd, and this file only seeds them when etcd has none")
	fs.StringVar(&f.etcd, "etcd", "", "comma-separated etcd client URLs (every member's): the config document is the key -etcd-prefix+\"config\" there, watched, instead of -config's file; PUT /config saves there first, If-Match on the key's revision for the whole fleet; the instance's state is kept at -etcd-prefix+\"instances/\"+-instance under a lease, listed by GET /cluster")
	fs.StringVar(&f.etcdPrefix, "etcd-prefix", fleet.DefaultPrefix, "prefix of the fleet's keys in etcd")
	fs.StringVar(&f.instance, "instance", hostname(), "name of this instance in the fleet, unique in it: its logs, and its state's key in etcd")
	fs.DurationVar(&f.ticketRotation, "ticket-secret-rotation", fleet.DefaultRotationPeriod, "with -etcd: how often the instance elected among the fleet writes a new TLS session ticket secret to etcd, keeping the one it replaces to open older tickets (at least 1s)")
	fs.StringVar(&f.etcdCA, "etcd-ca", "", "PEM file of the roots that sign etcd's server certificates (https -etcd URLs); empty: the system's")
	fs.StringVar(&f.etcdCert, "etcd-cert", "", "PEM file of this instance's client certificate for etcd, with -etcd-key")
	fs.StringVar(&f.etcdKey, "etcd-key", "", "PEM file of the private key of -etcd-cert")
	fs.StringVar(&f.redis, "redis", "", "Redis URL (redis://[user:password@]host:port[/db], rediss:// for TLS) keeping the buckets of the document's cluster rate limits (buckets: cluster), shared by every instance using it; empty: such a limit is refused")
	fs.IntVar(&f.redisPool, "redis-pool", defaultRedisPool, "connections to Redis kept for the cluster rate limits' decisions: each request being decided holds one for its round trip, so fewer than the requests in flight make decisions wait for one, past -redis-timeout under load")
	fs.DurationVar(&f.redisTimeout, "redis-timeout", gate.DefaultRateLimitStoreTimeout, "each cluster rate-limit decision's deadline in Redis; past it, or when Redis fails, the instance's local bucket decides")
	fs.StringVar(&f.redisPrefix, "redis-prefix", "paduraksa:rl:", "prefix of the keys of the cluster rate limits' buckets in Redis")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if f.etcd != "" && (f.configPath != "" || f.gatewayPath != "") {
		return f, errors.New("-etcd takes the place of -config and -gateway-api: the document is the one in etcd")
	}
	var err error
	if f.admin, err = adminFlags.settings(); err != nil {
		return f, err
	}
	if f.acmeDir != "" && f.listen == "" {
		// HTTP-01 is answered on the plain HTTP listener: without one,
		// no certificate could ever be obtained.
		return f, errors.New("-acme-directory needs -http: the ACME server checks HTTP-01 challenges on the plain HTTP listener")
	}
	if f.demo() && f.https == "" {
		f.https = "127.0.0.1:8443"
	}
	if f.https == "off" {
		f.https = ""
	}
	return f, nil
}

// app is the running daemon's parts, made by run's steps in order.
type app struct {
	f       flags
	opt     options
	log     *slog.Logger
	closers []func() // what the steps started, closed in reverse order

	store      *snapshot.Store
	challenges *gate.ChallengeStore
	accessLog  *telemetry.AccessLog // nil when off
	sample     *simulate.Sample     // the recent requests a what-if replays
	compiler   snapshot.Compiler
	demoCAFile string // the demo certificate written out for clients; "" without the demo
	pub        *snapshot.Publisher
	ec         edge.Config
	srv        *edge.Server
	file       *source.File  // the -config file; nil for the embedded demo config and with -gateway-api or -etcd
	saver      source.Source // where pushes are saved: file, or the -etcd source; nil: nowhere
	saved      string        // where saver saves, as the admin API's log says
	// watches are the sources Run publishes the changes of: the -config
	// file, with -gateway-api its file and -config's, or the -etcd key.
	watches []watch
	reload  func()       // what SIGHUP does
	adm     *adminServer // nil when off
	fleet   fleetParts   // -etcd's and -redis's parts
	sk      *sockets     // where the listening sockets come from

	etcdCli *clientv3.Client // the -etcd client, made on first use; nil without -etcd
}

// deferClose runs fn when run returns, before what earlier steps started.
func (a *app) deferClose(fn func()) { a.closers = append(a.closers, fn) }

// runUntilClose runs fn on a goroutine of its own, with a context of ctx
// that the daemon's close cancels before it waits for fn to return.
func (a *app) runUntilClose(ctx context.Context, fn func(context.Context)) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(ctx)
	}()
	a.deferClose(func() { cancel(); <-done })
}

func (a *app) close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
}

// fail shuts the edge down quickly and returns err.
func (a *app) fail(err error) error {
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	a.srv.Shutdown(sctx)
	return err
}

// startCompiler starts the health monitor and the access log and makes
// the compiler, with the demo's certificate for the embedded config.
func (a *app) startCompiler(ctx context.Context) error {
	mon := health.New(health.Options{Logger: a.log})
	if err := mon.Start(ctx); err != nil {
		return err
	}
	a.deferClose(func() { mon.Close() })
	a.store, a.challenges = new(snapshot.Store), new(gate.ChallengeStore)
	al, closeLog, err := openAccessLog(a.f.accessLog, a.f.accessFormat, a.f.accessSample, a.opt.stderr)
	if err != nil {
		return err
	}
	a.deferClose(closeLog)
	a.sample = simulate.NewSample(simulate.SampleConfig{})
	a.compiler = snapshot.Compiler{Health: mon, Logger: a.log, Challenges: a.challenges, Observer: a.sample}
	if al != nil {
		a.accessLog, a.compiler.AccessLog = al, al
	}
	if err := a.loadSecrets(ctx); err != nil {
		return err
	}
	if err := a.startRateLimitStore(ctx); err != nil {
		return err
	}
	if !a.f.demo() {
		return nil
	}
	// The demo's HTTPS: a certificate for localhost made now, and
	// written out so a client can trust it.
	self, err := tlsselect.SelfSigned(30*24*time.Hour, "localhost", "*.localhost", "127.0.0.1", "::1")
	if err != nil {
		return err
	}
	a.compiler.Certificates = map[string]tlsselect.Source{"localhost": tlsselect.Static(self)}
	cf, err := os.CreateTemp("", "paduraksad-localhost-*.pem")
	if err != nil {
		return err
	}
	a.demoCAFile = cf.Name()
	a.deferClose(func() { os.Remove(a.demoCAFile) })
	_, err = cf.Write(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: self.Leaf.Raw}))
	if cerr := cf.Close(); err == nil {
		err = cerr
	}
	return err
}

// startACMEManager starts the ACME manager when -acme-directory asks for
// one.
func (a *app) startACMEManager(ctx context.Context) error {
	if a.f.acmeDir == "" {
		return nil
	}
	var certs *fleet.Certs // with -etcd: the fleet's ACME state and tokens
	if a.f.etcd != "" {
		cli, err := a.etcdClient()
		if err != nil {
			return err
		}
		if certs, err = fleet.NewCerts(fleet.CertsConfig{Client: cli, Prefix: a.f.etcdPrefix, Challenges: a.challenges, Logger: a.log}); err != nil {
			return fmt.Errorf("-etcd-prefix: %w", err)
		}
		a.runUntilClose(ctx, func(ctx context.Context) { certs.Run(ctx) })
		a.log.Info("acme account and certificates kept in etcd, shared by the fleet; -acme-cache not used", "etcdKeys", a.f.etcdPrefix+"acme/")
	}
	acme, err := startACME(ctx, a.f.acmeDir, a.f.acmeEmail, a.f.acmeCache, a.f.acmeCA, a.challenges, certs, a.log, func() { a.pub.RefreshTLS() })
	if err != nil {
		return err
	}
	a.deferClose(func() { acme.Close() })
	a.compiler.ACME = acme
	return nil
}

// startPublisher makes the publisher, which logs every revision's
// outcome, a refusal with every problem. It runs once the edge is bound,
// so that the compiler knows the HTTPS port Alt-Svc and HTTPS redirects
// name when the document does not say (global.httpsPort).
func (a *app) startPublisher(context.Context) error {
	if addr := a.srv.Addr("https"); addr != nil {
		a.compiler.HTTPSPort = portOf(addr.String())
	}
	log, store := a.log, a.store
	// The warnings of the serving config, logged when they first appear:
	// a fleet of hosts the default certificate does not cover warns of
	// each at every reload, and writing them all every time costs a
	// reload more than its publish.
	var warned map[snapshot.ValidationError]bool
	a.pub = snapshot.NewPublisher(snapshot.PublisherConfig{
		Store:    store,
		Compiler: a.compiler,
		OnOutcome: func(o snapshot.Outcome) {
			switch o.Status {
			case snapshot.Refused:
				msg := "config refused; the previous config keeps serving"
				if store.Load() == nil {
					msg = "config refused; nothing is serving yet"
				}
				// One line, every problem in it: a refusal is one event.
				log.Error(msg, "revision", o.Revision, "problems", len(o.Errors), "errors", problemsLine(o.Errors))
			case snapshot.Applied:
				log.Info("config applied", "revision", o.Revision, "took", o.Took, "warnings", len(o.Warnings))
				now := make(map[snapshot.ValidationError]bool, len(o.Warnings))
				for _, w := range o.Warnings {
					now[*w] = true
					if !warned[*w] {
						log.Warn("config warning", "code", w.Code, "path", w.Path, "msg", w.Msg)
					}
				}
				warned = now
			case snapshot.Unchanged:
				log.Info("config unchanged", "revision", o.Revision)
			default:
				log.Debug("config "+o.Status.String(), "revision", o.Revision)
			}
		},
	})
	return nil
}

// startEdge serves the listeners the flags ask for, on the sockets
// edgeSockets gives.
func (a *app) startEdge(context.Context) error {
	store, log := a.store, a.log
	https, proxyFrom, perIP, deny := &a.f.https, &a.f.proxyFrom, &a.f.perIP, &a.f.deny
	var limits listenlimits.Limits
	trusted, err := parsePrefixes(*proxyFrom)
	if err != nil {
		return fmt.Errorf("-proxy-protocol-from: %w", err)
	}
	denied, err := parsePrefixes(*deny)
	if err != nil {
		return fmt.Errorf("-deny: %w", err)
	}
	if *perIP < 0 {
		*perIP = connlimit.Off
	}
	ec := edge.Config{
		Handler:       store,
		ProxyProtocol: proxyproto.Config{TrustedProxies: trusted},
		Connections:   connlimit.Config{PerAddress: *perIP, Deny: denied},
		Limits:        limits,
		Logger:        log,
	}
	if *https != "" {
		// The selector follows the store, so the listeners can open
		// before the first config: until it applies they answer 503
		// and nobody has been told the address.
		ec.TLS, ec.QUICTLS = store.TLS().TLSConfig(), store.TLS().QUICConfig()
	}
	if err := a.edgeSockets(&ec); err != nil {
		return err
	}
	srv, err := edge.Start(ec)
	if err != nil {
		closeSockets(&ec)
		return err
	}
	a.ec, a.srv = ec, srv
	return nil
}

// loadSource publishes the first document, the -config file's or the
// embedded demo's, and refuses to go on when it is refused.
func (a *app) loadSource(ctx context.Context) error {
	var first source.Document
	if a.f.demo() {
		doc, err := a.demoDocument()
		if err != nil {
			return err
		}
		first = source.Document{Data: doc}
		a.reload = func() {
			a.log.Info("reloading config", "why", source.Reload.String())
			a.whatIf(doc)
			a.pub.PublishData(doc)
		}
	} else if a.f.etcd != "" {
		src, err := a.startEtcd()
		if err != nil {
			return err
		}
		if first, err = src.Load(ctx); err != nil {
			return fmt.Errorf("-etcd: %s: %w", src.Key(), err)
		}
		a.saver, a.saved, a.reload = src, "pushed configs are saved in etcd at "+src.Key(), src.Reload
		a.watches = []watch{{src, a.publishChange}}
	} else if a.f.gatewayPath != "" {
		period := a.f.watch
		if period <= 0 {
			period = source.NoPolling
		}
		o, err := a.loadGateway(ctx, period)
		if err != nil {
			return err
		}
		if o.Status == snapshot.Refused {
			return fmt.Errorf("config refused, nothing is serving: %w", joinProblems(o.Errors))
		}
		if a.f.https != "" && a.store.Load().TLS() == nil {
			return errors.New("-https: the config names no certificate (certificates[] and global.tls.defaultCertificate)")
		}
		return nil
	} else {
		period := a.f.watch
		if period <= 0 {
			period = source.NoPolling
		}
		file, err := source.NewFile(source.FileConfig{Path: a.f.configPath, Period: period, MaxBytes: admin.DefaultMaxDocumentBytes, Logger: a.log,
			RefusalsLogged: true}) // by the publisher's OnOutcome
		if err != nil {
			return err
		}
		if first, err = file.Load(ctx); err != nil {
			return err
		}
		a.file, a.reload = file, file.Reload
		a.saver, a.saved = file, "pushed configs are written to "+a.f.configPath
		a.watches = []watch{{file, a.publishChange}}
	}
	o, err := source.To(a.pub)(ctx, first)
	if err != nil {
		return err
	}
	a.fleet.record(first, o)
	if o.Status == snapshot.Refused {
		return fmt.Errorf("config refused, nothing is serving: %w", joinProblems(o.Errors))
	}
	if a.f.https != "" && a.store.Load().TLS() == nil {
		return errors.New("-https: the config names no certificate (certificates[] and global.tls.defaultCertificate)")
	}
	return nil
}

// demoDocument starts the demo upstream and returns the embedded config
// pointed at it.
func (a *app) demoDocument() ([]byte, error) {
	demo, err := startDemo(a.log)
	if err != nil {
		return nil, err
	}
	a.deferClose(func() { demo.Close() })
	return bytes.ReplaceAll(defaultConfig, []byte("{{DEMO}}"), []byte(demo.Addr().String())), nil
}

// whatIf logs how many of the recent requests data would answer
// otherwise, when -what-if asks for it.
func (a *app) whatIf(data []byte) {
	if a.f.whatIf {
		logWhatIf(a.log, a.store, &a.compiler, a.ec, a.sample, data)
	}
}

// publishChange is the file's Publish: the what-if, then the publish.
func (a *app) publishChange(ctx context.Context, d source.Document) (snapshot.Outcome, error) {
	a.whatIf(d.Data)
	return source.To(a.pub)(ctx, d)
}

// serveAdmin serves the admin API, with the metrics and the simulator,
// when -admin asks for it.
func (a *app) serveAdmin(context.Context) error {
	s := a.f.admin
	s.compiler, s.fleet = &a.compiler, &a.fleet
	s.metrics = admin.NewMetrics(admin.MetricsConfig{Store: a.store, Publisher: a.pub, Edge: a.srv, AccessLog: a.accessLog,
		Engines: a.fleet.adminEngines}).Handler()
	s.simulate = simulate.NewHandler(simulate.HandlerConfig{
		Store: a.store, Compiler: &a.compiler, Sample: a.sample,
		Revision: func(id uint64) *snapshot.Snapshot {
			e, _ := a.pub.Entry(id)
			return e.Snapshot
		},
		Listener: simulate.Listener{ProxyProtocol: a.ec.ProxyProtocol, Connections: a.ec.Connections, Limits: a.ec.Limits},
	})
	s.recent = a.sample.Recent
	s.instance = a.f.instance
	if acme := a.compiler.ACME; acme != nil {
		s.acme = acme.Stats
	}
	adm, err := startAdmin(s, a.pub, a.saver, a.saved, a.log, a.opt, a.sk.listen)
	if err != nil {
		return err
	}
	a.adm = adm
	a.deferClose(adm.close)
	return nil
}

// announce says where the daemon serves, and tells the test hooks.
func (a *app) announce() {
	var addr, tlsAddr string
	if l := a.srv.Addr("http"); l != nil {
		addr = l.String()
		fmt.Fprintf(a.opt.stdout, "paduraksad listening on http://%s\n", addr)
	}
	if l := a.srv.Addr("https"); l != nil {
		tlsAddr = l.String()
		fmt.Fprintf(a.opt.stdout, "paduraksad listening on https://%s (HTTP/1.1, HTTP/2, HTTP/3)\n", tlsAddr)
	}
	a.log.Info("serving", "http", addr, "https", tlsAddr, "config", a.configName(), "gatewayApi", a.f.gatewayPath, "instance", a.f.instance)
	if a.f.demo() {
		if addr != "" {
			fmt.Fprintf(a.opt.stdout, "try: curl -i http://%s/hello\n", addr)
		}
		if tlsAddr != "" {
			_, port, _ := net.SplitHostPort(tlsAddr)
			fmt.Fprintf(a.opt.stdout, "try: curl -i --cacert %s https://localhost:%s/hello\n", a.demoCAFile, port)
		}
	}
	if a.opt.readyTLS != nil {
		a.opt.readyTLS(tlsAddr)
	}
	if a.opt.ready != nil {
		a.opt.ready(addr)
	}
}

// serve is the signal loop: the file's changes publish on its own Run,
// SIGHUP reloads, and the daemon drains on ctx or stops when the edge
// fails.
func (a *app) serve(ctx context.Context) error {
	for _, w := range a.watches {
		watchCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- w.src.Run(watchCtx, w.publish) }()
		defer func() {
			stop()
			if err := <-done; !errors.Is(err, context.Canceled) {
				a.log.Error("config watch stopped", "err", err)
			}
		}()
	}
	for {
		select {
		case <-ctx.Done():
			a.log.Info("shutting down")
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := a.srv.Shutdown(sctx)
			a.pub.Flush()
			return err
		case err := <-a.srv.Err():
			return err
		case <-a.opt.reload:
			a.reload()
		case <-a.opt.upgrade:
			a.upgrade()
		case <-a.exit():
			return a.handOver(ctx)
		}
	}
}

// watch is a source whose changes are published, and how.
type watch struct {
	src     source.Source
	publish source.Publish
}

// parsePrefixes reads a comma-separated list of addresses and prefixes by
// the rule the config document's lists follow (ipaddr.ParsePrefix): an
// address alone is its full-length prefix, IPv4-mapped is IPv4, and a
// prefix with bits set after its length is refused.
func parsePrefixes(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		p, err := ipaddr.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", s, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// problemsLine is every problem of ps on one line, "; " between them.
func problemsLine(ps []*snapshot.ValidationError) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.Error())
	}
	return b.String()
}

func joinProblems(ps []*snapshot.ValidationError) error {
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = p
	}
	return errors.Join(errs...)
}

// portOf returns the port of a host:port address, or 0.
func portOf(addr string) int {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(p)
	return n
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// startACME starts the ACME manager of the document's acme certificates,
// its state in the cache directory or, with certs, in the fleet's etcd;
// ready runs when it obtained, renewed or took one.
func startACME(ctx context.Context, dir, email, cache, caFile string, challenges *gate.ChallengeStore, certs *fleet.Certs, log *slog.Logger, ready func()) (*tlsselect.ACME, error) {
	var roots *x509.CertPool
	if caFile != "" {
		pemData, err := readPEM(caFile)
		if err != nil {
			return nil, fmt.Errorf("-acme-ca: %w", err)
		}
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pemData) {
			return nil, fmt.Errorf("-acme-ca: %s holds no PEM certificate", caFile)
		}
	}
	cfg := tlsselect.ACMEConfig{
		DirectoryURL: dir, Email: email, CacheDir: cache, RootCAs: roots, Challenges: challenges, Logger: log,
		OnReady: func(e tlsselect.ACMEReady) {
			log.Info("acme certificate ready", "certificate", e.ID, "names", e.Names, "notAfter", e.NotAfter, "renewal", e.Renewal)
			ready()
		},
	}
	if certs != nil {
		cfg.CacheDir, cfg.Storage, cfg.Challenges = "", certs, certs.Challenges()
	}
	acme, err := tlsselect.NewACME(cfg)
	if err != nil {
		return nil, err
	}
	if err := acme.Start(ctx); err != nil {
		return nil, err
	}
	return acme, nil
}

// startDemo serves the built-in demo upstream on a loopback port: it echoes
// what the proxy sent it, so a first curl shows the forwarding headers.
func startDemo(log *slog.Logger) (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		fmt.Fprintf(&b, "hello from the demo upstream\n%s %s %s\n", r.Method, r.URL.RequestURI(), r.Proto)
		fmt.Fprintf(&b, "Host: %s\n", r.Host)
		for _, k := range []string{"X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", "X-Real-Ip"} {
			if v := r.Header.Get(k); v != "" {
				fmt.Fprintf(&b, "%s: %s\n", k, v)
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte(b.String()))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, net.ErrClosed) {
			log.Error("demo upstream stopped", "err", err)
		}
	}()
	return ln, nil
}
