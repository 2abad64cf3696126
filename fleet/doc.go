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
// again. [Etcd.Instances] lists every instance's state, sorted by name,
// as an admin API's GET /cluster answers it:
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
// # Concurrency
//
// An Etcd is safe for concurrent use: Load, Save, Reload and Status may
// be called from any goroutine, Run from one at a time, which leaves when
// its ctx is done.
package fleet
