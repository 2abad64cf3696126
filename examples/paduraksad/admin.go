package main

// The admin listener: the admin package's API on an address of its own,
// a bearer token from a file, and pushed documents saved to the config
// file (package source) so that they survive a restart.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/admin"
	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/paduraksa/paduraksa/source"
	"github.com/paduraksa/paduraksa/telemetry"
	"github.com/paduraksa/paduraksa/tlsselect"
)

// adminFlags are the admin listener's flags.
type adminFlags struct {
	addr, tokenFile *string
}

func addAdminFlags(fs *flag.FlagSet) adminFlags {
	return adminFlags{
		addr:      fs.String("admin", "127.0.0.1:9901", `address of the admin API (GET/PUT /config, /revisions, /health, /healthz, /cluster with -etcd, the MCP tools at /mcp) and the console (/console/); "off": none`),
		tokenFile: fs.String("admin-token-file", "", "file holding the admin API's bearer token; required for an admin address that is not loopback"),
	}
}

// adminSettings is what the flags ask for, checked at start.
type adminSettings struct {
	addr     string // "" when off
	token    string
	metrics  http.Handler               // served at /metrics
	simulate http.Handler               // served at /simulate and /simulate/diff
	recent   func() []telemetry.Record  // served at /requests
	compiler *snapshot.Compiler         // checks POST /config/check drafts
	instance string                     // -instance, shown by the console
	acme     func() tlsselect.ACMEStats // the ACME manager's state, for GET /certificates; nil without one
	fleet    *fleetParts                // the daemon's; its parts nil without -etcd, -redis
}

// settings reads the token file and refuses an admin address others can
// reach without a token.
func (f adminFlags) settings() (adminSettings, error) {
	s := adminSettings{addr: strings.TrimSpace(*f.addr)}
	if s.addr == "off" || s.addr == "" {
		return adminSettings{}, nil
	}
	host, _, err := net.SplitHostPort(s.addr)
	if err != nil {
		return s, fmt.Errorf("-admin %q: %w", s.addr, err)
	}
	if *f.tokenFile != "" {
		if s.token, err = admin.ReadTokenFile(*f.tokenFile); err != nil {
			return s, fmt.Errorf("-admin-token-file: %w", err)
		}
	}
	if s.token == "" && !loopbackHost(host) {
		return s, fmt.Errorf("-admin %s is not a loopback address: anyone who reaches it could change the config; give a bearer token with -admin-token-file, or listen on 127.0.0.1", s.addr)
	}
	return s, nil
}

// loopbackHost reports whether host names only the loopback interface.
// An empty host (every interface) is not loopback.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// adminServer is the running admin listener; nil when it is off.
type adminServer struct {
	srv *http.Server
	ln  net.Listener
}

// startAdmin serves the admin API for pub on s.addr, and returns nil when
// s.addr is empty. With a source that keeps documents (the config file,
// etcd), applied pushes are saved there (its Save), as saved says;
// without one, they are applied in memory only. It tells opt.readyAdmin
// the address.
func startAdmin(s adminSettings, pub *snapshot.Publisher, saver source.Source, saved string, log *slog.Logger, opt options, listen func(name, addr string) (net.Listener, error)) (*adminServer, error) {
	if s.addr == "" {
		return nil, nil
	}
	a := &adminServer{}
	cfg := admin.Config{Publisher: pub, Token: s.token, Logger: log, Metrics: s.metrics, Simulate: s.simulate,
		Recent: s.recent, Compiler: s.compiler, Instance: s.instance, ACME: s.acme}
	s.fleet.configure(&cfg)
	if saver != nil && cfg.Store == nil {
		cfg.Persist = func(ctx context.Context, data []byte) error {
			_, err := saver.Save(ctx, source.Push{Data: data})
			return err
		}
	}
	h, err := admin.New(cfg)
	if err != nil {
		return nil, err
	}
	served, err := mountMCP(h, s.token)
	if err != nil {
		return nil, err
	}
	if a.ln, err = listen(socketAdmin, s.addr); err != nil {
		return nil, fmt.Errorf("-admin: %w", err)
	}
	a.srv = &http.Server{Handler: served, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	go func() {
		if err := a.srv.Serve(a.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("admin listener stopped", "err", err)
		}
	}()
	addr := a.ln.Addr().String()
	fmt.Fprintf(opt.stdout, "paduraksad admin API on http://%s\n", addr)
	fmt.Fprintf(opt.stdout, "paduraksad console on http://%s/console/\n", addr)
	if saver == nil {
		saved = "pushed configs apply in memory only (no -config file)"
	}
	log.Info("admin API serving", "addr", addr, "token", s.token != "", "persist", saved)
	if opt.readyAdmin != nil {
		opt.readyAdmin(addr)
	}
	return a, nil
}

// close shuts the admin listener down, waiting a little for requests in
// progress.
func (a *adminServer) close() {
	if a == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	a.srv.Shutdown(ctx)
}
