// Package fleet lets many instances of a gateway act as one through
// etcd. It is a module of its own, so that etcd's client reaches only the
// programs that import it, never the library's core packages.
//
// # The document in etcd
//
// [Etcd] is the [source.Source] of a fleet: the gateway's document, YAML
// or JSON, is the value of the key PREFIX+"config" ([DefaultPrefix] is
// "/paduraksa/"), and its version is the key's mod revision, in decimal.
//
//	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://127.0.0.1:2379"}})
//	src, err := fleet.NewEtcd(fleet.EtcdConfig{Client: cli, Logger: log})
//	doc, err := src.Load(ctx)              // refuse to start without it
//	o, err := source.To(pub)(ctx, doc)     // o.Status: applied or refused
//	go src.Run(ctx, source.To(pub))        // every change, from the watch
//
// The client is the caller's: give it every member's URL, so that a
// cluster of three rides out the loss of one (the client moves to
// another member; the watch resumes there), and TLS
// (clientv3.Config.TLS: the CA, and a client certificate when etcd runs
// with --client-cert-auth) for https URLs.
//
// Load gets the key. Run watches it from the revision Load read on and
// publishes each new value with its mod revision as Version, logging each
// outcome as [source.File] does (a refusal with every problem; the
// previous document keeps serving). A deleted key, or a value larger
// than MaxBytes, is logged and publishes nothing.
//
// Save is one etcd transaction: put the pushed document at the key if the
// key's mod revision is still the push's IfVersion ([source.ErrStale]
// when it is not), returning the new mod revision. Every instance, the
// saving one included, then publishes the document from its watch. With
// the mod revision as the entity tag, an If-Match push is a
// compare-and-swap for the whole fleet: of two instances saving on the
// same revision, one wins and the other gets ErrStale (412).
//
// An Etcd records the outcome of each version it hands over (Run's, and
// Load's document once the wiring calls [Etcd.Record]): [Etcd.Outcome]
// waits for the outcome of a version Save returned, [Etcd.ServingVersion]
// is the version the instance serves, and Status carries it with the
// last refusal. That is what an admin API needs to make PUT /config a
// fleet-wide compare-and-swap answered with this instance's outcome
// (admin.Config.Store; an Etcd is an admin.Store).
//
// # Instances
//
// [Instance] keeps an instance's state at PREFIX+"instances/"+NAME, in
// JSON ([InstanceState]): its name, the version it serves with its own
// revision and when it applied it, its last refusal with every problem's
// code and path, when it started, and the reachability of etcd and the
// other engines it depends on. It is rewritten at each outcome, each
// change of etcd's reachability and, checked each third of LeaseTTL, of
// the other engines', under a lease of LeaseTTL ([DefaultLeaseTTL], 5 s)
// kept alive while Run runs: a stopped instance revokes it and leaves the
// list at once, a dead one leaves it when the lease ends. After an outage
// that outlived the lease, Run grants a new one and writes the state
// again. [Etcd.Instances] lists every instance's state, sorted by name
// (at most [MaxInstances]), as an admin API's GET /cluster answers it:
//
//	{"instances": [{"instance": "a", "version": "42", "revision": 3,
//	  "appliedAt": "...", "lastRefusal": {"version": "43", "revision": 4,
//	  "at": "...", "problems": [{"code": "document.field.unknown",
//	  "path": "hosts[0].bogus", "message": "unknown field \"bogus\""}, ...]},
//	  "started": "...", "engines": [{"name": "etcd", "reachable": true}]}]}
//
// # When etcd is away
//
// Run checks every ProbePeriod that etcd answers (a linearizable read of
// the key, within ProbeTimeout). When it does not, or the watch fails,
// the instance keeps serving the document it last applied, [Etcd.Status]
// says etcd is unreachable and why, OnReachable is called, and it is
// logged once; [Etcd.Instances] answers [ErrUnreachable] at once. Run
// then tries again every RetryPeriod; once etcd answers,
// it reads the key again, publishes it if it moved on meanwhile, and
// watches from there, so a change made during the outage is caught up
// whether or not the watch could have resumed.
//
// # Shared secrets
//
// [Secrets] keep the fleet's affinity key and TLS session ticket master
// secret at PREFIX+"secrets", in the secrets file's format (package
// secrets) with its two optional fields: the previous ticket secret and
// when the current one was made.
//
//	sec, err := fleet.NewSecrets(fleet.SecretsConfig{Client: cli, Instance: "a", Logger: log})
//	keys, err := sec.Load(ctx)                       // read, or created once
//	compiler := snapshot.Compiler{AffinityKey: keys.Affinity, TicketSecrets: sec.Tickets()}
//	go sec.Run(ctx)                                  // watch, campaign, rotate
//
// Load is one transaction: put fresh keys (or SecretsConfig.Seed, the
// keys of a secrets file) if the key was never created, read it
// otherwise. Of instances started at once one creates the secrets and
// every other reads them; none ever overwrites them. Secrets in etcd that
// are not of the format refuse the start with the secrets package's
// codes.
//
// Run watches the key and installs each new ticket secret with the one
// it replaced in [Secrets.Tickets] (tlsselect.TicketSecrets): every TLS
// table of the instance seals with the new secret from its next
// handshake and still opens tickets sealed with the previous one, so a
// session from before a rotation resumes on every instance. Run also
// campaigns in an etcd election (go.etcd.io/etcd/client/v3/concurrency)
// at PREFIX+"secrets-rotation/" with a lease of LeaseTTL (10 s by
// default): the elected instance rotates the ticket secret when
// RotationPeriod (24 h by default, [DefaultRotationPeriod]) has passed
// since the secrets' rotated time, in a transaction that holds only
// while it still leads and the key is the one it read. A leader that
// stops resigns; one that dies frees the election when its lease
// expires, and the next leader keeps the schedule, which is in etcd.
// [Secrets.Rotate] rotates at once, from any instance (a secret that
// leaked).
//
// Between a leader's write and the other instances' watch (milliseconds
// on a healthy cluster), an instance that has not yet installed the new
// secret cannot open a ticket sealed with it: that client does a full
// handshake once. The affinity key is never rotated: a new one would move
// every sticky client at once. An affinity key changed in etcd by hand
// is logged and taken at each instance's next start; a deleted key is
// logged and the installed secrets keep serving (to retire the secrets,
// delete the key and restart every instance). Nothing logged holds a
// secret: the logs name the key's revision and the rotated time.
//
// etcd then holds what whoever reads it needs to open every ticket
// sealed with these secrets (and with them the sessions' resumption
// secrets) and to forge affinity cookies: reach etcd over TLS, with
// client authentication, and give the gateway's instances a role of
// their own on the prefix that nobody else has.
//
// # Certificates across the fleet
//
// [Certs] keeps the ACME state of every instance in etcd, so the fleet
// orders each certificate once and any instance answers the CA's
// HTTP-01 request, wherever the balancer sends it. It is the
// tlsselect.ACMEStorage of each instance's manager, and its Challenges
// the manager's challenge store; Run publishes the shared tokens in the
// instance's own store, the one its plain-HTTP listener answers:
//
//	certs, err := fleet.NewCerts(fleet.CertsConfig{Client: cli, Challenges: gateStore, Logger: log})
//	go certs.Run(ctx)
//	m, err := tlsselect.NewACME(tlsselect.ACMEConfig{DirectoryURL: dir,
//		Storage: certs, Challenges: certs.Challenges(), OnReady: refresh})
//
// The keys, under PREFIX+"acme/":
//
//	data/<CA>/account.key              the account's key: one account for the fleet
//	data/<CA>/certificates/<ID>.pem    the certificate's key and chain
//	locks/<CA>/certificates/<ID>.pem/  the lock of an order (an etcd mutex)
//	locks/<CA>/account.key/            the lock of the account key's making
//	challenges/<token>                 an HTTP-01 key authorization
//
// A lock is a concurrency.Mutex on a lease of LockTTL (15 s) kept alive
// while it is held: an instance that dies while ordering frees it
// LockTTL later, and another instance takes over. The manager holding
// it looks at the stored certificate again before it orders (another
// instance may have stored it meanwhile), so only one orders; the
// others take the stored certificate when they get the lock, or as soon
// as the watch of data/<CA>/certificates/ tells of it, and call their
// OnReady: every instance serves it without a restart. Renewal is by
// whichever instance takes the lock first.
//
// A token is put under a lease of TokenTTL (10 minutes), so one left by
// an instance that died goes by itself; the manager's Delete revokes
// it at once. Set returns once the instance's own watch has had the
// token (when Run runs): the CA is told to validate only after etcd sent
// it to the watches, and every instance's Run publishes it in its store
// (and withdraws it with the key). A Set whose write fails is logged,
// and then only the ordering instance answers the token.
//
// # Concurrency
//
// An Etcd is safe for concurrent use: Load, Save, Reload and Status may
// be called from any goroutine, Run from one at a time, which leaves when
// its ctx is done. Secrets are safe for concurrent use likewise, with one
// Run at a time. So is a Certs; its Run and Watch leave when their ctx is
// done.
package fleet
