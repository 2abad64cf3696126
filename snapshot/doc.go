// Package snapshot serves the gateway's config document (package config's
// Document): the compiler that maps it onto the configs of the packages
// that own each setting and builds an immutable [Snapshot] from them, the
// [Store] that holds the current one behind one atomic pointer, and the
// single-writer [Publisher] with its history.
//
// # Where each rule lives
//
// Every setting belongs to the package whose behaviour it changes: balance
// (load balancing, affinity, slow start), health, proxy (forwarding,
// headers, rewrite, retries, the upstream client), gate (hosts, routes,
// policies, answers), tlsselect (certificates, the TLS edge). That package
// validates its own config, applies its defaults and exports the built-in
// names the document uses verbatim. The compiler maps the document onto
// those configs and puts the document's path in front of the problems
// they report, which keep their package's code
// ("health.passive.window.invalid" at "upstreams[2].health.passive.window").
// What is the document's own (its values, IDs, duplicates, references,
// which blocks go together) package config checks, part by part as the
// compile reaches each part (config.Checker); what only a compile can
// tell (a certificate's source, the files it reads, an HTTP version the
// destinations cannot be spoken to in) the compiler checks, with the
// codes of codes.go. [Validate] and [Compiler.Check] run the same compile
// without keeping anything.
//
// # One snapshot per request
//
// A Snapshot holds the gate (host table, routes, answers) and, for every
// route, its target built in the same compile: the cluster, its transport,
// its policies. [Store.ServeHTTP] loads the current snapshot once and lets
// its gate decide, so a request is routed and forwarded entirely by the
// generation it started on, even when another is published mid-request.
//
// # Publishing
//
// The [Publisher] is the only writer. For each revision it computes the
// canonical form (a document equal to the current one ends there, as
// Unchanged), compiles (which validates), reconciles runtime state, and
// swaps the pointer. Runtime state — health verdicts, in-flight counts, pooled
// connections — belongs to (cluster ID, destination ID) in an
// [upstream.Registry] and, for transports, to the cluster ID in the
// [Compiler], so it survives every publish that keeps it. A compile
// prepares that state without showing it; it becomes visible just before
// the swap, so a refused document leaves nothing behind and the old
// snapshot keeps serving.
//
// # What to call
//
// Serve a [Store] and change what it serves with a [Publisher]: Publish,
// PublishData or Apply a document, and wait for its [Outcome]; Prepare
// then PublishPrepared to read a document's files before taking a lock
// of one's own. Validate a
// document without serving it with [Validate], or with [Compiler.Check]
// when the compiler has registered policies, a health monitor or a
// country lookup. There is no exported compile step: a snapshot only
// serves once the publisher has made its runtime state visible, so every
// *Snapshot a user holds ([Store.Load], [PublisherConfig.OnApplied]) is
// one that serves or served.
//
// A publish costs little more than what changed: the canonical form
// (config.Form) records the bytes of every host and upstream, and a host
// or upstream whose bytes (and the blocks it depends on: the global block,
// the policy blocks, its clusters) equal the applied snapshot's is reused
// as compiled, policy instances and hash tables included, without being
// checked again. The canonical form itself takes the bytes of every host
// and upstream equal to the applied form's copy of it from that form
// ([config.CanonicalFormSince]), and a publish that keeps every upstream
// of the applied snapshot, and no other, keeps its clusters: the
// registry and the transports are not planned again.
//
// Revisions published while another is being processed coalesce: only the
// latest is processed, and each one it replaced gets the outcome
// Superseded. Every revision gets an [Outcome] its caller can wait for
// ([Revision.Wait]) and listeners can observe ([PublisherConfig.OnOutcome]).
// A publish of the serving document is Unchanged and takes no revision
// number of its own: its outcome names the serving revision, so the
// numbers outcomes carry are those of changes (applied, refused, stale,
// superseded), and the one any outcome names can condition the next
// publish ([Publisher.PublishDataIf]).
//
// The publisher keeps the latest outcomes ([Publisher.History], 16 by
// default): each with its time, problems, duration, document bytes and,
// for an applied revision, its snapshot, so a simulation can run against
// any of the last applied ones. [Publisher.Current] is the revision
// serving now, [Publisher.Stats] the counters a metrics collector reads.
// [Publisher.PublishDataIf] publishes on condition that a given revision
// is serving, checked by the single writer: a compare-and-swap for an
// admin API's If-Match, whose loser gets the outcome [Stale].
//
// # Validation codes
//
// Every problem is a [*ValidationError] (the library's one problem type)
// with a stable Code and a Path in JSON names, such as
// "route.upstream.unknown" at "hosts[2].routes[0].upstream". The
// document's codes are listed in config/codes.go, the compile's in
// codes.go, the owners' in their packages. A refusal lists every problem
// at once: [Publisher.PublishData] compiles what decoded even when some
// fields did not, so an unknown field and four bad values come back
// together.
//
// Nothing accepted is ignored: a setting that cannot take effect is
// refused or warned about with a code. ACME certificates need
// [Compiler.ACME] and certificates without files a source of
// [Compiler.Certificates]; country rules need [Compiler.Countries]; a destination's
// health address must share its scheme; HTTP/2 to http:// destinations
// needs versionPolicy exact; request headers, compression and
// keepUnderscoreHeaders need a proxy host; stripPrefix needs a prefix or
// exact path, and a rewrite template only the values its route's path
// template captures. Health blocks take effect
// through the publisher's health monitor (see [Publisher]).
//
// # TLS
//
// The document's certificates, hosts' certificate and tls blocks and
// global.tls compile into a tlsselect table, one per snapshot, served by
// [Store.TLS] to TCP and QUIC handshakes; the gate re-checks each request
// against its host's policy (421), the client certificate included:
// clientAuth and the roots of clientCAs map onto both, so a request is
// checked against its own host's roots whatever name its connection's
// handshake was for. A host served over plain HTTP only (no certificate
// and no global.tls.defaultCertificate) takes no tls block
// (host.tls.unused). Certificate files are read when a
// document compiles and again by any publish after they changed on disk
// (device, inode, size or modification time), with an unchanged document
// too; a table of file certificates only is reused while nothing
// changed. Certificates from a source (ACME, or the embedder's) are asked
// each publish; [Publisher.RefreshTLS] rebuilds the table when a source
// has something new. A host whose client CA roots changed is compiled
// again, so open connections are re-checked against the new roots too.
//
// # Files
//
// The files a document names (certificates' certFile and keyFile, hosts'
// tls.clientCAs) are read by the goroutine that publishes, checks or
// drafts it, before the revision is queued ([Publisher.Prepare]), never
// by the publisher's: a file that takes long holds up its own publish
// and no other. They are read under tlsselect's rules: a regular file
// after symlinks (a device, a FIFO, a directory or a socket is refused
// from its stat, never opened for a read), at most
// tlsselect.MaxFileSize bytes each, and all of one document within
// [Compiler.FileTimeout]; a refusal carries the rule's code at the
// field's path ("file.notRegular" at "hosts[2].tls.clientCAs";
// file.tooLarge, file.timeout, file.busy). A file whose stat has not
// changed since the serving snapshot read it is not read again, nor are
// its client CAs parsed again.
package snapshot
