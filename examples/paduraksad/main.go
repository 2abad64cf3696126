// Command paduraksad is the reference daemon of the Paduraksa library: a
// reverse proxy that serves a config document and reloads it on change.
//
// With no arguments it starts a working proxy on 127.0.0.1 with an embedded
// default config and a built-in demo upstream, and prints a curl command to
// try. With -config FILE it serves that document (JSON or YAML); the file is
// reloaded when it changes and on SIGHUP, through the snapshot publisher: a
// refused reload is logged with every error and the previous config keeps
// serving. SIGINT and SIGTERM shut it down gracefully. The admin API
// (package admin) listens on -admin, 127.0.0.1:9901 by default; a pushed
// document is written to the -config file, so it survives a restart.
//
// -secrets FILE keeps the affinity key and the TLS session ticket secret
// across restarts (package secrets). With -etcd they are the fleet's, in
// etcd at -etcd-prefix+"secrets" (fleet.Secrets): created there once
// (from the -secrets file when one is given and etcd has none), the
// ticket secret rotated every -ticket-secret-rotation by the instance
// the fleet elects and installed on every instance without a restart.
// See secrets.go. SIGUSR2 upgrades the binary without
// dropping a connection: the sockets, TCP and UDP, pass to a new process
// of the same path and arguments, and once it serves this one drains for
// -upgrade-grace and exits; a new process that fails leaves this one
// serving. Sockets from systemd's socket activation (LISTEN_FDS, named
// http, https, http3 and admin by FileDescriptorName=) are used instead of
// binding. See upgrade.go.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/cloudflare/tableflip"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "simulate" {
		if err := runSimulate(os.Args[2:], os.Stdout, os.Stderr); err != nil && !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "paduraksad:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "mcp" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := runMCP(ctx, os.Args[2:], os.Stdin, os.Stdout, os.Stderr)
		stop()
		if err != nil && !errors.Is(err, flag.ErrHelp) && !errors.Is(err, context.Canceled) {
			fmt.Fprintln(os.Stderr, "paduraksad:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup, usr2 := make(chan os.Signal, 1), make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	signal.Notify(usr2, syscall.SIGUSR2)
	err := run(ctx, os.Args[1:], options{stdout: os.Stdout, stderr: os.Stderr, reload: hup, upgrade: usr2, newUpgrader: tableflip.New,
		logger: slog.New(slog.NewTextHandler(os.Stderr, nil)).With("pid", os.Getpid())})
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "paduraksad:", err)
		os.Exit(1)
	}
}

// options are the parts of the environment a test replaces.
type options struct {
	stdout, stderr io.Writer
	// reload delivers SIGHUP.
	reload <-chan os.Signal
	// ready, when set, receives the plain HTTP address once serving
	// ("" when none); readyTLS the HTTPS one, before ready is called.
	ready    func(addr string)
	readyTLS func(addr string)
	// readyAdmin, when set, receives the admin API's address, before
	// ready is called.
	readyAdmin func(addr string)
	// logger overrides the default text logger on stderr.
	logger *slog.Logger
	// upgrade delivers SIGUSR2: hand the sockets to a new process.
	upgrade <-chan os.Signal
	// newUpgrader makes the process's one upgrader (tableflip.New); nil
	// means no hand-over: the sockets are bound (or taken from systemd)
	// and SIGUSR2 is refused.
	newUpgrader func(tableflip.Options) (*tableflip.Upgrader, error)
}
