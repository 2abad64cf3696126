package main

// The daemon's listening sockets and its binary upgrade.
//
// Every listening socket is named (http, https, http3, admin) and comes
// from the first of: the process this one replaces (tableflip passes its
// sockets as inherited files), systemd's socket activation (LISTEN_FDS,
// LISTEN_PID, LISTEN_FDNAMES), or a bind. On SIGUSR2 the daemon starts
// its own binary again with the same arguments and its sockets; once the
// new process serves (edge started, first config applied, admin API up)
// it says so, and this one closes its HTTP/3 side, stops accepting,
// drains for -upgrade-grace and exits. A new process that exits or is not
// ready within -upgrade-timeout is logged and this one goes on serving,
// upgradable again.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cloudflare/tableflip"

	"github.com/paduraksa/paduraksa/edge"
)

// Names of the daemon's sockets, as LISTEN_FDNAMES (systemd's
// FileDescriptorName=) gives them.
const (
	socketHTTP  = "http"
	socketHTTPS = "https"
	socketHTTP3 = "http3"
	socketAdmin = "admin"
)

// sockets gives the daemon its listening sockets.
type sockets struct {
	upg       *tableflip.Upgrader // nil: no hand-over in this process
	activated []*activated        // from systemd, until taken
	log       *slog.Logger
}

// activated is one socket systemd passed.
type activated struct {
	name string // its FileDescriptorName, "" when unnamed
	ln   net.Listener
	pc   net.PacketConn
}

func (s *activated) addr() net.Addr {
	if s.ln != nil {
		return s.ln.Addr()
	}
	return s.pc.LocalAddr()
}

// key is what a socket is passed on under: its name and the address the
// flags ask, so that a new process whose flags name another address binds
// that one instead.
func key(name, addr string) string { return name + " " + addr }

// listen returns the TCP listener called name for addr.
func (s *sockets) listen(name, addr string) (net.Listener, error) {
	k := key(name, addr)
	if s.upg != nil {
		ln, err := s.upg.Fds.Listener("tcp", k)
		if err != nil || ln != nil {
			if ln != nil {
				s.log.Info("socket inherited", "socket", name, "addr", ln.Addr())
			}
			return ln, err
		}
	}
	c, err := s.takeActivated(name, addr, false)
	if err != nil {
		return nil, err
	}
	ln, _ := c.(net.Listener)
	if ln == nil {
		if ln, err = net.Listen("tcp", addr); err != nil {
			return nil, err
		}
	}
	if s.upg != nil {
		if err := s.upg.Fds.AddListener("tcp", k, ln.(tableflip.Listener)); err != nil {
			ln.Close()
			return nil, fmt.Errorf("%s: passing it on: %w", name, err)
		}
	}
	return ln, nil
}

// listenPacket returns the UDP socket called name for addr; flagAddr is
// the address the flags ask (addr is where it binds: the HTTPS
// listener's, whose port may have been 0).
func (s *sockets) listenPacket(name, flagAddr, addr string) (net.PacketConn, error) {
	k := key(name, flagAddr)
	if s.upg != nil {
		pc, err := s.upg.Fds.PacketConn("udp", k)
		if err != nil || pc != nil {
			if pc != nil {
				s.log.Info("socket inherited", "socket", name, "addr", pc.LocalAddr())
			}
			return pc, err
		}
	}
	a, err := s.takeActivated(name, flagAddr, true)
	if err != nil {
		return nil, err
	}
	pc, _ := a.(net.PacketConn)
	if pc == nil {
		if pc, err = net.ListenPacket("udp", addr); err != nil {
			return nil, err
		}
	}
	if s.upg != nil {
		if err := s.upg.Fds.AddPacketConn("udp", k, pc.(tableflip.PacketConn)); err != nil {
			pc.Close()
			return nil, fmt.Errorf("%s: passing it on: %w", name, err)
		}
	}
	return pc, nil
}

// takeActivated returns the systemd socket of the kind asked (packet:
// UDP) called name, or else an unnamed one bound to addr; nil when there
// is none. A UDP socket named https serves HTTP/3, so that one socket
// unit can listen on both transports of the HTTPS port (systemd gives
// every socket of a unit the same name).
func (s *sockets) takeActivated(name, addr string, packet bool) (interface{ Close() error }, error) {
	for i, a := range s.activated {
		named := a.name == name || packet && name == socketHTTP3 && a.name == socketHTTPS
		if (a.pc != nil) != packet || !named && (a.name != "" || !sameAddr(a.addr(), addr)) {
			continue
		}
		s.activated = append(s.activated[:i], s.activated[i+1:]...)
		s.log.Info("socket from systemd", "socket", name, "addr", a.addr())
		if packet {
			return a.pc, nil
		}
		return a.ln, nil
	}
	return nil, nil
}

// sameAddr reports whether a is the address flag names.
func sameAddr(a net.Addr, flag string) bool {
	host, port, err := net.SplitHostPort(flag)
	if err != nil {
		return false
	}
	var ip net.IP
	var p int
	switch at := a.(type) {
	case *net.TCPAddr:
		ip, p = at.IP, at.Port
	case *net.UDPAddr:
		ip, p = at.IP, at.Port
	default:
		return false
	}
	if strconv.Itoa(p) != port {
		return false
	}
	want := net.ParseIP(host)
	if host == "" || host == "0.0.0.0" || host == "::" {
		return ip.IsUnspecified()
	}
	return want != nil && want.Equal(ip)
}

// closeUnused closes the systemd sockets no listener took, saying so.
func (s *sockets) closeUnused() {
	for _, a := range s.activated {
		s.log.Warn("socket from systemd not used: name it http, https, http3 or admin (FileDescriptorName=), or bind it to a flag's address; a flag asks for each listener", "name", a.name, "addr", a.addr())
		if a.ln != nil {
			a.ln.Close()
		} else {
			a.pc.Close()
		}
	}
	s.activated = nil
}

// systemdSockets returns the sockets systemd's socket activation passed
// this process, and takes the variables out of the environment so that
// no process started after reads them.
func systemdSockets() ([]*activated, error) {
	pid, n, names := os.Getenv("LISTEN_PID"), os.Getenv("LISTEN_FDS"), os.Getenv("LISTEN_FDNAMES")
	if n == "" {
		return nil, nil
	}
	for _, v := range []string{"LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"} {
		os.Unsetenv(v)
	}
	if pid != strconv.Itoa(os.Getpid()) {
		return nil, nil // for another process
	}
	count, err := strconv.Atoi(n)
	if err != nil || count < 0 {
		return nil, fmt.Errorf("LISTEN_FDS=%q: not a number of sockets", n)
	}
	var nameOf []string
	if names != "" {
		nameOf = strings.Split(names, ":")
	}
	var out []*activated
	for i := range count {
		fd := 3 + i // SD_LISTEN_FDS_START
		syscall.CloseOnExec(fd)
		a := &activated{}
		if i < len(nameOf) && nameOf[i] != "unknown" {
			a.name = nameOf[i]
		}
		typ, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_TYPE)
		if err != nil {
			return out, fmt.Errorf("LISTEN_FDS: descriptor %d: %w", fd, err)
		}
		f := os.NewFile(uintptr(fd), "systemd:"+a.name)
		if typ == syscall.SOCK_DGRAM {
			a.pc, err = net.FilePacketConn(f)
		} else {
			a.ln, err = net.FileListener(f)
		}
		f.Close()
		if err != nil {
			return out, fmt.Errorf("LISTEN_FDS: descriptor %d: %w", fd, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// startSockets makes the daemon's socket source: the upgrader when the
// process can be upgraded, and systemd's sockets.
func (a *app) startSockets(context.Context) error {
	a.sk = &sockets{log: a.log}
	act, err := systemdSockets()
	a.sk.activated = act
	a.deferClose(a.sk.closeUnused)
	if err != nil {
		return err
	}
	if a.opt.newUpgrader == nil {
		return nil
	}
	upg, err := a.opt.newUpgrader(tableflip.Options{PIDFile: a.f.pidFile, UpgradeTimeout: a.f.upgradeTimeout})
	if err != nil {
		if errors.Is(err, tableflip.ErrNotSupported) {
			a.log.Warn("binary upgrades are not supported here", "err", err)
			return nil
		}
		return fmt.Errorf("upgrade: %w", err)
	}
	a.sk.upg = upg
	a.deferClose(upg.Stop)
	return nil
}

// ready tells the process this one replaces that it serves, and writes
// the -pid-file.
func (a *app) ready() error {
	if a.sk.upg == nil {
		return nil
	}
	if err := a.sk.upg.Ready(); err != nil {
		return fmt.Errorf("upgrade: %w", err)
	}
	a.log.Info("ready for upgrades", "upgraded", a.sk.upg.HasParent(), "signal", "SIGUSR2")
	return nil
}

// exit is closed once a new process took over; nil without upgrades.
func (a *app) exit() <-chan struct{} {
	if a.sk.upg == nil {
		return nil
	}
	return a.sk.upg.Exit()
}

// upgrade starts the new process in the background; its outcome is
// logged. The goroutine ends with the attempt, within -upgrade-timeout.
func (a *app) upgrade() {
	if a.sk.upg == nil {
		a.log.Warn("upgrade asked for, but this process cannot hand its sockets over")
		return
	}
	a.log.Info("upgrade: starting the new process", "timeout", a.f.upgradeTimeout)
	go func() {
		if err := a.sk.upg.Upgrade(); err != nil {
			a.log.Error("upgrade failed; this process keeps serving", "err", err)
			return
		}
		a.log.Info("upgrade: the new process serves")
	}()
}

// handOver is the end of a process that was replaced: its HTTP/3 side
// closes at once (see edge.Server.CloseHTTP3), the admin API and the TCP
// listeners stop accepting (edge.Server.Drain: keep-alive connections get
// Connection: close on their next answer), and requests, streams and upgrades in flight
// have -upgrade-grace to finish; SIGINT or SIGTERM (ctx) ends the drain
// at once.
func (a *app) handOver(ctx context.Context) error {
	a.log.Info("handed over; draining", "grace", a.f.upgradeGrace, "inFlight", a.srv.InFlight())
	start := time.Now()
	a.srv.CloseHTTP3()
	a.adm.close()
	ctx, cancel := context.WithTimeout(ctx, a.f.upgradeGrace)
	defer cancel()
	// Each idle keep-alive connection's next request is answered with
	// Connection: close (the new process takes the client's next
	// connection), for up to a second: past it, Shutdown closes the
	// connections that stayed idle.
	err := a.srv.Drain(ctx, min(time.Second, a.f.upgradeGrace))
	a.pub.Flush()
	if err != nil {
		a.log.Warn("drain cut short by -upgrade-grace", "err", err)
	}
	a.log.Info("drained; exiting", "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// edgeSockets gives ec the sockets the flags ask for: HTTPS over TCP,
// and HTTP/3 over UDP on the same port.
func (a *app) edgeSockets(ec *edge.Config) error {
	var err error
	if a.f.listen != "" {
		if ec.HTTPListener, err = a.sk.listen(socketHTTP, a.f.listen); err != nil {
			return fmt.Errorf("-http: %w", err)
		}
	}
	if a.f.https == "" {
		return nil
	}
	if ec.HTTPSListener, err = a.sk.listen(socketHTTPS, a.f.https); err != nil {
		closeSockets(ec)
		return fmt.Errorf("-https: %w", err)
	}
	if ec.HTTP3Conn, err = a.sk.listenPacket(socketHTTP3, a.f.https, ec.HTTPSListener.Addr().String()); err != nil {
		closeSockets(ec)
		return fmt.Errorf("-https: HTTP/3 on UDP: %w", err)
	}
	return nil
}

// closeSockets closes the sockets of an edge that did not start.
func closeSockets(ec *edge.Config) {
	for _, c := range []interface{ Close() error }{ec.HTTPListener, ec.HTTPSListener, ec.HTTP3Conn} {
		if c != nil {
			c.Close()
		}
	}
}
