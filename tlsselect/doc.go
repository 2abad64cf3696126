// Package tlsselect chooses the TLS configuration of each handshake by its
// server name (SNI), for TLS over TCP and for QUIC alike.
//
// A [Table] maps names to prebuilt [crypto/tls.Config] values, one per
// certificate, host TLS [Policy] and [Transport], built once by [New] from
// a [Config] and never modified after (but for session ticket keys, see
// below). A [Selector] holds the current Table in one atomic pointer and
// serves it from GetConfigForClient: [Selector.TLSConfig] is the base
// config of a TCP listener (tls.NewListener, http.Server.TLSConfig) and
// [Selector.QUICConfig] that of a QUIC listener (quic-go's
// Transport.ListenEarly, then http3.Server.ServeListener). Publishing a
// new configuration is New then [Selector.Swap]; with the Table it
// replaces as [Config.Previous], New loads no certificate whose files did
// not change and works out no host's coverage again.
//
// # Names
//
// Hosts name exact names and single-label wildcards ("*.example.com"
// matches "a.example.com", not "example.com" nor "a.b.example.com"); an
// exact name wins over a wildcard. Names are compared without regard to
// ASCII case, with one trailing dot ignored; Unicode names in a Config are
// served as their punycode, which is what clients send. A handshake
// without a server name (a client that dialled an IP address) follows
// Config.NoSNI, one whose name matches no host Config.UnknownSNI: the
// default certificate, or a refusal. The request gate's catch-all host
// ("*", every name no other host has) takes exactly those handshakes: a
// Host may list "*", which adds no name to the table, and then names no
// certificate of its own and asks for no client certificate. A refusal
// returns a config without
// certificates, on which crypto/tls ends the handshake with the TLS alert
// unrecognized_name (112; QUIC's CRYPTO_ERROR 0x170), and is counted by
// reason in [Selector.Stats].
//
// # Policies and transports
//
// Each prebuilt config sets its ALPN list explicitly: "h2" and "http/1.1",
// or "http/1.1" alone for [Policy.HTTP1Only], on TCP; "h3" alone on QUIC.
// TCP and QUIC never share a config. A QUIC handshake is served only for a
// host with [Policy.HTTP3] (for the fallbacks: Config.DefaultTLS.HTTP3);
// for any other it is refused like an unknown name. The minimum TLS
// version and client certificates (required or optional, verified against
// the policy's CAs with crypto/x509, which fetches nothing: no AIA, CRL or
// OCSP) are per policy. The handshake only sees the name it was made for,
// and clients reuse a connection for every name its certificate covers,
// so the request gate re-checks the host's policy per request (421
// Misdirected Request), the client certificate included: a request for a
// host with client CAs is served only when the connection presented no
// certificate and the host does not require one, or when one of its
// verified chains ends in one of that host's own roots, whatever pool the
// handshake verified it against. The snapshot package maps a document's
// policy onto both (gate.TLSPolicy's ClientCAs and RequireClientCert);
// a resumed session carries the chains it was verified with.
//
// # Session tickets
//
// Every prebuilt config has session ticket keys of its own, derived with
// HKDF-SHA256 from Config.TicketSecret, the config's identity (transport,
// certificate, policy) and the number of the current key period
// (Config.TicketKeyPeriod): a ticket opens only on a config of the same
// identity, so a ticket one host issued never resumes a session on a host
// of another certificate or policy. Hosts of the same certificate and
// policy share a config, and with it tickets, as they share connections.
// Keys rotate lazily: a handshake that selects a config whose keys are of
// an earlier period installs the current key (which seals) and the one of
// the period before (which also opens), so a ticket resumes for at least
// one period and at most two. Tables and instances with the same secret
// derive the same keys, so tickets survive publishes and work across a
// fleet.
//
// A fleet that rotates the master secret itself gives the Tables one
// [TicketSecrets] (Config.TicketSecrets) in place of TicketSecret: the
// current secret and the previous one. [TicketSecrets.Set] installs a
// new pair in every Table built with it, on each config's next handshake:
// the current secret's keys seal and open, the previous secret's keys of
// the same two periods only open, so a ticket sealed before a rotation
// resumes after it, and one sealed two rotations before does not.
//
// # Certificates
//
// A [Certificate] comes from PEM files (chain and key) or from a
// [Source]: the embedder's own store, an ACME client. New loads every
// certificate and refuses, with a stable code and the path of the field,
// a file missing or unreadable, a key that does not match, a certificate
// not yet valid or expired; a certificate that ends within
// [ExpiryWarning] is served and reported by [Table.Warnings]. A file
// replaced on disk is read by the next New: publishing that Table serves
// it to new handshakes, and open connections are untouched.
//
// Files are read under one set of rules (see [MaxFileSize]): a regular
// file after symlinks, at most MaxFileSize bytes, every file of one New
// within [FileTimeout] on a goroutine of its own; a device, a FIFO, a
// directory or a socket is refused from its stat without being opened
// for a read ([CodeFileNotRegular]), a larger file without reading more
// than the cap ([CodeFileTooLarge]), a read that hangs at the deadline
// ([CodeFileTimeout]). [Config.ReadFile] gives New contents read ahead
// instead, so that a caller's goroutine, not New's, waits on the disk.
//
// A Source that has no certificate yet returns [ErrPending]: New does not
// refuse the Config for it but warns, and the hosts that use it get the
// default certificate under their own policy (or the refusal
// Config.UnknownSNI asks for) with [ReasonPending] until a later Table
// has the certificate. So a certificate that takes seconds to obtain
// never blocks or fails a publish.
//
// # ACME
//
// [ACME] is a Source that obtains and renews certificates from an ACME
// (RFC 8555) CA such as Let's Encrypt, with golang.org/x/crypto/acme,
// proving each name over HTTP-01 through a [ChallengeStore]: the
// *gate.ChallengeStore that the gate serves on plain HTTP before it looks
// up the host. The wiring: NewACME with the store and an OnReady that
// builds and swaps in a new Table; the manager as the Source of the
// certificates it should manage; Start. The first Table serves those
// hosts the default certificate ([ErrPending]); OnReady's Table serves
// the certificate, which is cached on disk so a restart serves it at
// once and orders nothing. Renewal and retries are the manager's own;
// see [ACME].
//
// The account key and the certificates live in an [ACMEStorage]: by
// default the directory ACMEConfig.CacheDir ([ACMEDir]). Instances that
// share one (the fleet module's etcd storage, whose locks are leases
// and which is an [ACMEWatcher]) share one account and order each
// certificate once: a manager orders holding the certificate's lock,
// after looking at the stored certificate again, and a manager that did
// not order takes the stored one and calls OnReady, so every instance
// serves it without a restart. Renewal is by whichever instance takes
// the lock first. The HTTP-01 tokens then have to reach every instance,
// as the CA's request lands on any of them: the fleet's challenge store
// shares them.
//
// # Concurrency
//
// A Table and a Selector are safe for concurrent use. A handshake reads
// the Selector's Table once; Select and GetConfigForClient allocate
// nothing. A Source is called only from New. The package starts no
// goroutines but for [ACME.Start]'s scheduler and order workers (and the
// watch of an [ACMEWatcher] storage), which [ACME.Close] ends (a handshake never reaches them), and the one on
// which New and NewACME read their files, which ends with the read (with
// a read that hangs, when the kernel returns).
package tlsselect
