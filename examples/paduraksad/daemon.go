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
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/admin"
	"github.com/paduraksa/paduraksa/connlimit"
	"github.com/paduraksa/paduraksa/edge"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/health"
	"github.com/paduraksa/paduraksa/internal/ipaddr"
	"github.com/paduraksa/paduraksa/listenlimits"
	"github.com/paduraksa/paduraksa/proxyproto"
	"github.com/paduraksa/paduraksa/simulate"
	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/paduraksa/paduraksa/tlsselect"
)

//go:embed default.yaml
var defaultConfig []byte

func run(ctx context.Context, args []string, opt options) error {
	fs := flag.NewFlagSet("paduraksad", flag.ContinueOnError)
	fs.SetOutput(opt.stderr)
	configPath := fs.String("config", "", "config document (JSON or YAML); empty: the embedded demo config")
	listen := fs.String("http", "127.0.0.1:8080", "address to serve plain HTTP on; empty: none")
	fs.StringVar(listen, "listen", *listen, "the same as -http")
	https := fs.String("https", "", "address to serve HTTPS on, TCP (HTTP/1.1, HTTP/2) and UDP (HTTP/3); the embedded demo config serves 127.0.0.1:8443 unless set; \"off\": none")
	acmeDir := fs.String("acme-directory", "", "ACME directory URL for the document's acme certificates; empty: ACME off")
	acmeEmail := fs.String("acme-email", "", "ACME account contact")
	acmeCache := fs.String("acme-cache", "paduraksa-acme", "directory keeping the ACME account and certificates")
	acmeCA := fs.String("acme-ca", "", "PEM file of roots for the ACME directory's HTTPS (a test CA); empty: the system's")
	watch := fs.Duration("watch", time.Second, "how often to check the config file for changes; 0: only on SIGHUP")
	proxyFrom := fs.String("proxy-protocol-from", "", "comma-separated prefixes of load balancers that must send a PROXY protocol header; empty: off")
	perIP := fs.Int("max-conns-per-ip", connlimit.DefaultPerAddress, "concurrent connections per client address (IPv6: per /64); -1: off")
	deny := fs.String("deny", "", "comma-separated prefixes refused before TLS")
	adminFlags := addAdminFlags(fs)
	whatIf := fs.Bool("what-if", false, "before applying a changed config file, replay the recent requests against it and log how many would change (the admin API's POST /simulate/diff has the details)")
	accessLog := fs.String("access-log", "stderr", "where the access log goes: stderr, a file (appended to), or off; hosts[].accessLog: false leaves a host out")
	accessFormat := fs.String("access-log-format", "json", "access log format: json or text (logfmt)")
	accessSample := fs.Int("access-log-sample-2xx", 1, "log one in N answers with a 2xx status (the others always)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	adminSet, err := adminFlags.settings()
	if err != nil {
		return err
	}
	if *acmeDir != "" && *listen == "" {
		// HTTP-01 is answered on the plain HTTP listener: without one,
		// no certificate could ever be obtained.
		return errors.New("-acme-directory needs -http: the ACME server checks HTTP-01 challenges on the plain HTTP listener")
	}
	log := opt.logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(opt.stderr, nil))
	}

	mon := health.New(health.Options{Logger: log})
	if err := mon.Start(ctx); err != nil {
		return err
	}
	defer mon.Close()

	store := new(snapshot.Store)
	var pub *snapshot.Publisher
	challenges := new(gate.ChallengeStore)
	al, closeLog, err := openAccessLog(*accessLog, *accessFormat, *accessSample, opt.stderr)
	if err != nil {
		return err
	}
	defer closeLog()
	// The recent requests a what-if replays (admin POST /simulate/diff).
	sample := simulate.NewSample(simulate.SampleConfig{})
	compiler := snapshot.Compiler{Health: mon, Logger: log, Challenges: challenges, Observer: sample}
	if al != nil {
		compiler.AccessLog = al
	}
	demoMode := *configPath == ""
	if demoMode && *https == "" {
		*https = "127.0.0.1:8443"
	}
	if *https == "off" {
		*https = ""
	}
	var demoCAFile string
	if demoMode {
		// The demo's HTTPS: a certificate for localhost made now, and
		// written out so a client can trust it.
		self, err := tlsselect.SelfSigned(30*24*time.Hour, "localhost", "*.localhost", "127.0.0.1", "::1")
		if err != nil {
			return err
		}
		compiler.Certificates = map[string]tlsselect.Source{"localhost": tlsselect.Static(self)}
		f, err := os.CreateTemp("", "paduraksad-localhost-*.pem")
		if err != nil {
			return err
		}
		demoCAFile = f.Name()
		defer os.Remove(demoCAFile)
		_, err = f.Write(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: self.Leaf.Raw}))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	if *acmeDir != "" {
		acme, err := startACME(ctx, *acmeDir, *acmeEmail, *acmeCache, *acmeCA, challenges, log, func() { pub.RefreshTLS() })
		if err != nil {
			return err
		}
		defer acme.Close()
		compiler.ACME = acme
	}
	pub = snapshot.NewPublisher(snapshot.PublisherConfig{
		Store:    store,
		Compiler: compiler,
		OnOutcome: func(o snapshot.Outcome) {
			switch o.Status {
			case snapshot.Refused:
				msg := "config refused; the previous config keeps serving"
				if store.Load() == nil {
					msg = "config refused; nothing is serving yet"
				}
				log.Error(msg, "revision", o.Revision, "problems", len(o.Errors))
				for _, e := range o.Errors {
					log.Error("config problem", "code", e.Code, "path", e.Path, "msg", e.Msg)
				}
			case snapshot.Applied:
				log.Info("config applied", "revision", o.Revision, "took", o.Took)
				for _, w := range o.Warnings {
					log.Warn("config warning", "code", w.Code, "path", w.Path, "msg", w.Msg)
				}
			case snapshot.Unchanged:
				log.Info("config unchanged", "revision", o.Revision)
			default:
				log.Debug("config "+o.Status.String(), "revision", o.Revision)
			}
		},
	})

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
		HTTP:          *listen,
		ProxyProtocol: proxyproto.Config{TrustedProxies: trusted},
		Connections:   connlimit.Config{PerAddress: *perIP, Deny: denied},
		Limits:        limits,
		Logger:        log,
	}
	if *https != "" {
		// The selector follows the store, so the listeners can open
		// before the first config: until it applies they answer 503
		// and nobody has been told the address.
		ec.HTTPS, ec.HTTP3 = *https, true
		ec.TLS, ec.QUICTLS = store.TLS().TLSConfig(), store.TLS().QUICConfig()
	}
	srv, err := edge.Start(ec)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		return err
	}

	var source func() ([]byte, error)
	if demoMode {
		demo, err := startDemo(log)
		if err != nil {
			return fail(err)
		}
		defer demo.Close()
		httpsPort := "443"
		if a := srv.Addr("https"); a != nil {
			_, httpsPort, _ = net.SplitHostPort(a.String())
		}
		doc := bytes.ReplaceAll(defaultConfig, []byte("{{DEMO}}"), []byte(demo.Addr().String()))
		doc = bytes.ReplaceAll(doc, []byte("{{HTTPS_PORT}}"), []byte(httpsPort))
		source = func() ([]byte, error) { return doc, nil }
	} else {
		path := *configPath
		source = func() ([]byte, error) { return snapshot.ReadDocument(path, admin.DefaultMaxDocumentBytes) }
	}
	data, err := source()
	if err != nil {
		return fail(err)
	}
	o, err := pub.PublishData(data).Wait(ctx)
	if err != nil {
		return fail(err)
	}
	if o.Status == snapshot.Refused {
		return fail(fmt.Errorf("config refused, nothing is serving: %w", joinProblems(o.Errors)))
	}
	if *https != "" && store.Load().TLS() == nil {
		return fail(errors.New("-https: the config names no certificate (certificates[] and global.tls.defaultCertificate)"))
	}
	adminSet.metrics = admin.NewMetrics(admin.MetricsConfig{Store: store, Publisher: pub, Edge: srv, AccessLog: al}).Handler()
	adminSet.simulate = simulate.NewHandler(simulate.HandlerConfig{
		Store: store, Compiler: &compiler, Sample: sample,
		Revision: func(id uint64) *snapshot.Snapshot {
			e, _ := pub.Entry(id)
			return e.Snapshot
		},
		Listener: simulate.Listener{ProxyProtocol: ec.ProxyProtocol, Connections: ec.Connections, Limits: ec.Limits},
	})
	adm, err := startAdmin(adminSet, pub, *configPath, log, opt)
	if err != nil {
		return fail(err)
	}
	defer adm.close()

	var addr, tlsAddr string
	if a := srv.Addr("http"); a != nil {
		addr = a.String()
		fmt.Fprintf(opt.stdout, "paduraksad listening on http://%s\n", addr)
	}
	if a := srv.Addr("https"); a != nil {
		tlsAddr = a.String()
		fmt.Fprintf(opt.stdout, "paduraksad listening on https://%s (HTTP/1.1, HTTP/2, HTTP/3)\n", tlsAddr)
	}
	log.Info("serving", "http", addr, "https", tlsAddr, "config", cmpOr(*configPath, "embedded demo"))
	if demoMode {
		if addr != "" {
			fmt.Fprintf(opt.stdout, "try: curl -i http://%s/hello\n", addr)
		}
		if tlsAddr != "" {
			_, port, _ := net.SplitHostPort(tlsAddr)
			fmt.Fprintf(opt.stdout, "try: curl -i --cacert %s https://localhost:%s/hello\n", demoCAFile, port)
		}
	}
	if opt.readyTLS != nil {
		opt.readyTLS(tlsAddr)
	}
	if opt.ready != nil {
		opt.ready(addr)
	}

	var tick <-chan time.Time
	if *watch > 0 && *configPath != "" {
		t := time.NewTicker(*watch)
		defer t.Stop()
		tick = t.C
	}
	w := watcher{applied: data, log: log, publish: func(b []byte) {
		if *whatIf {
			logWhatIf(log, store, &compiler, ec, sample, b)
		}
		pub.PublishData(b)
	}}
	reload := func(why string) {
		data, err := source()
		if why == "signal" {
			w.signal(data, err)
		} else {
			w.poll(data, err)
		}
	}
	for {
		select {
		case <-ctx.Done():
			log.Info("shutting down")
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := srv.Shutdown(sctx)
			pub.Flush()
			return err
		case err := <-srv.Err():
			return err
		case <-opt.reload:
			reload("signal")
		case <-tick:
			reload("change")
		case sv := <-adm.saveChan():
			sv.write(*configPath, &w)
		}
	}
}

// watcher decides which reads of the config file to publish. A poll
// publishes a changed document only once two reads in a row agree, so a
// file caught half-written (an editor or a copy still writing it) is never
// applied; writing a new file and renaming it over the old one makes the
// change visible at once and whole. A signal publishes what it reads
// (the operator asked). A file that cannot be read is logged once, until
// that changes.
type watcher struct {
	applied []byte // the document last published
	pending []byte // a changed document seen once, waiting for a second read
	lastErr string // the read error last logged
	log     *slog.Logger
	publish func([]byte)
}

func (w *watcher) unreadable(err error) bool {
	if err == nil {
		w.lastErr = ""
		return false
	}
	if msg := err.Error(); msg != w.lastErr {
		w.lastErr = msg
		w.log.Error("config unreadable; the previous config keeps serving", "err", err)
	}
	return true
}

func (w *watcher) poll(data []byte, err error) {
	if w.unreadable(err) {
		return
	}
	switch {
	case bytes.Equal(data, w.applied):
		w.pending = nil
	case w.pending != nil && bytes.Equal(data, w.pending):
		w.log.Info("reloading config", "why", "change")
		w.applied, w.pending = data, nil
		w.publish(data)
	default:
		w.log.Debug("config file changed; publishing when a second read agrees")
		w.pending = data
	}
}

func (w *watcher) signal(data []byte, err error) {
	if w.unreadable(err) {
		return
	}
	w.log.Info("reloading config", "why", "signal")
	w.applied, w.pending = data, nil
	w.publish(data)
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

func joinProblems(ps []*snapshot.ValidationError) error {
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = p
	}
	return errors.Join(errs...)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// startACME starts the ACME manager of the document's acme certificates;
// ready runs when it obtained or renewed one.
func startACME(ctx context.Context, dir, email, cache, caFile string, challenges *gate.ChallengeStore, log *slog.Logger, ready func()) (*tlsselect.ACME, error) {
	var roots *x509.CertPool
	if caFile != "" {
		pemData, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("-acme-ca: %w", err)
		}
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pemData) {
			return nil, fmt.Errorf("-acme-ca: %s holds no PEM certificate", caFile)
		}
	}
	acme, err := tlsselect.NewACME(tlsselect.ACMEConfig{
		DirectoryURL: dir, Email: email, CacheDir: cache, RootCAs: roots, Challenges: challenges, Logger: log,
		OnReady: func(e tlsselect.ACMEReady) {
			log.Info("acme certificate ready", "certificate", e.ID, "names", e.Names, "notAfter", e.NotAfter, "renewal", e.Renewal)
			ready()
		},
	})
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
