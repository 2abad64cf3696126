package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/paduraksa/paduraksa/admin"
	"github.com/paduraksa/paduraksa/fleet"
	"github.com/paduraksa/paduraksa/internal/namedfile"
	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/paduraksa/paduraksa/source"
)

// etcdDialTimeout bounds the first connection to etcd: a daemon that
// cannot read its document does not start.
const etcdDialTimeout = 5 * time.Second

// probePeriod is how often an engine without a probe of its own (Redis)
// is asked whether it answers, and probeTimeout how long it has.
const (
	probePeriod  = time.Second
	probeTimeout = time.Second
)

// fleetParts are the daemon's parts of a fleet: the -etcd source and the
// instance's state (set together), and the probe of -redis; each nil
// when not asked for.
type fleetParts struct {
	etcd     *fleet.Etcd
	instance *fleet.Instance
	redis    *probe
}

// startEtcd connects to the -etcd cluster and returns the source of the
// fleet's document, its client closed when the daemon stops, and starts
// writing the instance's state under a lease. Its reachability is logged
// as it changes; meanwhile the last applied document keeps serving.
func (a *app) startEtcd() (*fleet.Etcd, error) {
	cli, err := a.etcdClient()
	if err != nil {
		return nil, err
	}
	log := a.log.With("instance", a.f.instance)
	src, err := fleet.NewEtcd(fleet.EtcdConfig{Client: cli, Prefix: a.f.etcdPrefix, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("-etcd-prefix: %w", err)
	}
	in, err := fleet.NewInstance(fleet.InstanceConfig{Etcd: src, Name: a.f.instance, Engines: a.fleet.otherEngines, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("-instance: %w", err)
	}
	a.fleet.etcd, a.fleet.instance = src, in
	a.runUntilClose(context.Background(), func(ctx context.Context) { in.Run(ctx) })
	return src, nil
}

// etcdClient returns the client of the -etcd cluster, made on first use
// and closed when the daemon stops: the document's source and the
// secrets share it.
func (a *app) etcdClient() (*clientv3.Client, error) {
	if a.etcdCli != nil {
		return a.etcdCli, nil
	}
	var urls []string
	for _, u := range strings.Split(a.f.etcd, ",") {
		if u = strings.TrimSpace(u); u != "" {
			urls = append(urls, u)
		}
	}
	if len(urls) == 0 {
		return nil, fmt.Errorf("-etcd %q names no URL", a.f.etcd)
	}
	tlsc, err := etcdTLS(a.f.etcdCA, a.f.etcdCert, a.f.etcdKey, urls)
	if err != nil {
		return nil, err
	}
	// The client's own log (its retries while etcd is away) is left
	// out: the source logs each change of reachability once.
	cli, err := clientv3.New(clientv3.Config{Endpoints: urls, DialTimeout: etcdDialTimeout, TLS: tlsc, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("-etcd: %w", err)
	}
	a.deferClose(func() { cli.Close() })
	a.etcdCli = cli
	return cli, nil
}

// readPEM reads a PEM file a flag names as the library reads those a
// document names: a regular file (not a FIFO or /dev/zero) of at most
// namedfile.MaxPEMSize, within its deadline.
func readPEM(name string) ([]byte, error) {
	b, err := namedfile.Reader{}.Read(name, namedfile.MaxPEMSize)
	if err != nil {
		return nil, namedfile.Problem(err)
	}
	return b, nil
}

// etcdTLS is the client TLS of -etcd-ca, -etcd-cert and -etcd-key; nil
// when none is given. A certificate without its key (or a key without
// its certificate) and TLS flags with an http URL are refused.
func etcdTLS(caFile, certFile, keyFile string, urls []string) (*tls.Config, error) {
	if caFile == "" && certFile == "" && keyFile == "" {
		return nil, nil
	}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("-etcd-cert and -etcd-key go together: give both (a client certificate and its key) or neither")
	}
	for _, u := range urls {
		if !strings.HasPrefix(u, "https://") {
			return nil, fmt.Errorf("-etcd %s is not https: -etcd-ca, -etcd-cert and -etcd-key are for etcd served over TLS", u)
		}
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := readPEM(caFile)
		if err != nil {
			return nil, fmt.Errorf("-etcd-ca: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("-etcd-ca %s holds no PEM certificate", caFile)
		}
	}
	if certFile != "" {
		certPEM, err := readPEM(certFile)
		if err != nil {
			return nil, fmt.Errorf("-etcd-cert: %w", err)
		}
		keyPEM, err := readPEM(keyFile)
		if err != nil {
			return nil, fmt.Errorf("-etcd-key: %w", err)
		}
		kp, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("-etcd-cert, -etcd-key: %w", err)
		}
		c.Certificates = []tls.Certificate{kp}
	}
	return c, nil
}

// record records the outcome of the first document, published by the
// daemon itself, with the source's.
func (p *fleetParts) record(d source.Document, o snapshot.Outcome) {
	if p.etcd != nil {
		p.etcd.Record(d, o)
	}
}

// configure makes the admin API a fleet's: pushes saved in etcd first,
// GET /cluster, and the engines in /healthz.
func (p *fleetParts) configure(cfg *admin.Config) {
	cfg.Engines = p.adminEngines
	if p.etcd == nil {
		return
	}
	src := p.etcd
	cfg.Store = src
	cfg.Cluster = func(ctx context.Context) (any, error) { return src.Instances(ctx) }
}

// otherEngines is the reachability of the engines besides etcd.
func (p *fleetParts) otherEngines() []fleet.Engine {
	if p.redis == nil {
		return nil
	}
	return []fleet.Engine{p.redis.engine()}
}

// adminEngines is the reachability of etcd and Redis, for /healthz and
// the metrics, as the instance's state in etcd shows it; nil without
// either.
func (p *fleetParts) adminEngines() []admin.Engine {
	es := p.otherEngines()
	if p.instance != nil {
		es = p.instance.State().Engines
	}
	var out []admin.Engine
	for _, e := range es {
		out = append(out, admin.Engine(e))
	}
	return out
}

// probe asks an engine every probePeriod whether it answers, and keeps
// the answer.
type probe struct {
	mu sync.Mutex
	e  fleet.Engine
}

// startProbe probes ping every probePeriod until the daemon stops,
// logging each change; first is the answer of the ping the caller made
// at start, which it logged itself.
func (a *app) startProbe(ctx context.Context, name string, ping func(context.Context) error, first error) *probe {
	p := &probe{e: fleet.Engine{Name: name, Reachable: true}}
	p.set(first)
	a.runUntilClose(ctx, func(ctx context.Context) {
		t := time.NewTicker(probePeriod)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			pctx, cancel := context.WithTimeout(ctx, probeTimeout)
			err := ping(pctx)
			cancel()
			if ctx.Err() != nil {
				return
			}
			if p.set(err) {
				if err != nil {
					a.log.Warn(name+" unreachable", "err", err.Error())
				} else {
					a.log.Info(name + " reachable again")
				}
			}
		}
	})
	return p
}

// set records a probe's answer and reports whether reachability changed.
func (p *probe) set(err error) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if (err == nil) == p.e.Reachable {
		if err != nil {
			p.e.Error = err.Error()
		}
		return false
	}
	p.e.Reachable, p.e.Since, p.e.Error = err == nil, time.Now(), ""
	if err != nil {
		p.e.Error = err.Error()
	}
	return true
}

func (p *probe) engine() fleet.Engine {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.e
}

// configName says where the document comes from, as the log says.
func (a *app) configName() string {
	switch {
	case a.f.etcd != "":
		return "etcd " + a.f.etcd + " " + a.f.etcdPrefix + "config"
	case a.f.configPath != "":
		return a.f.configPath
	case a.f.gatewayPath != "":
		return a.f.gatewayPath
	}
	return "embedded demo"
}

// hostname is -instance's default: the machine's name, or "paduraksad".
func hostname() string {
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "paduraksad"
}
