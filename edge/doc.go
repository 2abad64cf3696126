// Package edge assembles a gateway's listeners: the whole connection stage
// in front of one http.Handler (usually a [snapshot.Store]), for TCP and
// for QUIC, with one graceful shutdown. It is what the reference daemon
// serves through, so an embedder gets the same edge in a few lines:
//
//	srv, err := edge.Start(edge.Config{
//		Handler: store,
//		HTTP:    ":80",
//		HTTPS:   ":443",
//		TLS:     selector.TLSConfig(),  // a tlsselect.Selector
//		QUICTLS: selector.QUICConfig(),
//		HTTP3:   true,
//	})
//	...
//	srv.Shutdown(ctx)
//
// Each listener is an address that Start binds, or a socket the embedder
// bound (Config.HTTPListener, HTTPSListener, HTTP3Conn): the sockets a
// binary upgrade hands to the new process, those systemd's socket
// activation passes as file descriptors, or any net.Listener and
// net.PacketConn (the simulator's in-memory ones). Both go through the
// one stack below; only where the socket came from differs.
//
// TCP, plain and TLS alike:
//
//	accept -> proxyproto.Listener   (when Config.ProxyProtocol names load balancers)
//	       -> connlimit.Listener    deny list, per-address cap
//	       -> listenlimits.Listener connection cap, TLS handshake deadline, framing guard;
//	                                on plain HTTP, idle keep-alive connections parked
//	                                after Limits.IdleRelease (TLS ones cannot be)
//	       -> crypto/tls            the config GetConfigForClient picks by SNI
//	       -> net/http              HTTP/1.1 and HTTP/2 with listenlimits' timeouts,
//	                                header and stream limits; the minimum data rates
//	-> handler, with gate.ConnContext recording each connection's peer once
//	   (again when a parked connection comes back).
//
// A TLS handshake that fails is counted ([Stats]) and told to
// Config.OnHandshakeFailure with the client and crypto/tls's reason (read
// off the line net/http's server logs for it).
//
// UDP on the HTTPS port with HTTP3 on, or on Config.HTTP3Conn:
//
//	quic.Transport   ConnContext: connlimit refuses a denied or capped source
//	                 before any crypto (CONNECTION_REFUSED)
//	-> TLS 1.3       the same GetConfigForClient; quic-go clones what it
//	                 returns and sets h3
//	-> http3.Server  ConnContext: connlimit counts the connection once its
//	                 handshake completed (refused ones are closed with
//	                 H3_EXCESSIVE_LOAD); gate.ConnInfo with HTTP3 set
//	-> the same handler.
//
// The package imports the connection-stage leaves (proxyproto, connlimit,
// listenlimits), gate for its ConnInfo, and quic-go: it is the one place
// that knows them all, which keeps each leaf usable alone (the design's
// layering puts no leaf above another).
//
// Alt-Svc is the gate's (per host, with the public port from config):
// nothing here advertises HTTP/3. A PROXY header is read on TCP only.
//
// The simulator (package simulate) runs this same Start over an
// in-memory connection, with connlimit in its dry-run mode (it decides,
// and counts nothing) and a TLS config of its own over the same table, so
// what it reports cannot drift from what this stack does.
//
// A Server is safe for concurrent use. Start binds every address before it
// returns, so a bind failure is Start's error, and a failed Start closes
// what it bound and leaves the embedder's sockets open. The sockets of a
// running Server are its own: Shutdown stops accepting on all of them,
// lets requests in flight finish until its context ends, upgrades
// (WebSockets, tunnels) included until their tunnel ends, and then closes
// what is left; Close closes everything at once. Idle HTTP/1.x and
// HTTP/3 connections end at once. An HTTP/2 connection gets a GOAWAY and
// ends when its client closes it or a second later (the HTTP/2 server's
// wait): a connection idle an instant before Shutdown may carry a request
// already on its way, which the GOAWAY answers and ending it early would
// cut (TestShutdownUnderHTTP2LoadLosesNoRequest).
//
// # Hand-over
//
// In a binary upgrade the new process starts a Server on duplicates of
// the old one's sockets (os.File and net.FileListener, net.FilePacketConn;
// the reference daemon passes them with tableflip), and once it serves,
// the old one calls [Server.CloseHTTP3] and then [Server.Drain], which
// stops accepting and answers each keep-alive connection's next request
// with Connection: close before it shuts down (Shutdown alone closes idle
// connections under clients that may be sending on them: wrk counted 11
// read errors in 190 000 requests over one upgrade, and none with Drain,
// in six runs of about 230 000). Both accept on
// the same TCP sockets for a moment, which costs nothing: a connection is
// whole in the process that accepted it, and the backlog belongs to the
// socket, not to a process. UDP is different: a QUIC connection lives in
// one process, but each datagram of the shared socket reaches whichever
// process reads it, so the old process drops its QUIC side at once
// (every connection gets a CONNECTION_CLOSE and its client reconnects,
// to the new process) instead of draining it; HTTP/3 requests in flight
// at that instant are lost, TCP ones are not.
package edge
