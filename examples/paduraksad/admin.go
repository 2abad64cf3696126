package main

// The admin listener: the admin package's API on an address of its own,
// a bearer token from a file, and pushed documents written to the config
// file so that they survive a restart.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/admin"
	"github.com/paduraksa/paduraksa/snapshot"
)

// adminFlags are the admin listener's flags.
type adminFlags struct {
	addr, tokenFile *string
}

func addAdminFlags(fs *flag.FlagSet) adminFlags {
	return adminFlags{
		addr:      fs.String("admin", "127.0.0.1:9901", `address of the admin API (GET/PUT /config, /revisions, /health, /healthz); "off": none`),
		tokenFile: fs.String("admin-token-file", "", "file holding the admin API's bearer token; required for an admin address that is not loopback"),
	}
}

// adminSettings is what the flags ask for, checked at start.
type adminSettings struct {
	addr     string // "" when off
	token    string
	metrics  http.Handler // served at /metrics
	simulate http.Handler // served at /simulate and /simulate/diff
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

// save is a pushed document on its way to the config file: the run loop
// writes it, so that the file watcher knows the bytes as its own.
type save struct {
	data []byte
	done chan error
}

// adminServer is the running admin listener; nil when it is off.
type adminServer struct {
	srv   *http.Server
	ln    net.Listener
	saves chan save     // nil when pushes live in memory only
	stop  chan struct{} // closed first at shutdown: ends saves in progress
}

// startAdmin serves the admin API for pub on s.addr, and returns nil when
// s.addr is empty. With a config file, applied pushes are handed to the
// run loop over saves to be written; without one, they are applied in
// memory only. It tells opt.readyAdmin the address.
func startAdmin(s adminSettings, pub *snapshot.Publisher, configPath string, log *slog.Logger, opt options) (*adminServer, error) {
	if s.addr == "" {
		return nil, nil
	}
	a := &adminServer{stop: make(chan struct{})}
	stop := a.stop
	cfg := admin.Config{Publisher: pub, Token: s.token, Logger: log, Metrics: s.metrics, Simulate: s.simulate}
	if configPath != "" {
		a.saves = make(chan save)
		cfg.Persist = func(ctx context.Context, data []byte) error {
			sv := save{data: data, done: make(chan error, 1)}
			select {
			case a.saves <- sv:
			case <-ctx.Done():
				return ctx.Err()
			case <-stop:
				return errors.New("the daemon is shutting down")
			}
			select {
			case err := <-sv.done:
				return err
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	h, err := admin.New(cfg)
	if err != nil {
		return nil, err
	}
	if a.ln, err = net.Listen("tcp", s.addr); err != nil {
		return nil, fmt.Errorf("-admin: %w", err)
	}
	a.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	go func() {
		if err := a.srv.Serve(a.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("admin listener stopped", "err", err)
		}
	}()
	addr := a.ln.Addr().String()
	fmt.Fprintf(opt.stdout, "paduraksad admin API on http://%s\n", addr)
	saved := "pushed configs are written to " + configPath
	if configPath == "" {
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
	close(a.stop)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	a.srv.Shutdown(ctx)
}

// saveChan returns the channel of saves, nil (never ready) without one.
func (a *adminServer) saveChan() <-chan save {
	if a == nil {
		return nil
	}
	return a.saves
}

// write writes a pushed document to the config file and tells the
// watcher these are the bytes it applied, so that its next poll sees no
// change instead of publishing the same document again.
func (sv save) write(path string, w *watcher) {
	err := writeFileAtomic(path, sv.data)
	if err == nil {
		w.applied, w.pending = sv.data, nil
		w.log.Info("pushed config written", "file", path, "bytes", len(sv.data))
	} else {
		w.log.Error("pushed config applied but not written; a restart loses it", "file", path, "err", err)
	}
	sv.done <- err
}

// writeFileAtomic replaces path with data whole: a temporary file in the
// same directory, written, synced and renamed over it, so that a reader (a
// restart, the watcher) sees the old document or the new one, never half
// of one. The file keeps its permissions.
func writeFileAtomic(path string, data []byte) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(mode); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	// The rename is durable once the directory is synced.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
