package main

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/snapshot"
)

//go:embed default.yaml
var defaultConfig []byte

func run(ctx context.Context, args []string, opt options) error {
	fs := flag.NewFlagSet("paduraksad", flag.ContinueOnError)
	fs.SetOutput(opt.stderr)
	configPath := fs.String("config", "", "config document (JSON or YAML); empty: the embedded demo config")
	listen := fs.String("listen", "127.0.0.1:8080", "address to serve HTTP on")
	watch := fs.Duration("watch", time.Second, "how often to check the config file for changes; 0: only on SIGHUP")
	if err := fs.Parse(args); err != nil {
		return err
	}
	log := opt.logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(opt.stderr, nil))
	}

	store := new(snapshot.Store)
	pub := snapshot.NewPublisher(snapshot.PublisherConfig{
		Store: store,
		OnOutcome: func(o snapshot.Outcome) {
			switch o.Status {
			case snapshot.Refused:
				log.Error("config refused; the previous config keeps serving", "revision", o.Revision, "problems", len(o.Errors))
				for _, e := range o.Errors {
					log.Error("config problem", "code", e.Code, "path", e.Path, "msg", e.Msg)
				}
			case snapshot.Applied:
				log.Info("config applied", "revision", o.Revision, "took", o.Took)
			default:
				log.Debug("config "+o.Status.String(), "revision", o.Revision)
			}
		},
	})

	var source func() ([]byte, error)
	if *configPath == "" {
		demo, err := startDemo(log)
		if err != nil {
			return err
		}
		defer demo.Close()
		doc := bytes.ReplaceAll(defaultConfig, []byte("{{DEMO}}"), []byte(demo.Addr().String()))
		source = func() ([]byte, error) { return doc, nil }
	} else {
		path := *configPath
		source = func() ([]byte, error) { return os.ReadFile(path) }
	}
	data, err := source()
	if err != nil {
		return err
	}
	o, err := pub.PublishData(data).Wait(ctx)
	if err != nil {
		return err
	}
	if o.Status == snapshot.Refused {
		return fmt.Errorf("config refused: %w", joinProblems(o.Errors))
	}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           store,
		ReadHeaderTimeout: 15 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	addr := ln.Addr().String()
	log.Info("serving", "addr", addr, "config", cmpOr(*configPath, "embedded demo"))
	if *configPath == "" {
		fmt.Fprintf(opt.stdout, "paduraksad listening on http://%s\ntry: curl -i http://%s/hello\n", addr, addr)
	} else {
		fmt.Fprintf(opt.stdout, "paduraksad listening on http://%s\n", addr)
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
	last := data
	reload := func(why string) {
		data, err := source()
		if err != nil {
			log.Error("config unreadable; the previous config keeps serving", "err", err)
			return
		}
		if why == "change" && bytes.Equal(data, last) {
			return
		}
		last = data
		log.Info("reloading config", "why", why)
		pub.PublishData(data)
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
		case err := <-serveErr:
			return err
		case <-opt.reload:
			reload("signal")
		case <-tick:
			reload("change")
		}
	}
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
